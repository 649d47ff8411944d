with

source as (

    select * from {{ source('lakeapply_apply', 'transactions') }}

),

renamed as (

    select
        apply_name,
        source_database,
        transaction_id,
        commit_scn,
        first_scn,
        commit_time,
        outcome,
        message_count,
        cycle_id,
        applied_at

    from source

)

select * from renamed
