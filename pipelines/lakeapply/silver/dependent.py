"""commit_serialization = DEPENDENT_TRANSACTIONS: which transactions an abort holds back.

Issue 10 item 6; the engine uses it when a cycle aborts (fold_passes.dependent_fold). Under FULL the transaction that aborts the apply holds back everything committed after it.
Under DEPENDENT_TRANSACTIONS it holds back only what depends on it: a later transaction is held
when it touches a group (one key, or one component of keys linked by key-changing updates, as the
fold groups them) that the aborting transaction or an earlier held transaction touches. A DDL
barrier touches the group ``*`` of its table, which every group of that table matches, so it
holds back everything after it on its table and a held transaction holds back a later DDL (the
engine runs a DDL transaction in a cycle of its own, so it never passes such touches today).

Virtual dependencies (``silver/virtual_dependencies.py``) add touches of their own: a value
dependency's value tuple (linked like a group), an object dependency's CHILD or PARENT side
(linked to the other side only).

Set-based: each iteration joins the groups of held transactions with the touches of the others;
the number of iterations follows the longest chain of dependencies, not the number of
transactions.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lakeapply.silver.components import STATIC_GROUP, commit_order, commits_after
from lakeapply.silver.virtual_dependencies import OBJECT_DEPENDENCY

ALL_KEYS = "*"
TRANSACTION = ["source_database_name", "transaction_id"]


def held_transactions(touches: DataFrame, aborting: DataFrame) -> DataFrame:
    """touches: (source_database_name, transaction_id, commit_scn, silver_table, group_id), one
    row per group a transaction of the cycle touches (group_id ``*`` for a DDL barrier);
    aborting: (source_database_name, transaction_id) of the transaction(s) that abort the apply.
    Returns (source_database_name, transaction_id) of every transaction held back, the aborting
    ones included."""
    # Keyless and discarded LCRs share no row with anything (rule 9): they link nothing.
    touches = (
        touches.where(F.col("group_id") != F.lit(STATIC_GROUP))
        .select(*TRANSACTION, "commit_scn", "silver_table", "group_id")
        .distinct()
    )
    held = aborting.select(*TRANSACTION).distinct().localCheckpoint()
    while True:
        held_groups = touches.join(held, TRANSACTION).select(
            *[F.col(c).alias(f"h_{c}") for c in commit_order("")],
            F.col("silver_table").alias("h_table"),
            F.col("group_id").alias("h_group"),
        )
        # An object dependency links its two sides (child with parent), never a side with
        # itself; every other touch links the same group, and ``*`` every group of its table.
        same_rows = (F.col("silver_table") == F.col("h_table")) & F.when(
            F.col("silver_table").startswith(OBJECT_DEPENDENCY),
            F.col("group_id") != F.col("h_group"),
        ).otherwise(
            (F.col("group_id") == F.col("h_group"))
            | (F.col("group_id") == F.lit(ALL_KEYS))
            | (F.col("h_group") == F.lit(ALL_KEYS))
        )
        newly = (
            touches.join(held_groups, same_rows)
            .where(commits_after("h_", ""))
            .select(*TRANSACTION)
            .distinct()
            .join(held, TRANSACTION, "left_anti")
            .localCheckpoint()
        )
        if newly.limit(1).count() == 0:
            return held
        held = held.unionByName(newly).localCheckpoint()
