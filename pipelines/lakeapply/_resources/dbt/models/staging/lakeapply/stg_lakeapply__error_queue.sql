with

source as (

    select * from {{ source('lakeapply_apply', 'error_queue') }}

),

renamed as (

    select
        apply_name,
        queue_name,
        local_transaction_id,
        source_database,
        source_transaction_id,
        source_commit_scn,
        message_number,
        error_number,
        error_message,
        recipient_id,
        recipient_name,
        message_count,
        error_creation_time,
        cycle_id

    from source

)

select * from renamed
