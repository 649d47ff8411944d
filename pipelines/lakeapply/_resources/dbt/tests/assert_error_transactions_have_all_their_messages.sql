-- Every error transaction has exactly message_count messages, numbered 1..message_count, its
-- failing message_number is one of them, and no message lacks its error transaction.
-- One row per violating error transaction.
with

error_queue as (

    select * from {{ ref('stg_lakeapply__error_queue') }}

),

error_messages as (

    select * from {{ ref('stg_lakeapply__error_messages') }}

),

message_counts as (

    select
        apply_name,
        local_transaction_id,
        count(*) as messages,
        count(distinct message_number) as distinct_message_numbers,
        min(message_number) as first_message_number,
        max(message_number) as last_message_number

    from error_messages
    group by apply_name, local_transaction_id

),

final as (

    select
        coalesce(error_queue.apply_name, message_counts.apply_name) as apply_name,
        coalesce(
            error_queue.local_transaction_id, message_counts.local_transaction_id
        ) as local_transaction_id,
        error_queue.message_count,
        error_queue.message_number as failing_message_number,
        message_counts.messages,
        message_counts.distinct_message_numbers,
        message_counts.first_message_number,
        message_counts.last_message_number

    from error_queue
    full outer join message_counts
        on
            error_queue.apply_name = message_counts.apply_name
            and error_queue.local_transaction_id = message_counts.local_transaction_id

    where
        error_queue.local_transaction_id is null
        or message_counts.local_transaction_id is null
        or message_counts.messages != error_queue.message_count
        or message_counts.distinct_message_numbers != error_queue.message_count
        or message_counts.first_message_number != 1
        or message_counts.last_message_number != error_queue.message_count
        or error_queue.message_number not between 1 and error_queue.message_count

)

select * from final
