"""Where lakeapply's tables live: database names and the thin helpers that create them."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.contract.identifiers import (
    needs_column_mapping,
    quote,
    quote_qualified,
    split_qualified,
    sql_string_literal,
    validate_spark_name,
)
from lakeapply.errors import LakeapplyError
from lakeapply.runtime.concurrency import side_by_side
from lakeapply.runtime.retry import is_concurrent_modification


@dataclass(frozen=True)
class Catalog:
    """The databases lakeapply writes. A prefix lets several environments share one metastore.

    ``catalog`` (Unity Catalog, or any Spark catalog) makes every table name three-part,
    ``catalog.<prefix>_silver.table``; without it names are two-part and resolve in the
    session's current catalog (the local Hive metastore). ``bronze``, ``silver``, ``apply`` and
    ``gold`` are the schema names alone; :meth:`database` and the ``*_table`` methods qualify.
    """

    prefix: str = "lakeapply"
    catalog: str | None = None

    def __post_init__(self) -> None:
        validate_spark_name(self.prefix, "catalog prefix")
        if self.catalog is not None:
            validate_spark_name(self.catalog, "catalog")

    @property
    def bronze(self) -> str:
        return f"{self.prefix}_bronze"

    @property
    def silver(self) -> str:
        return f"{self.prefix}_silver"

    @property
    def apply(self) -> str:
        """The apply dictionary: settings, progress, error queue, cycles."""
        return f"{self.prefix}_apply"

    @property
    def gold(self) -> str:
        """The dbt views named like Oracle's (DBA_APPLY_PROGRESS, ...)."""
        return f"{self.prefix}_gold"

    def database(self, schema: str) -> str:
        """A schema of this catalog, quoted: ```catalog`.`schema``` or ```schema```."""
        return quote_qualified(*self._namespace, schema)

    def table(self, schema: str, name: str) -> str:
        """A table of one of lakeapply's schemas, quoted and qualified (three-part in a catalog)."""
        return quote_qualified(*self._namespace, schema, name)

    def bronze_table(self, name: str) -> str:
        return self.table(self.bronze, name)

    def silver_table(self, name: str) -> str:
        return self.table(self.silver, validate_spark_name(name, "silver table"))

    def apply_table(self, name: str) -> str:
        return self.table(self.apply, name)

    def gold_table(self, name: str) -> str:
        return self.table(self.gold, name)

    @property
    def _namespace(self) -> tuple[str, ...]:
        return () if self.catalog is None else (self.catalog,)


# Delta column mapping by name: the logical (Oracle) column names live in the Delta log only,
# the Parquet files use generated physical names. Needs reader 2 / writer 5.
COLUMN_MAPPING_OPTIONS = {
    "delta.columnMapping.mode": "name",
    "delta.minReaderVersion": "2",
    "delta.minWriterVersion": "5",
}

# A committed Delta version: a commit file, a checkpoint or a compacted commit range.
_COMMITTED = re.compile(r"^\d{20}\.(json|checkpoint(\.\d+\.\d+)?(\.[0-9a-f-]+)?\.(parquet|json))$")
_COMPACTED = re.compile(r"^\d{20}\.\d{20}\.compacted\.json$")


class TableLocationError(LakeapplyError):
    """A table's location holds data but the metastore does not know the table."""


def ensure_database(spark: SparkSession, database: str) -> None:
    """Create a database unless it exists: a plain name (``lakeapply_bronze``, in the session's
    current catalog) or a qualified one from :meth:`Catalog.database`."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote_qualified(*split_qualified(database))}")


def _field_names(data_type: T.DataType) -> Iterator[str]:
    if isinstance(data_type, T.StructType):
        for field in data_type.fields:
            yield field.name
            yield from _field_names(field.dataType)
    elif isinstance(data_type, T.ArrayType):
        yield from _field_names(data_type.elementType)
    elif isinstance(data_type, T.MapType):
        yield from _field_names(data_type.keyType)
        yield from _field_names(data_type.valueType)


def schema_needs_column_mapping(schema: T.StructType) -> bool:
    """True when any (nested) column name needs Delta column mapping."""
    return any(needs_column_mapping(name) for name in _field_names(schema))


def ensure_delta_table(
    spark: SparkSession,
    qualified_name: str,
    schema: T.StructType,
    comment: str = "",
    keep_not_null: bool = False,
    cluster_by: tuple[str, ...] = (),
) -> bool:
    """Create an empty Delta table with ``schema`` unless it exists; True when it was created.

    ``qualified_name`` is a quoted database.table (:meth:`Catalog.silver_table` and friends).
    Column names that need it (spaces, ``;``, ``(``, ``=``, ``,``, dots, unicode, ...) make the
    table use Delta column mapping (name mode). Creation is crash-safe: a creation killed midway
    leaves a directory at the table's location that is not a table the metastore knows; it is
    removed first when it holds no data (no committed version, or committed versions that never
    added a file), and a clear error names it otherwise.

    ``keep_not_null``: the schema's NOT NULL columns are NOT NULL in the Delta table (a
    DataFrame write would make every column nullable), so readers outside Spark (delta-rs,
    DuckDB) see them and Delta rejects a NULL written into one.

    ``cluster_by``: Delta liquid clustering on these columns (``silver/layout.py``).
    """
    if spark.catalog.tableExists(qualified_name):
        return False
    location = _managed_location(spark, qualified_name)
    if location is not None:
        remove_interrupted_creation(location, qualified_name)
    # A CREATE TABLE with a column list commits the schema alone; writing an empty DataFrame
    # would also plan and run a Spark job (about twice the time, measured). SQL rather than
    # DeltaTable's builder, whose table-name parser takes no three-part name.
    columns = (schema if keep_not_null else _nullable(schema)).toDDL()
    properties = (
        " TBLPROPERTIES ("
        + ", ".join(
            f"{sql_string_literal(key)} = {sql_string_literal(value)}"
            for key, value in COLUMN_MAPPING_OPTIONS.items()
        )
        + ")"
        if schema_needs_column_mapping(schema)
        else ""
    )
    clustering = (
        f" CLUSTER BY ({', '.join(quote(column) for column in cluster_by)})" if cluster_by else ""
    )
    spark.sql(
        f"CREATE TABLE IF NOT EXISTS {qualified_name} ({columns}) USING delta{clustering}"
        f" COMMENT {sql_string_literal(comment)}{properties}"
    )
    return True


@dataclass(frozen=True)
class TableToCreate:
    """One argument set of :func:`ensure_delta_table`."""

    qualified_name: str
    schema: T.StructType
    comment: str = ""
    keep_not_null: bool = False
    cluster_by: tuple[str, ...] = ()


def ensure_delta_tables(spark: SparkSession, tables: Iterable[TableToCreate]) -> set[str]:
    """:func:`ensure_delta_table` for each of ``tables``, several at a time (a first run
    creates a score of tables; one after the other that was most of a small run's time).
    A name given twice (several source databases into one silver table) is created once, from
    its first entry: two concurrent creations of one table conflict in Delta's log.

    Returns the names (as given) of the tables this call created: they are empty, so a caller
    can skip reading them (each first read of a Delta table costs a Spark job or two)."""
    first: dict[str, TableToCreate] = {}
    for table in tables:
        first.setdefault(table.qualified_name.lower(), table)  # the metastore ignores case
    listed = _listed_tables(spark, {split_qualified(name)[:-1] for name in first})
    missing = [table for name, table in first.items() if split_qualified(name) not in listed]
    created = side_by_side(
        [
            partial(
                ensure_delta_table,
                spark,
                table.qualified_name,
                table.schema,
                table.comment,
                table.keep_not_null,
                table.cluster_by,
            )
            for table in missing
        ]
    )
    return {table.qualified_name for table, made in zip(missing, created, strict=True) if made}


# Bookkeeping tables (an apply's cycles, outcomes and progress; bronze's ingest log) get a
# file or two per cycle or batch, and every cycle reads them whole: a read of a 400-file table
# took 1.9 s, 0.46 s once compacted (2-core machine, 2026-12-04). Compacting every this many
# cycles (or ingest batches) bounds that. Delta's own auto compaction was tried first: it
# compacted after nearly every write of a small table.
BOOKKEEPING_COMPACTION_INTERVAL = 20


def compaction_due(sequence_number: int) -> bool:
    """Whether the cycle or ingest batch ``sequence_number`` compacts its bookkeeping tables."""
    return sequence_number > 0 and sequence_number % BOOKKEEPING_COMPACTION_INTERVAL == 0


def compact_small_files(spark: SparkSession, qualified_names: Iterable[str]) -> list[str]:
    """OPTIMIZE each of ``qualified_names`` that exists: its small files bin-packed into few,
    rows unchanged (a Delta commit without data change: readers, time travel and idempotent
    writers are unaffected). Compaction is optional, so one that loses a commit race with
    another writer is skipped (the next one catches up); returns the tables it compacted."""
    names = list(qualified_names)
    compacted = []
    for name in sorted(existing_tables(spark, names), key=names.index):
        try:
            spark.sql(f"OPTIMIZE {name}").collect()
        except Exception as error:
            if not is_concurrent_modification(error):
                raise
            continue
        compacted.append(name)
    return compacted


def existing_tables(spark: SparkSession, qualified_names: Iterable[str]) -> set[str]:
    """Which of ``qualified_names`` (as :meth:`Catalog.apply_table` and friends give them)
    exist: one metastore listing per database."""
    names = list(qualified_names)
    listed = _listed_tables(spark, {split_qualified(name.lower())[:-1] for name in names})
    return {
        name
        for name in names
        if split_qualified(name.lower()) in listed or spark.catalog.tableExists(name)
    }


def _listed_tables(
    spark: SparkSession, databases: Iterable[tuple[str, ...]]
) -> set[tuple[str, ...]]:
    """The (lower-case) qualified parts of the tables in ``databases``: one metastore call per
    database instead of one per table (~0.15 s each, and a run checks a score of tables several
    times). A database that cannot be listed lists nothing: its tables are then checked one by
    one, as before."""
    listed: set[tuple[str, ...]] = set()
    for database in databases:
        if not database:
            continue
        try:
            rows = spark.sql(f"SHOW TABLES IN {quote_qualified(*database)}").collect()
        except PySparkException:
            continue
        listed |= {
            (*database, str(row["tableName"]).lower()) for row in rows if not row["isTemporary"]
        }
    return listed


def _nullable(data_type: T.StructType) -> T.StructType:
    """``data_type`` with every (nested) field nullable, as a DataFrame write would create it."""
    return T.StructType(
        [
            T.StructField(field.name, _nullable_type(field.dataType), True, field.metadata)
            for field in data_type.fields
        ]
    )


def _nullable_type(data_type: T.DataType) -> T.DataType:
    if isinstance(data_type, T.StructType):
        return _nullable(data_type)
    if isinstance(data_type, T.ArrayType):
        return T.ArrayType(_nullable_type(data_type.elementType), True)
    if isinstance(data_type, T.MapType):
        return T.MapType(data_type.keyType, _nullable_type(data_type.valueType), True)
    return data_type


def _managed_location(spark: SparkSession, qualified_name: str) -> Path | None:
    """The local folder a managed table ``database.table`` is created in; None when the database
    is not on the local file system (then the metastore, not lakeapply, owns the location)."""
    parts = split_qualified(qualified_name)
    if len(parts) != 2:
        return None
    database, table = parts
    uri = spark.catalog.getDatabase(database).locationUri
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return Path(unquote(parsed.path)) / table.lower()


def _committed_files(log: Path) -> list[Path]:
    if not log.is_dir():
        return []
    return sorted(
        path for path in log.iterdir() if _COMMITTED.match(path.name) or _COMPACTED.match(path.name)
    )


def _adds_data(commit: Path) -> bool:
    """True unless ``commit`` is a JSON commit whose actions add no file."""
    if not commit.name.endswith(".json"):
        return True  # a checkpoint: only written for tables with history; keep
    for line in commit.read_text(encoding="utf-8").splitlines():
        if line.strip() and "add" in json.loads(line):
            return True
    return False


def remove_interrupted_creation(location: Path, qualified_name: str) -> bool:
    """Remove what a killed table creation left at ``location`` (the table is not in the
    metastore). Only a folder without data goes: no committed Delta version (stray files, a
    ``_delta_log`` without a commit), or committed versions that add no file (an empty table
    whose metastore entry was never written). A folder with data raises TableLocationError.
    True when something was removed."""
    if not location.exists():
        return False
    committed = _committed_files(location / "_delta_log")
    if any(_adds_data(commit) for commit in committed):
        raise TableLocationError(
            f"table {qualified_name} is not in the metastore but its location {location} holds "
            "a Delta table with data: register it or move it away, lakeapply will not delete it"
        )
    if location.is_dir():
        shutil.rmtree(location)
    else:
        location.unlink()
    return True
