-- Watermarks of each apply process and source database, computed from the data (rule 9 of the
-- apply semantics), with the engine's latest progress row for counters and fallbacks.
--
-- low watermark  = the highest commit SCN (CSCN) of a processed transaction below which no
--                  committed transaction is still unapplied. Committed-but-unapplied = a COMMIT
--                  LCR waiting in the spill. With DEPENDENT_TRANSACTIONS, transactions above a
--                  deferred one may already be applied: the low watermark stays below the gap.
-- high watermark = the highest CSCN processed (applied, ignored or moved to the error queue).
-- oldest SCN     = the lowest SCN of any spilled LCR (open or deferred transactions): where a
--                  restart must re-read from. Without spilled LCRs, the engine's value.
--
-- A transaction that is both in `transactions` and pending in the spill (e.g. the failing one
-- when an apply aborted and keeps its LCRs) counts as pending, not processed.
with

transactions as (

    select * from {{ ref('stg_lakeapply__transactions') }}

),

spill as (

    select * from {{ ref('stg_lakeapply__spill') }}

),

progress as (

    select * from {{ ref('stg_lakeapply__progress') }}

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

spilled_transactions as (

    select
        apply_name,
        source_database,
        transaction_id,
        min(scn) as first_scn,
        min(
            case when command_type = 'COMMIT' then coalesce(commit_scn, scn) end
        ) as pending_commit_scn,
        max(case when command_type = 'ROLLBACK' then 1 else 0 end) as has_rollback

    from spill
    group by apply_name, source_database, transaction_id

),

pending_commits as (

    select * from spilled_transactions
    where pending_commit_scn is not null

),

spill_summary as (

    select
        apply_name,
        source_database,
        min(pending_commit_scn) as first_pending_commit_scn,
        count(pending_commit_scn) as pending_committed_transactions,
        sum(
            case when pending_commit_scn is null and has_rollback = 0 then 1 else 0 end
        ) as open_transactions,
        min(first_scn) as oldest_scn,
        min_by(transaction_id, first_scn) as oldest_transaction_id

    from spilled_transactions
    group by apply_name, source_database

),

processed_transactions as (

    select transactions.*

    from transactions
    left join pending_commits
        on
            transactions.apply_name = pending_commits.apply_name
            and transactions.source_database = pending_commits.source_database
            and transactions.transaction_id = pending_commits.transaction_id

    where pending_commits.transaction_id is null

),

processed_below_first_gap as (

    select processed_transactions.*

    from processed_transactions
    left join spill_summary
        on
            processed_transactions.apply_name = spill_summary.apply_name
            and processed_transactions.source_database = spill_summary.source_database

    where
        spill_summary.first_pending_commit_scn is null
        or processed_transactions.commit_scn < spill_summary.first_pending_commit_scn

),

low_watermarks as (

    select
        apply_name,
        source_database,
        max(commit_scn) as low_watermark,
        max_by(commit_time, commit_scn) as low_watermark_time,
        max_by(applied_at, commit_scn) as low_watermark_apply_time

    from processed_below_first_gap
    group by apply_name, source_database

),

high_watermarks as (

    select
        apply_name,
        source_database,
        max(commit_scn) as high_watermark,
        max_by(commit_time, commit_scn) as high_watermark_time,
        max_by(applied_at, commit_scn) as high_watermark_apply_time,
        count(*) as processed_transactions

    from processed_transactions
    group by apply_name, source_database

),

streams as (

    select
        apply_name,
        source_database
    from latest_progress

    union distinct

    select
        apply_name,
        source_database
    from transactions

    union distinct

    select
        apply_name,
        source_database
    from spill

),

joined as (

    select
        streams.apply_name,
        streams.source_database,

        low_watermarks.low_watermark,
        low_watermarks.low_watermark_time,
        low_watermarks.low_watermark_apply_time,
        high_watermarks.high_watermark,
        high_watermarks.high_watermark_time,
        high_watermarks.high_watermark_apply_time,
        coalesce(high_watermarks.processed_transactions, 0) as processed_transactions,

        spill_summary.first_pending_commit_scn,
        coalesce(spill_summary.pending_committed_transactions, 0)
            as pending_committed_transactions,
        coalesce(spill_summary.open_transactions, 0) as open_transactions,
        spill_summary.oldest_scn as spill_oldest_scn,
        spill_summary.oldest_transaction_id as spill_oldest_transaction_id,

        latest_progress.cycle_id as last_cycle_id,
        latest_progress.apply_time as last_apply_time,
        latest_progress.status as last_cycle_status,
        latest_progress.low_watermark as engine_low_watermark,
        latest_progress.low_watermark_time as engine_low_watermark_time,
        latest_progress.high_watermark as engine_high_watermark,
        latest_progress.high_watermark_time as engine_high_watermark_time,
        latest_progress.oldest_scn as engine_oldest_scn,
        latest_progress.oldest_transaction_id as engine_oldest_transaction_id,
        latest_progress.spill_scn,
        latest_progress.total_received,
        latest_progress.total_applied,
        latest_progress.total_ignored,
        latest_progress.total_rolled_back,
        latest_progress.total_errors,

        -- the engine's low watermark stands in only where no processed transaction is known,
        -- and never at or above a pending commit
        low_watermarks.low_watermark is null
        and latest_progress.low_watermark is not null
        and (
            spill_summary.first_pending_commit_scn is null
            or latest_progress.low_watermark < spill_summary.first_pending_commit_scn
        ) as use_engine_low_watermark

    from streams
    left join low_watermarks
        on
            streams.apply_name = low_watermarks.apply_name
            and streams.source_database = low_watermarks.source_database
    left join high_watermarks
        on
            streams.apply_name = high_watermarks.apply_name
            and streams.source_database = high_watermarks.source_database
    left join spill_summary
        on
            streams.apply_name = spill_summary.apply_name
            and streams.source_database = spill_summary.source_database
    left join latest_progress
        on
            streams.apply_name = latest_progress.apply_name
            and streams.source_database = latest_progress.source_database

),

final as (

    select
        apply_name,
        source_database,

        case
            when use_engine_low_watermark then engine_low_watermark else low_watermark
        end as low_watermark,
        case
            when use_engine_low_watermark then engine_low_watermark_time else low_watermark_time
        end as low_watermark_time,
        case
            when use_engine_low_watermark then last_apply_time else low_watermark_apply_time
        end as low_watermark_apply_time,
        case
            when use_engine_low_watermark then 'PROGRESS'
            when low_watermark is not null then 'TRANSACTIONS'
        end as low_watermark_origin,

        coalesce(high_watermark, engine_high_watermark) as high_watermark,
        case
            when high_watermark is not null then high_watermark_time
            else engine_high_watermark_time
        end as high_watermark_time,
        case
            when high_watermark is not null then high_watermark_apply_time
            else last_apply_time
        end as high_watermark_apply_time,

        coalesce(spill_oldest_scn, engine_oldest_scn) as oldest_scn,
        case
            when spill_oldest_scn is not null then spill_oldest_transaction_id
            else engine_oldest_transaction_id
        end as oldest_transaction_id,
        spill_scn,

        first_pending_commit_scn,
        pending_committed_transactions,
        open_transactions,
        processed_transactions,

        last_cycle_id,
        last_apply_time,
        last_cycle_status,
        total_received,
        total_applied,
        total_ignored,
        total_rolled_back,
        total_errors

    from joined

)

select * from final
