"""Step 4 of a cycle: resolve conflicts and handlers by folding each key group in commit order
(rules 5-8, design-notes 1).

A fold pass (``silver/fold.py`` over ``silver/rowops.py``) assumes every transaction outside the
known-failed set succeeds, so a new failure is certain only when no other new failure of the pass
reaches it forward in commit order through shared groups (``components.seeds_reached``; when the
chains are too long to follow, the earliest of each component of transactions that share rows);
the certain ones join the failed set and the fold runs again, over the groups they touch only
(``fold_again``). Late COMMITs and
transactions with a static error are known failed before the first pass (``known_failures``). With ``disable_on_error = Y`` the
cycle is cut before the first error and the apply aborts. With DEPENDENT_TRANSACTIONS the
transactions that depend on a failed or deferred one are held back (``dependent_fold``,
``silver/dependent.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from lakeapply.silver.assemble import unhandled_staged, with_group_ids
from lakeapply.silver.components import (
    STATIC_GROUP,
    TouchGraph,
    driver_rows,
    transaction_components,
)
from lakeapply.silver.cycle_state import Cycle, CycleInput, FoldOutcome, materialize
from lakeapply.silver.dependent import held_transactions
from lakeapply.silver.error_handlers import MessageId, handle_errors
from lakeapply.silver.fold import FOLD_OUTPUT_SCHEMA, FoldPlan, Position, fold_function
from lakeapply.silver.settings import ApplySettings, CommitSerialization
from lakeapply.silver.transactions import TRANSACTION_KEY
from lakeapply.silver.virtual_dependencies import TOUCH_COLUMNS, virtual_touches


def run_fold(fold_input: DataFrame, plan: FoldPlan, buckets: int) -> DataFrame:
    bucket = F.pmod(F.hash("silver_table", "group_id"), F.lit(buckets))
    return (
        fold_input.withColumn("bucket", bucket)
        .groupBy("bucket")
        .applyInPandas(fold_function(plan), FOLD_OUTPUT_SCHEMA)
    )


def earliest_error_per_transaction(folded: DataFrame) -> dict[tuple[str, str], Any]:
    """transaction -> its first failing message (lowest message number) among fold errors,
    chosen in Spark: the driver receives one row per failing transaction, not one per error."""
    first = Window.partitionBy(*TRANSACTION_KEY).orderBy("message_number", "error_number")
    rows = (
        folded.where(F.col("kind") == "ERROR")
        .withColumn("_rank", F.row_number().over(first))
        .where(F.col("_rank") == 1)
        .drop("_rank")
        .collect()  # one row per failing transaction
    )
    return {(row.source_database_name, row.transaction_id): row for row in rows}


def known_failures(
    settings: ApplySettings, inputs: CycleInput
) -> tuple[dict[tuple[str, str], Any], dict[tuple[str, str], Any], Position | None]:
    """What fails before the first pass: the late COMMITs (``silver/late.py``: each fails with
    its own error, whatever its LCRs would do) and the transactions with a static error; with
    ``disable_on_error = Y`` the earliest of them is where the cycle is cut."""
    late = dict(inputs.late.late_commits) if inputs.late is not None else {}
    failed = {**static_failures(settings, inputs.fold_input), **late}
    cut = (
        min(position_of(error) for error in failed.values())
        if settings.disable_on_error and failed
        else None
    )
    return late, failed, cut


_GROUP = ["silver_table", "group_id"]


@dataclass(frozen=True)
class PassFold:
    """A pass's fold, kept as the first pass's whole fold (``whole``, its error rows apart)
    plus the latest fold of every group folded again since (``again``, over ``groups_again``).

    A later pass costs its groups, not the cycle: nothing of the whole fold is copied again, and
    the failures are read from the error rows only. ``frame`` puts the two together, once, for
    the write."""

    whole: DataFrame
    whole_errors: DataFrame
    again: DataFrame | None = None
    groups_again: DataFrame | None = None

    @classmethod
    def of(cls, whole: DataFrame) -> PassFold:
        return cls(whole, materialize(whole.where(F.col("kind") == "ERROR")))

    def frame(self) -> DataFrame:
        if self.again is None or self.groups_again is None:
            return self.whole
        kept = self.whole.join(F.broadcast(self.groups_again), _GROUP, "left_anti")
        return kept.unionByName(self.again)

    def errors(self) -> DataFrame:
        if self.again is None or self.groups_again is None:
            return self.whole_errors
        kept = self.whole_errors.join(F.broadcast(self.groups_again), _GROUP, "left_anti")
        return kept.unionByName(self.again.where(F.col("kind") == "ERROR"))

    def with_groups_folded_again(self, groups: DataFrame, folded: DataFrame) -> PassFold:
        """``folded`` is the new fold of ``groups``; it replaces their earlier rows."""
        again, groups_again = folded.select(*self.whole.columns), groups
        if self.again is not None and self.groups_again is not None:
            older = self.again.join(F.broadcast(groups), _GROUP, "left_anti")
            again = older.unionByName(again)
            groups_again = self.groups_again.unionByName(groups).distinct()
        return replace(self, again=materialize(again), groups_again=materialize(groups_again))


def _fold_pass(
    cycle: Cycle,
    number: int,
    plan: FoldPlan,
    fold_input: tuple[DataFrame, int],
    previous: PassFold | None,
    newly_failed: frozenset[tuple[str, str]],
    graph: _TransactionGraph,
) -> PassFold:
    """One pass: the whole cycle's fold first, then only what the new failures change."""
    rows, buckets = fold_input
    if previous is None:
        cycle.progress(f"fold pass {number}")
        return PassFold.of(materialize(run_fold(rows, plan, buckets)))
    cycle.progress(f"fold pass {number}: the groups of {len(newly_failed)} new failure(s)")
    groups = (graph.keyed_touches, graph.keyless_groups)
    return fold_again(previous, (rows, *groups), plan, buckets, newly_failed)


def fold_again(
    previous: PassFold,
    fold_input_and_touches: tuple[DataFrame, DataFrame, DataFrame],
    plan: FoldPlan,
    buckets: int,
    newly_failed: frozenset[tuple[str, str]],
) -> PassFold:
    """The fold of ``plan`` from the previous pass's, whose plan lacked only ``newly_failed``
    among its failed transactions: a group's fold depends on the failed set only through the
    transactions that touch the group, so only the groups those touch are folded again, and the
    result is the whole pass's (a failure costs a pass over its groups, not over the cycle).
    The groups come from the cycle's keyed touches and keyless groups (``_TransactionGraph``),
    kept from pass to pass, not from a scan of the fold's input; the keyless groups (few LCRs,
    each with its static error) are folded again every time."""
    fold_input, touches, keyless_groups = fold_input_and_touches
    groups = materialize(
        touches.join(
            F.broadcast(driver_rows(touches.sparkSession, newly_failed, TRANSACTION_KEY)),
            list(TRANSACTION_KEY),
            "left_semi",
        )
        .select(*_GROUP)
        .unionByName(keyless_groups)
        .distinct()
    )
    again = run_fold(fold_input.join(F.broadcast(groups), _GROUP, "left_semi"), plan, buckets)
    return previous.with_groups_folded_again(groups, again)


def static_failures(settings: ApplySettings, fold_input: DataFrame) -> dict[tuple[str, str], Any]:
    """Transactions with a static error (00904, 01400, 01722, 01438, 12899, 26688: known from
    the LCR alone, ``silver/stage.py``) fail whatever the rows hold, so they are known failed
    before the first pass, and a cycle whose errors are all static needs one pass. Their
    earliest failing message may still be an earlier LCR's conflict: the pass evaluates known
    failures too and reports it. Not with error handlers: a handler may turn the earlier error
    or the static one into a success (rule 7), so there the passes prove them."""
    if any(table.error_handlers for table in settings.tables):
        return {}
    static = fold_input.where(
        (F.col("kind") == "LCR") & ~F.col("discarded") & F.col("static_error_number").isNotNull()
    ).select(
        F.lit("ERROR").alias("kind"),
        "silver_table",
        F.lit(None).cast("string").alias("key_text"),
        F.lit(None).cast("string").alias("action"),
        F.lit(None).cast("string").alias("row_json"),
        *TRANSACTION_KEY,
        "commit_scn",
        "message_number",
        F.col("static_error_number").alias("error_number"),
        F.col("static_error_message").alias("error_message"),
    )
    return earliest_error_per_transaction(static)


def position_of(error: Any) -> Position:
    return (int(error.commit_scn), str(error.source_database_name), str(error.transaction_id))


def fold_passes(cycle: Cycle, inputs: CycleInput) -> tuple[CycleInput, FoldOutcome]:
    """Step 4 (design-notes 1): only the earliest newly failing transaction is certain, and so
    is everything before it. A pass that finds no new failure is already the final fold: its
    rows are kept, not re-run. A proven failure whose LCR has an error handler is given to it
    first (``silver/error_handlers.py``): what it returns replaces the LCR, so the input the
    outcome was folded from is returned with it."""
    settings = cycle.settings
    fold_input, buckets = inputs.fold_input, inputs.buckets
    late, failed, cut = known_failures(settings, inputs)
    passes = 0
    graph = _TransactionGraph(cycle, fold_input)
    handled: frozenset[MessageId] = frozenset()
    folded: PassFold | None = None  # the last pass's fold, which the next one starts from
    newly_failed: frozenset[tuple[str, str]] = frozenset()
    while True:
        passes += 1
        plan = FoldPlan(settings, frozenset(failed), cut)
        folded = _fold_pass(cycle, passes, plan, (fold_input, buckets), folded, newly_failed, graph)
        errors = earliest_error_per_transaction(folded.errors())
        failed = {  # exact state
            key: known if key in late else errors.get(key, known) for key, known in failed.items()
        }
        new_failures = sorted(
            (error for key, error in errors.items() if key not in failed), key=position_of
        )
        if not new_failures:
            rows = folded.frame()
            break
        first = new_failures[0]
        stopping = settings.disable_on_error or passes >= settings.max_error_passes
        certain = (
            {(first.source_database_name, first.transaction_id): first}
            if stopping
            else _certain_failures(graph, new_failures)
        )
        handling = handle_errors(cycle, inputs, list(certain.values()), handled)
        if handling is not None:
            # The handlers' LCRs may address other keys: what was proven about the other
            # failures of this pass, and the transaction graph, are proven again.
            inputs, handled = handling.inputs, handling.handled
            fold_input, buckets = inputs.fold_input, inputs.buckets
            graph, folded = _TransactionGraph(cycle, fold_input), None
            continue
        if stopping:
            failed[(first.source_database_name, first.transaction_id)] = first
            cut = position_of(first)  # what follows it waits (Y: until start_apply)
            # Failures proven in other components after the cut wait too: the next cycle
            # finds them again.
            failed = {
                key: error
                for key, error in failed.items()
                if key in late or position_of(error) <= cut
            }
            rows = materialize(
                run_fold(fold_input, FoldPlan(settings, frozenset(failed), cut), buckets)
            )
            break
        failed.update(certain)
        newly_failed = frozenset(certain)
    if cut is not None:  # what a known failure after the cut would be waits for a later cycle
        failed = {
            key: error for key, error in failed.items() if key in late or position_of(error) <= cut
        }
    aborted_error = None
    if settings.disable_on_error and failed:
        aborted_error = failed[min(failed, key=lambda key: position_of(failed[key]))]
    held: dict[tuple[str, str], int] = {}
    if (
        aborted_error is not None
        and settings.commit_serialization is CommitSerialization.DEPENDENT_TRANSACTIONS
    ):
        rows, held, passes = dependent_fold(cycle, inputs, failed, passes)
        cut = None
    cycle.progress(
        f"cycle {cycle.plan.cycle_id}: {passes} fold pass(es), {len(failed)} error transaction(s)"
        f", {len(held)} held back"
    )
    return inputs, FoldOutcome(
        rows.where(F.col("kind") == "ROW"), failed, cut, passes, aborted_error, held=held
    )


def dependent_fold(
    cycle: Cycle, inputs: CycleInput, failed: dict[tuple[str, str], Any], passes: int
) -> tuple[DataFrame, dict[tuple[str, str], int], int]:
    """DEPENDENT_TRANSACTIONS after an abort: instead of cutting the cycle after the aborting
    transaction, hold back only what depends on it (silver/dependent.py) and apply the rest.
    A later independent transaction that fails is held back too (not queued): the apply is
    already aborting, and it retries after START_APPLY, like it would under FULL."""
    fold_input, buckets = inputs.fold_input, inputs.buckets
    # Dependencies are those of the LCRs before any DML or error handler (Oracle computes them
    # first): with handlers, the messages are staged again without them.
    handled = any(t.dml_handlers or t.error_handlers for t in cycle.settings.tables)
    staged = unhandled_staged(cycle.settings, inputs.messages) if handled else inputs.staged
    touches = with_group_ids(staged).select(*TOUCH_COLUMNS)
    virtual = virtual_touches(staged, cycle.settings)
    if virtual is not None:
        touches = touches.unionByName(virtual)
    touches = materialize(touches.distinct())
    stopping = set(failed)
    while True:
        passes += 1
        cycle.progress(f"fold pass {passes} (dependent transactions)")
        blockers = cycle.spark.createDataFrame(
            sorted(stopping), "source_database_name string, transaction_id string"
        )
        held_rows = (
            held_transactions(touches, blockers)
            .join(touches.select(*TRANSACTION_KEY, "commit_scn").distinct(), list(TRANSACTION_KEY))
            .collect()
        )
        held = {
            (r.source_database_name, r.transaction_id): int(r.commit_scn)
            for r in held_rows
            if (r.source_database_name, r.transaction_id) not in failed
        }
        plan = FoldPlan(cycle.settings, frozenset(failed), None, frozenset(held))
        folded = materialize(run_fold(fold_input, plan, buckets))
        errors = earliest_error_per_transaction(folded)
        new_failures = set(errors) - set(failed) - set(held)
        if not new_failures:
            return folded, held, passes
        stopping |= new_failures


class _Unlabelled:
    """The transaction graph was too long to label: one failure per pass."""


# Labelling and reachability joins are cheap next to a fold pass, but a pathological chain of
# transactions sharing keys one by one would need as many joins as transactions.
MAX_COMPONENT_ITERATIONS = 16


class _TransactionGraph:
    """The fold's transactions and the keyed groups they touch, computed when a pass first
    finds more than one new failure, and kept for the next passes (the same fold input)."""

    def __init__(self, cycle: Cycle, fold_input: DataFrame) -> None:
        self.cycle, self.lcrs = cycle, fold_input.where(F.col("kind") == "LCR")
        self._touches: TouchGraph | None = None
        self._keyless_groups: DataFrame | None = None
        self._components: DataFrame | _Unlabelled | None = None

    @property
    def keyed_touches(self) -> DataFrame:
        """(transaction, commit_scn, silver_table, group_id) of the fold's keyed LCRs."""
        return self.touches().touches

    @property
    def keyless_groups(self) -> DataFrame:
        """(silver_table, group_id) of the fold's keyless LCRs (``STATIC_GROUP``)."""
        if self._keyless_groups is None:
            self._keyless_groups = materialize(
                self.lcrs.where(F.col("group_id") == STATIC_GROUP).select(*_GROUP).distinct()
            )
        return self._keyless_groups

    def touches(self) -> TouchGraph:
        if self._touches is None:
            self._touches = TouchGraph(
                materialize(
                    self.lcrs.where(F.col("group_id") != STATIC_GROUP)
                    .select(*TRANSACTION_KEY, "commit_scn", "silver_table", "group_id")
                    .distinct()
                ),
                MAX_COMPONENT_ITERATIONS,
            )
        return self._touches

    def components(self) -> DataFrame | _Unlabelled:
        if self._components is None:
            labelled = transaction_components(self.lcrs, MAX_COMPONENT_ITERATIONS)
            if labelled is None:
                self.cycle.progress(
                    "transactions too entangled to label: one new failure per fold pass"
                )
                self._components = _Unlabelled()
            else:
                self._components = materialize(labelled)
        return self._components


def _certain_failures(
    graph: _TransactionGraph, new_failures: list[Any]
) -> dict[tuple[str, str], Any]:
    """The new failures a pass has proven (``new_failures`` in apply order): those no other new
    failure reaches forward in commit order through shared groups (``seeds_reached``); when the
    chains are too long to follow, the earliest of each component of transactions that share
    groups, or only the earliest of all when the components are unknown too."""
    first = new_failures[0]
    if len(new_failures) == 1:
        return {(first.source_database_name, first.transaction_id): first}
    # Where each failed, the pass rolled it back already: it reaches nothing through that group
    # unless another failure reaches it.
    reached = graph.touches().seeds_reached(
        [
            (e.source_database_name, e.transaction_id, e.silver_table, e.group_id)
            for e in new_failures
        ]
    )
    if reached is not None:
        return {
            (e.source_database_name, e.transaction_id): e
            for e in new_failures
            if (e.source_database_name, e.transaction_id) not in reached
        }
    components = graph.components()
    if not isinstance(components, DataFrame):
        return {(first.source_database_name, first.transaction_id): first}
    wanted = driver_rows(
        graph.cycle.spark,
        [(e.source_database_name, e.transaction_id) for e in new_failures],
        TRANSACTION_KEY,
    )
    component_of = {
        (r.source_database_name, r.transaction_id): r.component
        for r in components.join(F.broadcast(wanted), list(TRANSACTION_KEY)).collect()
    }
    certain: dict[tuple[str, str], Any] = {}
    seen: set[str] = set()
    for error in new_failures:  # the failures of a pass, not LCRs: few
        key = (error.source_database_name, error.transaction_id)
        # A transaction with only keyless LCRs shares no rows: its failure is certain alone.
        component = component_of.get(key, "\u0000" + repr(key))
        if component not in seen:
            seen.add(component)
            certain[key] = error
    return certain
