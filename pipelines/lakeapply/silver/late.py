"""Late and out-of-order input: what arrives after the apply has passed the point it belonged to.

The apply groups a transaction's LCRs across batches and cycles, and applies it once its COMMIT
has landed (rule 1), in commit-SCN order (rule 4). Two kinds of input arrive too late for that,
and neither may be silently lost or silently applied out of order:

* **late LCRs**: row LCRs of a transaction whose COMMIT was processed in an earlier cycle (its
  COMMIT landed before them). The transaction was applied (or queued) without them; applying them
  now, alone, would apply half a transaction after later ones. They go to the error queue as an
  error transaction of their own (``ORA-20001``), under the transaction's id and commit SCN.
* **a late COMMIT**: a transaction whose COMMIT lands after the apply's low watermark passed its
  commit SCN (the watermark promises everything at or below it is processed). Applying it now
  would put it after transactions that committed after it. The whole transaction goes to the
  error queue (``ORA-20002``) instead of being applied.

LCRs that land after their transaction's ROLLBACK was processed are neither: a rolled-back
transaction is never applied (rule 1), so they leave the spill at once, as the rest of it did,
and stay in bronze; the cycle reports how many (``lakeapply apply``'s progress).

Why the error queue and not the quarantine: the quarantine holds lines that break the LCR
contract, one line at a time, with no transaction and no way back; these LCRs are valid, belong
to a transaction, and the DBA's tools for a transaction that could not be applied in order are
the error queue's (DBA_APPLY_ERROR and its messages, EXECUTE_ERROR, DELETE_ERROR). The numbers
are in Oracle's user-defined range (20000 to 20999, what RAISE_APPLICATION_ERROR raises):
Oracle's apply has no error for input that arrives out of order, because its capture never sends
any. Transactions already processed (redelivered ones) are not late input: they are never
flagged here. Nor are copies: a late LCR identical (every contract field) to one that landed
before the cycle's input is the capture sending it again (rule 11), not a change the apply
missed; it leaves the spill and changes nothing. Telling the two apart reads the earlier bronze
of the transactions concerned, which a cycle pays only when it has late LCRs at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import quote
from lakeapply.contract.lcr import lcr_bronze_fields
from lakeapply.silver.transactions import TRANSACTION_KEY

LATE_LCRS_ERROR = 20001
LATE_COMMIT_ERROR = 20002
# On a processed transaction (processed_before / rolled_back_before): its ROLLBACK was processed.
ROLLED_BACK_FLAG = "rolled_back"


@dataclass(frozen=True)
class LateInput:
    """What a cycle found late: transactions whose late LCRs leave the spill for the error
    queue, and the late COMMITs the fold must treat as failed from the start."""

    # source_database_name, transaction_id, commit_scn (as applied), applied_cycle: the
    # processed transactions with LCRs in the cycle's input that are not copies (error queue)
    late_lcr_transactions: DataFrame
    # (source database, transaction id) -> the error (the fields of a fold error row)
    late_commits: dict[tuple[str, str], Any]
    # every processed transaction with LCRs in the cycle's input, late or copies: they leave
    # the spill (None: the same as late_lcr_transactions)
    settled_transactions: DataFrame | None = None
    # the late LCRs themselves, copies left out (None: every LCR of late_lcr_transactions)
    late_lcrs: DataFrame | None = None


def processed_before(transactions_table: DataFrame, apply_name: str, cycle_id: int) -> DataFrame:
    """Every transaction a committed earlier cycle of this apply processed (applied, ignored or
    queued), once, with its commit SCN and cycle. Rows of the current cycle (a resumed one wrote
    them before it crashed) do not count: the cycle is re-derived from the same inputs."""
    return (
        transactions_table.where(
            (F.col("apply_name") == apply_name) & (F.col("cycle_id") < cycle_id)
        )
        .groupBy(F.col("source_database").alias("source_database_name"), "transaction_id")
        .agg(
            F.max("commit_scn").alias("commit_scn"),
            F.max("cycle_id").alias("applied_cycle"),
            F.lit(False).alias(ROLLED_BACK_FLAG),
        )
    )


def rolled_back_before(rolled_back_table: DataFrame, apply_name: str, cycle_id: int) -> DataFrame:
    """Every transaction whose ROLLBACK a committed earlier cycle of this apply processed, in the
    shape of :func:`processed_before` (no commit SCN; ``applied_cycle`` is the ROLLBACK's
    cycle) with ``rolled_back`` true."""
    return (
        rolled_back_table.where(
            (F.col("apply_name") == apply_name) & (F.col("cycle_id") < cycle_id)
        )
        .groupBy(F.col("source_database").alias("source_database_name"), "transaction_id")
        .agg(
            F.lit(None).cast("long").alias("commit_scn"),
            F.max("cycle_id").alias("applied_cycle"),
            F.lit(True).alias(ROLLED_BACK_FLAG),
        )
    )


def find_late_input(
    spark: SparkSession,
    lcrs: DataFrame,
    transactions: DataFrame,
    processed: DataFrame,
    staged: DataFrame,
    low_watermarks: Mapping[str, int | None],
    arrived: str,
) -> LateInput:
    """Late LCRs and late COMMITs among this cycle's input.

    ``lcrs`` are the new bronze LCRs and the spill (``arrived`` is true for the new ones),
    ``transactions`` their assembly, ``processed`` :func:`processed_before`, ``staged`` the
    cycle's messages (for their counts), ``low_watermarks`` each source's low watermark before
    this cycle."""
    late_lcrs = (
        transactions.where(F.col("state") == "OPEN")
        .select(*TRANSACTION_KEY)
        .join(processed, list(TRANSACTION_KEY))
    )
    floors = [(source, int(scn)) for source, scn in low_watermarks.items() if scn is not None]
    if not floors:
        return LateInput(late_lcrs, {})
    floor = spark.createDataFrame(floors, "source_database_name string, low_watermark_before long")
    commits_arrived = (
        lcrs.where(F.col(arrived) & (F.col("command_type") == "COMMIT"))
        .select(*TRANSACTION_KEY)
        .distinct()
    )
    counts = staged.groupBy(*TRANSACTION_KEY).agg(F.count(F.lit(1)).alias("message_count"))
    late_commit_rows = (
        transactions.where(F.col("state") == "COMMITTED")
        .join(commits_arrived, list(TRANSACTION_KEY), "left_semi")
        .join(
            # a ROLLBACK processed before does not exempt a COMMIT from the order check
            processed.where(~F.col(ROLLED_BACK_FLAG)).select(*TRANSACTION_KEY),
            list(TRANSACTION_KEY),
            "left_anti",
        )
        .join(F.broadcast(floor), "source_database_name")
        .where(F.col("commit_scn") < F.col("low_watermark_before"))
        .join(counts, list(TRANSACTION_KEY), "left")
        .select(
            *TRANSACTION_KEY,
            "commit_scn",
            "low_watermark_before",
            F.coalesce("message_count", F.lit(0)).alias("message_count"),
        )
        .collect()  # late COMMITs are exceptional: a handful at most
    )
    return LateInput(
        late_lcrs,
        {
            (r.source_database_name, r.transaction_id): _late_commit_error(r)
            for r in late_commit_rows
        },
    )


IDENTITY = "__lakeapply_lcr_identity"


def lcr_identity() -> Column:
    """What makes two LCR lines the same LCR: every contract field, lineage aside (the same
    change, at the same SCN and position, of the same transaction). A digest, so that the
    equality is null-safe and a join key of one column."""
    return F.sha2(
        F.to_json(
            F.struct(*[F.col(quote(f.name)) for f in lcr_bronze_fields().fields]),
            {"ignoreNullFields": "false"},
        ),
        256,
    )


def without_redelivered_copies(
    late_transaction_lcrs: DataFrame, landed_before: DataFrame, arrived: str
) -> DataFrame:
    """The LCRs of late-LCR transactions (``late_transaction_lcrs``: new ones, ``arrived`` true,
    and any from the spill) less the new ones that are copies of an LCR in ``landed_before``
    (the bronze LCRs ingested before the cycle's input, of any batch)."""
    transactions = late_transaction_lcrs.select(*TRANSACTION_KEY).distinct()
    earlier = (
        landed_before.join(F.broadcast(transactions), list(TRANSACTION_KEY), "left_semi")
        .select(*TRANSACTION_KEY, lcr_identity().alias(IDENTITY))
        .distinct()
        .withColumn("__lakeapply_landed_before", F.lit(True))
    )
    return (
        late_transaction_lcrs.withColumn(IDENTITY, lcr_identity())
        .join(earlier, [*TRANSACTION_KEY, IDENTITY], "left")
        .where(~(F.col(arrived) & F.coalesce("__lakeapply_landed_before", F.lit(False))))
        .select(*late_transaction_lcrs.columns)
    )


def _late_commit_error(row: Any) -> Row:
    return Row(
        source_database_name=row.source_database_name,
        transaction_id=row.transaction_id,
        commit_scn=int(row.commit_scn),
        # The first message is where it stands in the queue (0: a transaction without messages).
        message_number=1 if row.message_count else 0,
        error_number=LATE_COMMIT_ERROR,
        error_message=(
            f"ORA-{LATE_COMMIT_ERROR:05d}: late COMMIT: transaction {row.transaction_id} from "
            f"{row.source_database_name} committed at SCN {row.commit_scn}, below the low "
            f"watermark {row.low_watermark_before} the apply had already passed; not applied, "
            "since applying it now would break commit-SCN order (check it, then re-execute or "
            "delete it)"
        ),
    )


def late_lcr_errors(messages: DataFrame) -> DataFrame:
    """One error transaction per late-LCR transaction with messages: ``messages`` are its late
    messages (``_messages`` of the engine over the late transactions, with ``applied_cycle``)."""
    return messages.groupBy(*TRANSACTION_KEY).agg(
        F.first("commit_scn").alias("commit_scn"),
        F.lit(1).cast("long").alias("failing_message"),
        F.lit(LATE_LCRS_ERROR).cast("long").alias("error_number"),
        F.format_string(
            f"ORA-{LATE_LCRS_ERROR:05d}: late LCRs: %d LCR(s) of transaction %s from %s arrived "
            "after its COMMIT was processed (commit SCN %d, apply cycle %d); they were not "
            "applied",
            F.count(F.lit(1)),
            F.first("transaction_id"),
            F.first("source_database_name"),
            F.first("commit_scn"),
            F.first("applied_cycle"),
        ).alias("error_message"),
        F.count(F.lit(1)).alias("message_count"),
    )
