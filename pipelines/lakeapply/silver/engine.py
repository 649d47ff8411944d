"""The apply engine: the apply process's entry points and its two kinds of cycle, each a
sequence of steps that reads in the spec's order (docs/silver-design.md has the why).

A bronze cycle (``bronze_cycle``), one module per step:

1. **Plan** (``silver/plan.py``): the bronze ingest batches to read (bounded by
   ``max_cycle_batches``), the spill version and every destination table's Delta version,
   appended to ``cycles`` (PLANNED) before anything else is written. A crashed cycle is re-run
   from its plan: same inputs, destination tables read ``VERSION AS OF`` the planned versions,
   every write idempotent (``txnAppId``/``txnVersion``, or for an append under the warehouse
   lease the table's planned version: ``silver/cycle_state.py``, ``silver/write.py``).
2. **Assemble, route, stage** (``silver/assemble.py``): transactions from new bronze LCRs plus
   the spill (open and deferred transactions); late input; DDL barriers
   (``silver/ddl_apply.py``); each row LCR of the committed ones routed and staged (rules,
   instantiation SCN, keys, static errors).
3. **Fold** (``silver/fold_passes.py``): key groups against the current destination rows, in
   passes until no new failure is found.
4. **Write** (``silver/write.py``): one MERGE per destination table with changes, the error
   queue (only with errors), transaction outcomes, the spill (only when its content changes).
5. **Progress** (``silver/progress.py``): watermarks and counters, the COMMITTED cycle row, and
   last the ABORTED status if the cycle aborts the apply (a kill just before it is repaired at
   the next start).

An EXECUTE_ERROR cycle (``execute_cycle``) re-executes queued error transactions
(``silver/error_queue.py``) with the same fold and write steps. ``execute_errors`` and
``delete_errors`` are the operator's error loop (DBMS_APPLY_ADM.EXECUTE_ERROR and friends).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import quote
from lakeapply.errors import ApplyAbortedError
from lakeapply.runtime.catalog import Catalog, compact_small_files, compaction_due
from lakeapply.runtime.delta_state import log_states_computed
from lakeapply.runtime.query_jobs import release_finished_query_jobs
from lakeapply.runtime.retry import retry_on_concurrent_modification
from lakeapply.runtime.session import interpreted_evaluation
from lakeapply.silver import dictionary
from lakeapply.silver.assemble import read_and_stage
from lakeapply.silver.cycle_state import (
    ABORT_STATUS_CRASH_POINT,
    Cycle,
    CyclePlan,
    CycleReport,
    Progress,
    latest_version,
)
from lakeapply.silver.ddl_apply import apply_ddl_transaction
from lakeapply.silver.error_queue import (
    ErrorExecution,
    executes_ddl,
    next_execution,
    queued_ddl_transactions,
    queued_in_commit_order,
    read_error_transactions,
    record_executions,
    unknown_errors,
)
from lakeapply.silver.fold_passes import fold_passes
from lakeapply.silver.plan import (
    apply_status,
    create_destination_tables,
    destination_versions,
    ensure_apply_tables,
    latest_settings,
    plan_cycle,
    record_an_unrecorded_abort,
    record_plan,
    recorded_cycles,
    set_status,
    versioned_settings,
)
from lakeapply.silver.progress import commit_cycle, record_progress
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.silver.write import merge_destinations, record_outcomes, write_spill

# The largest cycle whose queries run interpreted: compiling generated code costs a cycle a
# fixed few seconds and saves ~25 s per million LCRs on two cores (runtime/session.py,
# INTERPRETED_EVALUATION): the break-even is near 300k LCRs.
INTERPRETED_CYCLE_MAX_LCRS = 250_000


def apply_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> CycleReport | None:
    """Run one apply cycle (see the module docstring); None when there is nothing to apply."""
    with interpreted_evaluation(spark):  # the apply process's state: a few dictionary rows
        ensure_apply_tables(spark, catalog)
        latest = latest_settings(spark, catalog, settings)
        create_destination_tables(spark, catalog, latest)
        if settings.disable_on_error:
            record_an_unrecorded_abort(spark, catalog, settings)
        status_now = apply_status(spark, catalog, settings.apply_name)
        if status_now in ("ABORTED", "DISABLED"):
            raise ApplyAbortedError(
                f"apply process {settings.apply_name} is "
                f"{status_now}: fix the cause, then start it "
                "(lakeapply admin start-apply)"
            )
        planned = plan_cycle(spark, catalog, settings, latest)
    if planned is None:
        return None
    plan, resumed = planned
    with interpreted_evaluation(spark, is_small_cycle(plan)):
        if plan.execute_errors:  # an EXECUTE_ERROR cycle that did not finish: finish it first
            execute_cycle(spark, catalog, settings, plan, progress, crash_after)
            return _execution_report(settings.apply_name, plan)
        # A resumed cycle applies under the versions it saw when planned; a new one under the
        # latest.
        versioned = (
            versioned_settings(spark, catalog, settings, plan.cycle_id) if resumed else latest
        )
        return bronze_cycle(spark, catalog, versioned, plan, resumed, progress, crash_after)


def is_small_cycle(plan: CyclePlan) -> bool:
    """Whether the cycle's queries run interpreted (``runtime.session.interpreted_evaluation``):
    an EXECUTE_ERROR cycle (the queue's transactions), or a bronze cycle planned to read at
    most ``INTERPRETED_CYCLE_MAX_LCRS`` LCRs (new bronze LCRs and the spill's). A resumed
    bronze cycle does not know its size: it runs as the session is set."""
    if plan.execute_errors:
        return True
    return plan.lcrs_to_read is not None and plan.lcrs_to_read <= INTERPRETED_CYCLE_MAX_LCRS


def bronze_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    plan: CyclePlan,
    resumed: bool,
    progress: Progress,
    crash_after: str | None,
) -> CycleReport:
    """One cycle over new bronze batches and the spill, from its recorded plan, under
    ``settings`` as versioned for it (``versioned_settings``)."""
    cycle = Cycle(spark, catalog, settings, plan, progress, crash_after)
    cycle.crash_point("plan", "after plan")
    batches = (
        f"bronze batches {plan.bronze_from_batch + 1}..{plan.bronze_to_batch}"
        if plan.bronze_to_batch > plan.bronze_from_batch
        else "no new bronze batch"
    )
    progress(f"cycle {plan.cycle_id}: {batches} + spill")
    # A spill that held LCRs is mostly rewritten (its transactions commit, or new ones stay
    # open); an empty one mostly stays empty. A state computed for a table the cycle then does
    # not write is two Spark jobs spent for nothing.
    written = [
        *dictionary.WRITTEN_EVERY_CYCLE,
        *([dictionary.SPILL] if plan.spill_rows != 0 else []),
    ]
    with log_states_computed(spark, [catalog.apply_table(name) for name in written]):
        return _bronze_cycle_steps(cycle, resumed)


def _bronze_cycle_steps(cycle: Cycle, resumed: bool) -> CycleReport:
    spark, catalog, settings, plan = cycle.spark, cycle.catalog, cycle.settings, cycle.plan
    inputs = read_and_stage(cycle)
    if inputs.ddl is not None:  # a DDL transaction, alone in its cycle (rule 9)
        inputs, fold, versions_after, merged = apply_ddl_transaction(cycle, inputs)
    else:
        inputs, fold = fold_passes(cycle, inputs)
        versions_after, merged = merge_destinations(cycle, fold.final_rows, inputs.bounds)
    now = datetime.now(UTC).replace(tzinfo=None)
    processed, late_errors = record_outcomes(cycle, inputs, fold, now)
    keep = write_spill(cycle, inputs, processed)
    totals, watermarks = record_progress(
        cycle, inputs, processed, keep, fold, versions_after, now, late_errors
    )
    commit_cycle(cycle, versions_after, now)
    # After the commit: a resumed cycle must never re-derive an abort that START_APPLY has
    # already cleared. A kill between the two is repaired by record_an_unrecorded_abort.
    if fold.aborted_error is not None:
        cycle.crash_point(ABORT_STATUS_CRASH_POINT, "after the cycle commit, before ABORTED")
        set_status(
            spark,
            catalog,
            settings,
            "ABORTED",
            (int(fold.aborted_error.error_number), str(fold.aborted_error.error_message)),
        )
    _after_commit(cycle)
    return CycleReport(
        cycle.apply_name,
        plan.cycle_id,
        resumed,
        totals["received"],
        totals["applied"],
        totals["ignored"],
        totals["rolled_back"],
        totals["errors"],
        fold.passes,
        merged,
        fold.aborted_error is not None,
        watermarks,
        caught_up=fold.cut is None
        and not fold.held
        and not inputs.barrier
        and plan.bronze_to_batch == plan.bronze_newest_batch,
    )


def run_apply(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> list[CycleReport]:
    """Apply cycles until bronze has nothing new for this apply process, or it aborts.
    ``crash_after`` (tests) is passed to the first cycle."""
    reports: list[CycleReport] = []
    while True:
        crash, crash_after = crash_after, None
        # A cycle is idempotent on replay (plan recorded first, every write idempotent),
        # so a Delta commit race (OPTIMIZE, another writer) is retried as a whole cycle.
        report = retry_on_concurrent_modification(
            lambda: apply_cycle(spark, catalog, settings, progress, crash),  # noqa: B023
            attempts=3,
            backoff=2.0,
        )
        if report is None:
            return reports
        reports.append(report)
        if report.aborted or report.caught_up:
            return reports


def load_initial_copy(
    spark: SparkSession, catalog: Catalog, table: DestinationTable, rows: DataFrame
) -> None:
    """Instantiation: append an initial copy (typed like the destination) to an empty table."""
    schema = table.definition.spark_schema()
    rows.select(*[F.col(quote(f.name)).cast(f.dataType) for f in schema.fields]).write.format(
        "delta"
    ).mode("append").saveAsTable(catalog.silver_table(table.silver_table))


def _finish_unfinished(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    progress: Progress,
    execute_only: bool = False,
) -> list[ErrorExecution]:
    """Cycles are sequential: a cycle that did not commit (killed) is finished before another
    one starts, from its recorded plan. Returns what an unfinished EXECUTE_ERROR cycle did."""
    _, unfinished, _ = recorded_cycles(spark, catalog, settings)
    if unfinished is None:
        return []
    if unfinished.execute_errors:
        return execute_cycle(spark, catalog, settings, unfinished, progress)
    if not execute_only:
        # A bronze cycle is finished whatever the status: it was planned while enabled.
        versioned = versioned_settings(spark, catalog, settings, unfinished.cycle_id)
        bronze_cycle(spark, catalog, versioned, unfinished, True, progress, None)
    return []


def execute_errors(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    local_transaction_ids: list[str] | None = None,
    progress: Progress = lambda _: None,
    crash_after: str | None = None,
) -> list[ErrorExecution]:
    """EXECUTE_ERROR (the given error transactions) or EXECUTE_ALL_ERRORS (None: every one),
    in commit-SCN order, each against the destination state the previous ones left.

    A re-execution is an apply cycle whose input is the queued transactions' messages (the
    LCRs as queued, after rules and transformations) instead of bronze: the same stage, fold
    (keys, conversions, conflict handlers) and MERGE, recorded in ``cycles`` first and written
    idempotently, so a crash midway is finished by the next run and nothing applies twice.
    Errors do not stop it (as with ``disable_on_error = N``): a transaction that fails again
    stays in the queue with its new error; one that succeeds leaves the queue. The apply
    process's status does not matter (an ABORTED apply is the usual case) and is not changed.
    The queue's transactions are few: their cycles run interpreted (``is_small_cycle``).
    """
    with interpreted_evaluation(spark):
        return _execute_errors(
            spark, catalog, settings, local_transaction_ids, progress, crash_after
        )


def _execute_errors(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    local_transaction_ids: list[str] | None,
    progress: Progress,
    crash_after: str | None,
) -> list[ErrorExecution]:
    ensure_apply_tables(spark, catalog)
    create_destination_tables(spark, catalog, latest_settings(spark, catalog, settings))
    if settings.disable_on_error:
        record_an_unrecorded_abort(spark, catalog, settings)
    results = _finish_unfinished(spark, catalog, settings, progress)
    finished = {result.local_transaction_id for result in results}
    wanted = queued_in_commit_order(spark, catalog, settings.apply_name, local_transaction_ids)
    if local_transaction_ids is not None:
        unknown = [
            local_id
            for local_id in dict.fromkeys(local_transaction_ids)
            if local_id not in wanted and local_id not in finished
        ]
        if unknown:
            raise unknown_errors(settings.apply_name, unknown)
    ddl = queued_ddl_transactions(spark, catalog, settings.apply_name, wanted)
    while wanted:
        last, _, from_batch = recorded_cycles(spark, catalog, settings)
        plan = CyclePlan(
            last + 1,
            from_batch,
            from_batch,  # reads no bronze: the next bronze cycle starts where the last one ended
            latest_version(spark, catalog.apply_table(dictionary.SPILL)),
            destination_versions(spark, catalog, latest_settings(spark, catalog, settings)),
            execute_errors=tuple(next_execution(wanted, ddl)),
            error_queue_versions={
                name: latest_version(spark, catalog.apply_table(name))
                for name in (dictionary.ERROR_QUEUE, dictionary.ERROR_MESSAGES)
            },
        )
        record_plan(spark, catalog, settings, plan)
        executed = execute_cycle(spark, catalog, settings, plan, progress, crash_after)
        results += executed
        done = {result.local_transaction_id for result in executed}
        # max_error_passes may cut a cycle: what follows the cut runs in the next one.
        wanted = [local_id for local_id in wanted if local_id not in done]
    return results


def _execution_report(apply_name: str, plan: CyclePlan) -> CycleReport:
    """An EXECUTE_ERROR cycle finished by an apply run: it received and counted nothing."""
    return CycleReport(apply_name, plan.cycle_id, True, 0, 0, 0, 0, 0, 1, 0, False)


def execute_cycle(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    plan: CyclePlan,
    progress: Progress,
    crash_after: str | None = None,
) -> list[ErrorExecution]:
    """One EXECUTE_ERROR cycle from its recorded plan: the error transactions it names, read
    from the error queue as it was when planned, folded against the destination tables as
    they were when planned, MERGEd, then the queue updated; last, the COMMITTED cycle row."""
    # Re-execution carries on after a failure, whatever disable_on_error says.
    settings = versioned_settings(spark, catalog, settings, plan.cycle_id)
    cycle = Cycle(
        spark, catalog, replace(settings, disable_on_error=False), plan, progress, crash_after
    )
    cycle.crash_point("plan", "after plan")
    progress(f"cycle {plan.cycle_id}: re-executing {len(plan.execute_errors)} error transaction(s)")
    inputs = read_error_transactions(cycle)
    if executes_ddl(cycle, inputs):  # a DDL transaction, alone in its cycle (rule 9)
        inputs, fold, versions_after, _ = apply_ddl_transaction(cycle, inputs)
    else:
        inputs, fold = fold_passes(cycle, inputs)
        versions_after, _ = merge_destinations(cycle, fold.final_rows, inputs.bounds)
    now = datetime.now(UTC).replace(tzinfo=None)
    executions = record_executions(cycle, inputs, fold, now)
    commit_cycle(cycle, versions_after, now)
    _after_commit(cycle)
    return executions


def _after_commit(cycle: Cycle) -> None:
    """Housekeeping after a committed cycle (a kill during it loses nothing): release what
    Spark's scheduler keeps of the cycle's ended queries (``runtime/query_jobs.py``), and
    every few cycles compact the dictionary tables cycles append to (each cycle reads them
    whole)."""
    release_finished_query_jobs(cycle.spark)
    if compaction_due(cycle.plan.cycle_id):
        cycle.progress(f"cycle {cycle.plan.cycle_id}: compacting the dictionary's small files")
        compact_small_files(
            cycle.spark,
            [cycle.catalog.apply_table(name) for name in dictionary.APPENDED_EVERY_CYCLE],
        )


def delete_errors(
    spark: SparkSession,
    catalog: Catalog,
    settings: ApplySettings,
    local_transaction_ids: list[str] | None = None,
    progress: Progress = lambda _: None,
) -> list[str]:
    """DELETE_ERROR (the given error transactions) or DELETE_ALL_ERRORS (None): they leave the
    queue unapplied. An unfinished re-execution is finished first (it was planned with them).
    Messages go first: a kill between the two deletes leaves the queue row, and a re-run
    removes it."""
    ensure_apply_tables(spark, catalog)
    _finish_unfinished(spark, catalog, settings, progress, execute_only=True)
    wanted = queued_in_commit_order(spark, catalog, settings.apply_name, local_transaction_ids)
    if local_transaction_ids is not None:
        unknown = [i for i in dict.fromkeys(local_transaction_ids) if i not in wanted]
        if unknown:
            raise unknown_errors(settings.apply_name, unknown)
    if not wanted:
        return []
    mine = (F.col("apply_name") == settings.apply_name) & F.col("local_transaction_id").isin(
        *wanted
    )
    for name in (dictionary.ERROR_MESSAGES, dictionary.ERROR_QUEUE):
        DeltaTable.forName(spark, catalog.apply_table(name)).delete(mine)
    return wanted
