-- DBA_APPLY_ERROR_MESSAGES: every message (LCR) of every error transaction.
with

error_messages as (

    select * from {{ ref('stg_lakeapply__error_messages') }}

),

error_queue as (

    select * from {{ ref('stg_lakeapply__error_queue') }}

),

destination_tables as (

    -- dropped ones included: a row LCR for a dropped table (ORA-00942) still names its table
    select * from {{ ref('int_destination_tables') }}

),

final as (

    select
        error_messages.apply_name as APPLY_NAME,
        upper(
            md5(
                concat_ws(
                    '/',
                    error_messages.apply_name,
                    error_messages.local_transaction_id,
                    cast(error_messages.message_number as string)
                )
            )
        ) as MESSAGE_ID,
        error_messages.local_transaction_id as LOCAL_TRANSACTION_ID,
        error_messages.message_number as TRANSACTION_MESSAGE_NUMBER,
        case
            when error_messages.message_number = error_queue.message_number
                then error_queue.error_number
        end as ERROR_NUMBER,
        case
            when error_messages.message_number = error_queue.message_number
                then error_queue.error_message
        end as ERROR_MESSAGE,
        error_messages.object_owner as SOURCE_OBJECT_OWNER,
        error_messages.object_name as SOURCE_OBJECT_NAME,
        case
            when destination_tables.silver_table is not null
                then {{ lakeapply_string_literal(lakeapply_schema("silver")) }}
        end as OBJECT_OWNER,
        destination_tables.silver_table as OBJECT_NAME,
        error_messages.position as POSITION,
        error_messages.command_type as OPERATION,
        error_messages.raw_lcr as MESSAGE

    from error_messages
    left join error_queue
        on
            error_messages.apply_name = error_queue.apply_name
            and error_messages.local_transaction_id = error_queue.local_transaction_id
    left join destination_tables
        on
            error_messages.apply_name = destination_tables.apply_name
            and error_messages.source_database = destination_tables.source_database
            and error_messages.object_owner = destination_tables.object_owner
            and error_messages.object_name = destination_tables.object_name

)

select * from final
