-- Watermarks, oldest SCN and counters of each apply process and source database.
--
-- The engine computes the watermarks once, per cycle (rule 9 of the apply semantics: a
-- transaction moved to the error queue is processed, the low watermark never passes a
-- committed transaction not yet processed), and records them in its progress table; this
-- model reads the latest progress row and adds what the dictionary shows beside it: when each
-- watermark was first reached (the apply time of that cycle) and what waits in the spill.
with

progress as (

    select * from {{ ref('stg_lakeapply__progress') }}

),

spill as (

    select * from {{ ref('stg_lakeapply__spill') }}

),

transactions as (

    select * from {{ ref('stg_lakeapply__transactions') }}

),

ranked_progress as (

    select
        *,
        row_number() over (
            partition by apply_name, source_database
            order by cycle_id desc
        ) as cycle_rank

    from progress

),

latest_progress as (

    select * from ranked_progress
    where cycle_rank = 1

),

-- a watermark is applied at the first cycle that recorded it
watermark_apply_times as (

    select
        latest_progress.apply_name,
        latest_progress.source_database,
        min(
            case
                when progress.low_watermark = latest_progress.low_watermark
                    then progress.apply_time
            end
        ) as low_watermark_apply_time,
        min(
            case
                when progress.high_watermark = latest_progress.high_watermark
                    then progress.apply_time
            end
        ) as high_watermark_apply_time

    from latest_progress
    inner join progress
        on
            latest_progress.apply_name = progress.apply_name
            and latest_progress.source_database = progress.source_database
    group by latest_progress.apply_name, latest_progress.source_database

),

spilled_transactions as (

    select
        apply_name,
        source_database,
        transaction_id,
        min(case when command_type = 'COMMIT' then coalesce(commit_scn, scn) end)
            as pending_commit_scn,
        max(case when command_type = 'ROLLBACK' then 1 else 0 end) as has_rollback

    from spill
    group by apply_name, source_database, transaction_id

),

spill_counts as (

    select
        apply_name,
        source_database,
        min(pending_commit_scn) as first_pending_commit_scn,
        count(pending_commit_scn) as pending_committed_transactions,
        count_if(pending_commit_scn is null and has_rollback = 0) as open_transactions

    from spilled_transactions
    group by apply_name, source_database

),

processed_counts as (

    select
        apply_name,
        source_database,
        count(*) as processed_transactions

    from transactions
    group by apply_name, source_database

),

final as (

    select
        latest_progress.apply_name,
        latest_progress.source_database,

        latest_progress.low_watermark,
        latest_progress.low_watermark_time,
        watermark_apply_times.low_watermark_apply_time,
        latest_progress.high_watermark,
        latest_progress.high_watermark_time,
        watermark_apply_times.high_watermark_apply_time,

        latest_progress.oldest_scn,
        latest_progress.oldest_transaction_id,
        latest_progress.spill_scn,

        spill_counts.first_pending_commit_scn,
        coalesce(spill_counts.pending_committed_transactions, 0)
            as pending_committed_transactions,
        coalesce(spill_counts.open_transactions, 0) as open_transactions,
        coalesce(processed_counts.processed_transactions, 0) as processed_transactions,

        latest_progress.cycle_id as last_cycle_id,
        latest_progress.apply_time as last_apply_time,
        latest_progress.status as last_cycle_status,
        latest_progress.total_received,
        latest_progress.total_applied,
        latest_progress.total_ignored,
        latest_progress.total_rolled_back,
        latest_progress.total_errors

    from latest_progress
    inner join watermark_apply_times
        on
            latest_progress.apply_name = watermark_apply_times.apply_name
            and latest_progress.source_database = watermark_apply_times.source_database
    left join spill_counts
        on
            latest_progress.apply_name = spill_counts.apply_name
            and latest_progress.source_database = spill_counts.source_database
    left join processed_counts
        on
            latest_progress.apply_name = processed_counts.apply_name
            and latest_progress.source_database = processed_counts.source_database

)

select * from final
