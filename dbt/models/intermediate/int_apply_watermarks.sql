-- Watermarks of each apply process and source database, computed from the data (rule 9 of the
-- apply semantics), with the engine's latest progress row for counters and fallbacks.
--
-- low watermark  = the highest commit SCN (CSCN) of a processed transaction below which no
--                  committed transaction is still unapplied. Committed-but-unapplied = a COMMIT
--                  LCR waiting in the spill. With DEPENDENT_TRANSACTIONS, transactions above a
--                  deferred one may already be applied: the low watermark stays below the gap.
-- high watermark = the highest CSCN processed (applied, ignored or moved to the error queue).
-- oldest SCN     = the lowest SCN of the transactions not yet applied: spilled LCRs (open or
--                  deferred transactions): where a restart must re-read from.
--
-- An ABORTED apply process (disable_on_error = Y) stopped at an error transaction: that one is
-- in the error queue but counts as not applied until the apply is started again (its CSCN holds
-- both watermarks, its first SCN is an oldest-SCN candidate), as the engine and the reference
-- applier record it. It is the apply's last processed ERROR transaction. A transaction both in
-- `transactions` and pending in the spill also counts as not applied.
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

apply_processes as (

    select * from {{ ref('stg_lakeapply__apply_processes') }}

),

ranked_errors_of_aborted_applies as (

    select
        transactions.apply_name,
        transactions.source_database,
        transactions.transaction_id,
        transactions.commit_scn,
        transactions.first_scn,
        row_number() over (
            partition by transactions.apply_name
            order by
                transactions.cycle_id desc,
                transactions.commit_scn desc,
                transactions.source_database desc,
                transactions.transaction_id desc
        ) as error_rank

    from transactions
    inner join apply_processes
        on transactions.apply_name = apply_processes.apply_name

    where
        apply_processes.status = 'ABORTED'
        and transactions.outcome = 'ERROR'

),

aborting_transactions as (

    select * from ranked_errors_of_aborted_applies
    where error_rank = 1

),

transaction_events as (

    select
        apply_name,
        source_database,
        transaction_id,
        commit_scn as processed_commit_scn,
        commit_time,
        applied_at,
        cast(null as bigint) as unapplied_scn,
        cast(null as bigint) as pending_commit_scn,
        0 as is_rollback
    from transactions

    union all

    select
        apply_name,
        source_database,
        transaction_id,
        cast(null as bigint) as processed_commit_scn,
        cast(null as timestamp) as commit_time,
        cast(null as timestamp) as applied_at,
        scn as unapplied_scn,
        case when command_type = 'COMMIT' then coalesce(commit_scn, scn) end as pending_commit_scn,
        case when command_type = 'ROLLBACK' then 1 else 0 end as is_rollback
    from spill

    union all

    select
        apply_name,
        source_database,
        transaction_id,
        cast(null as bigint) as processed_commit_scn,
        cast(null as timestamp) as commit_time,
        cast(null as timestamp) as applied_at,
        coalesce(first_scn, commit_scn) as unapplied_scn,
        commit_scn as pending_commit_scn,
        0 as is_rollback
    from aborting_transactions

),

-- one row per transaction the apply knows of: processed, not applied yet, or both
known_transactions as (

    select
        apply_name,
        source_database,
        transaction_id,
        max(processed_commit_scn) as processed_commit_scn,
        max(commit_time) as commit_time,
        max(applied_at) as applied_at,
        min(unapplied_scn) as first_unapplied_scn,
        min(pending_commit_scn) as pending_commit_scn,
        max(is_rollback) as has_rollback

    from transaction_events
    group by apply_name, source_database, transaction_id

),

classified_transactions as (

    select
        *,
        -- processed and not pending in the spill
        case
            when pending_commit_scn is null then processed_commit_scn
        end as done_commit_scn,
        min(pending_commit_scn) over (
            partition by apply_name, source_database
        ) as first_pending_commit_scn

    from known_transactions

),

watermark_candidates as (

    select
        *,
        -- processed below the first gap: a low watermark candidate
        case
            when
                first_pending_commit_scn is null
                or done_commit_scn < first_pending_commit_scn
                then done_commit_scn
        end as low_watermark_candidate_scn

    from classified_transactions

),

stream_watermarks as (

    select
        apply_name,
        source_database,

        max(low_watermark_candidate_scn) as low_watermark,
        max_by(commit_time, low_watermark_candidate_scn) as low_watermark_time,
        max_by(applied_at, low_watermark_candidate_scn) as low_watermark_apply_time,

        max(done_commit_scn) as high_watermark,
        max_by(commit_time, done_commit_scn) as high_watermark_time,
        max_by(applied_at, done_commit_scn) as high_watermark_apply_time,
        count(done_commit_scn) as processed_transactions,

        min(first_pending_commit_scn) as first_pending_commit_scn,
        count(pending_commit_scn) as pending_committed_transactions,
        count_if(
            first_unapplied_scn is not null and pending_commit_scn is null and has_rollback = 0
        ) as open_transactions,
        min(first_unapplied_scn) as unapplied_oldest_scn,
        min_by(transaction_id, first_unapplied_scn) as unapplied_oldest_transaction_id

    from watermark_candidates
    group by apply_name, source_database

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

joined as (

    select
        coalesce(
            stream_watermarks.apply_name, latest_progress.apply_name
        ) as apply_name,
        coalesce(
            stream_watermarks.source_database, latest_progress.source_database
        ) as source_database,

        stream_watermarks.low_watermark,
        stream_watermarks.low_watermark_time,
        stream_watermarks.low_watermark_apply_time,
        stream_watermarks.high_watermark,
        stream_watermarks.high_watermark_time,
        stream_watermarks.high_watermark_apply_time,
        coalesce(stream_watermarks.processed_transactions, 0) as processed_transactions,

        stream_watermarks.first_pending_commit_scn,
        coalesce(stream_watermarks.pending_committed_transactions, 0)
            as pending_committed_transactions,
        coalesce(stream_watermarks.open_transactions, 0) as open_transactions,
        stream_watermarks.unapplied_oldest_scn,
        stream_watermarks.unapplied_oldest_transaction_id,

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
        stream_watermarks.low_watermark is null
        and latest_progress.low_watermark is not null
        and (
            stream_watermarks.first_pending_commit_scn is null
            or latest_progress.low_watermark < stream_watermarks.first_pending_commit_scn
        ) as use_engine_low_watermark

    from stream_watermarks
    full outer join latest_progress
        on
            stream_watermarks.apply_name = latest_progress.apply_name
            and stream_watermarks.source_database = latest_progress.source_database

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

        coalesce(unapplied_oldest_scn, engine_oldest_scn) as oldest_scn,
        case
            when unapplied_oldest_scn is not null then unapplied_oldest_transaction_id
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
