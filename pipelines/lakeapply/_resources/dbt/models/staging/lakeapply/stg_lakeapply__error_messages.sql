with

source as (

    select * from {{ source('lakeapply_apply', 'error_messages') }}

),

renamed as (

    select
        apply_name,
        local_transaction_id,
        message_number,
        source_database_name as source_database,
        transaction_id,
        command_type,
        lcr_kind,
        scn,
        position,
        source_time,
        object_owner,
        object_name,
        old_values,
        new_values,
        raw_lcr

    from source

)

select * from renamed
