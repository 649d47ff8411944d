with

source as (

    select * from {{ source('lakeapply_apply', 'progress') }}

),

renamed as (

    select
        apply_name,
        source_database,
        cycle_id,
        low_watermark,
        low_watermark_time,
        high_watermark,
        high_watermark_time,
        oldest_scn,
        oldest_transaction_id,
        spill_scn,
        apply_time,
        total_received,
        total_applied,
        total_ignored,
        total_rolled_back,
        total_errors,
        status,
        table_versions

    from source

)

select * from renamed
