-- How fresh each destination table is: the last applied change to it (its transaction's commit
-- SCN and source commit time) against the time it was applied, and the committed transactions
-- touching it that still wait in the spill.
--
-- Which tables a transaction changed comes from its row LCRs in bronze (source database,
-- transaction id, SCN between the transaction's first SCN and its commit SCN). A transaction
-- counts as a change to a table when its outcome is APPLIED and it has a row LCR for the table.
with

destination_tables as (

    -- the live ones: declared or made by CREATE TABLE, not dropped
    select * from {{ ref('int_destination_tables') }}
    where not is_dropped

),

transactions as (

    select * from {{ ref('stg_lakeapply__transactions') }}

),

lcrs as (

    select * from {{ ref('stg_lakeapply__lcrs') }}

),

spill as (

    select * from {{ ref('stg_lakeapply__spill') }}

),

applied_transactions as (

    select * from transactions
    where outcome = 'APPLIED'

),

table_changes as (

    select distinct
        applied_transactions.apply_name,
        applied_transactions.source_database,
        lcrs.object_owner,
        lcrs.object_name,
        applied_transactions.transaction_id,
        applied_transactions.commit_scn,
        applied_transactions.commit_time,
        applied_transactions.applied_at

    from applied_transactions
    inner join lcrs
        on
            applied_transactions.source_database = lcrs.source_database
            and applied_transactions.transaction_id = lcrs.transaction_id
            and lcrs.scn <= applied_transactions.commit_scn
            and (
                applied_transactions.first_scn is null
                or lcrs.scn >= applied_transactions.first_scn
            )

),

last_changes as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        max(commit_scn) as last_applied_scn,
        max_by(transaction_id, commit_scn) as last_applied_transaction_id,
        max_by(commit_time, commit_scn) as last_change_source_time,
        max_by(applied_at, commit_scn) as last_apply_time,
        count(*) as applied_transactions

    from table_changes
    group by apply_name, source_database, object_owner, object_name

),

spilled_changes as (

    select
        apply_name,
        source_database,
        transaction_id,
        object_owner,
        object_name,
        -- the transaction's COMMIT waits in the spill too: committed but not applied yet
        min(case when command_type = 'COMMIT' then coalesce(commit_scn, scn) end) over (
            partition by apply_name, source_database, transaction_id
        ) as pending_commit_scn

    from spill

),

pending_changes as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        count(distinct transaction_id) as pending_transactions,
        min(pending_commit_scn) as first_pending_commit_scn

    from spilled_changes
    where pending_commit_scn is not null and object_name is not null
    group by apply_name, source_database, object_owner, object_name

),

final as (

    select
        destination_tables.apply_name as APPLY_NAME,
        destination_tables.source_database as SOURCE_DATABASE,
        destination_tables.object_owner as OBJECT_OWNER,
        destination_tables.object_name as OBJECT_NAME,
        destination_tables.silver_table as SILVER_TABLE,
        last_changes.last_applied_scn as LAST_APPLIED_SCN,
        last_changes.last_applied_transaction_id as LAST_APPLIED_TRANSACTION_ID,
        last_changes.last_change_source_time as LAST_CHANGE_SOURCE_TIME,
        last_changes.last_apply_time as LAST_APPLY_TIME,
        (
            unix_micros(last_changes.last_apply_time)
            - unix_micros(last_changes.last_change_source_time)
        ) / 1000000 as APPLY_LAG_SECONDS,
        coalesce(last_changes.applied_transactions, 0) as APPLIED_TRANSACTIONS,
        coalesce(pending_changes.pending_transactions, 0) as PENDING_TRANSACTIONS,
        pending_changes.first_pending_commit_scn as FIRST_PENDING_COMMIT_SCN

    from destination_tables
    left join last_changes
        on
            destination_tables.apply_name = last_changes.apply_name
            and destination_tables.source_database = last_changes.source_database
            and destination_tables.object_owner = last_changes.object_owner
            and destination_tables.object_name = last_changes.object_name
    left join pending_changes
        on
            destination_tables.apply_name = pending_changes.apply_name
            and destination_tables.source_database = pending_changes.source_database
            and destination_tables.object_owner = pending_changes.object_owner
            and destination_tables.object_name = pending_changes.object_name

)

select * from final
