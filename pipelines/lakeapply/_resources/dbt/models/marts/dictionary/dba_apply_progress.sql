-- DBA_APPLY_PROGRESS: how far each apply process has applied the changes of each source database.
with

watermarks as (

    select * from {{ ref('int_apply_watermarks') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        low_watermark as APPLIED_MESSAGE_NUMBER,
        low_watermark_time as APPLIED_MESSAGE_CREATE_TIME,
        low_watermark_apply_time as APPLY_TIME,
        oldest_scn as OLDEST_MESSAGE_NUMBER,
        oldest_transaction_id as OLDEST_TRANSACTION_ID,
        spill_scn as SPILL_MESSAGE_NUMBER

    from watermarks

)

select * from final
