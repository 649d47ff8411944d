-- DBA_APPLY_ERROR: the error queue, one row per error transaction.
with

error_queue as (

    select * from {{ ref('stg_lakeapply__error_queue') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        queue_name as QUEUE_NAME,
        local_transaction_id as LOCAL_TRANSACTION_ID,
        source_database as SOURCE_DATABASE,
        source_transaction_id as SOURCE_TRANSACTION_ID,
        source_commit_scn as SOURCE_COMMIT_SCN,
        message_number as MESSAGE_NUMBER,
        error_number as ERROR_NUMBER,
        error_message as ERROR_MESSAGE,
        recipient_id as RECIPIENT_ID,
        recipient_name as RECIPIENT_NAME,
        message_count as MESSAGE_COUNT,
        error_creation_time as ERROR_CREATION_TIME

    from error_queue

)

select * from final
