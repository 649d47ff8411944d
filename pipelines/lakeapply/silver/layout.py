"""Destination files laid out by key (issue 16: cost follows the changes, not the table size).

A cycle reads the current rows of the keys it changes, and its MERGE finds the rows to change,
with a literal range on the first key column (``keys.KeyBounds``): Delta skips every file whose
column statistics lie outside it. That prunes only when each file holds a narrow range of that
column, so lakeapply creates every destination table with Delta liquid clustering on it
(``CLUSTER BY``), and ``optimize_destinations`` (``lakeapply optimize``, the bundle's optimize
job) re-clusters the files that writes left unclustered and realigns a table whose key changed
(a substitute key set with SET_KEY_COLUMNS, a table made before lakeapply clustered its tables).

Only the first key column is clustered: it is the only one the range prunes on, and liquid
clustering on several columns spreads each one's values over more files. A first key column
without a useful order for the range (``keys.RANGE_FAMILIES``: RAW, TIMESTAMP WITH TIME ZONE,
INTERVAL...) or beyond the columns Delta keeps statistics for leaves the table unclustered.
"""

from __future__ import annotations

from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lakeapply.contract.identifiers import quote
from lakeapply.runtime.catalog import Catalog, existing_tables
from lakeapply.runtime.retry import is_concurrent_modification
from lakeapply.silver.keys import RANGE_FAMILIES
from lakeapply.silver.settings import ApplySettings, DestinationTable

# Delta collects file statistics for the first 32 columns (delta.dataSkippingNumIndexedCols),
# and refuses a clustering column it keeps none for.
STATISTICS_COLUMNS = 32


def clustering_columns(table: DestinationTable) -> tuple[str, ...]:
    """The clustering of ``table``'s Delta table: its first key column, or none (see above)."""
    definition = table.definition
    first = table.effective_key[0] if table.effective_key else None
    if first is None or first not in definition.column_names:
        return ()
    if definition.column_names.index(first) >= STATISTICS_COLUMNS:
        return ()
    if definition.column(first).oracle_type.family not in RANGE_FAMILIES:
        return ()
    return (first,)


def cluster_by_clause(columns: tuple[str, ...]) -> str:
    """``CLUSTER BY (...)`` of CREATE / ALTER TABLE; ``CLUSTER BY NONE`` for no clustering."""
    return f"CLUSTER BY ({', '.join(quote(c) for c in columns)})" if columns else "CLUSTER BY NONE"


def unquoted_column(name: str) -> str:
    """A column of Delta's ``clusteringColumns`` (DESCRIBE DETAIL quotes the names that need it,
    `` `a b` ``) as the plain name."""
    if len(name) >= 2 and name.startswith("`") and name.endswith("`"):
        return name[1:-1].replace("``", "`")
    return name


@dataclass(frozen=True)
class TableLayout:
    """What ``optimize_destinations`` did to one destination table."""

    silver_table: str
    clustering: tuple[str, ...]  # after it
    reclustered: bool  # the clustering columns were changed to ``clustering``
    optimized: bool  # OPTIMIZE committed (False: the table is partitioned, or lost a race)
    note: str = ""


def optimize_destinations(
    spark: SparkSession, catalog: Catalog, settings: ApplySettings
) -> list[TableLayout]:
    """Each destination table of ``settings`` clustered on its key's first column (changed
    when its key or its clustering differs) and OPTIMIZEd: liquid clustering rewrites only the
    files not yet clustered, so the cost follows what was written since the last run. A
    partitioned table (made outside lakeapply) is left as it is: Delta clusters none. A commit
    race with an apply cycle skips the table (OPTIMIZE changes no data; the next run does it)."""
    tables: dict[str, DestinationTable] = {}
    for table in settings.tables:  # several sources into one table: the first, as created
        if not table.dropped:
            tables.setdefault(table.silver_table, table)
    names = {catalog.silver_table(name): table for name, table in tables.items()}
    present = existing_tables(spark, names)
    done = []
    for name, table in names.items():
        if name not in present:
            continue
        detail = DeltaTable.forName(spark, name).detail().collect()[0]
        if detail.partitionColumns:
            done.append(
                TableLayout(table.silver_table, (), False, False, "partitioned: not clustered")
            )
            continue
        wanted = clustering_columns(table)
        current = tuple(unquoted_column(c) for c in detail.clusteringColumns or ())
        if current != wanted:
            spark.sql(f"ALTER TABLE {name} {cluster_by_clause(wanted)}")
        try:
            spark.sql(f"OPTIMIZE {name}").collect()
        except Exception as error:
            if not is_concurrent_modification(error):
                raise
            done.append(
                TableLayout(table.silver_table, wanted, current != wanted, False, "busy: skipped")
            )
            continue
        done.append(TableLayout(table.silver_table, wanted, current != wanted, True))
    return done
