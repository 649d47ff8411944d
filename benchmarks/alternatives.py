"""What users would write instead of lakeapply, on the same bronze LCRs (benchmark baselines).

Every function takes the session, the bronze LCR table, the table definitions and a target
database, and writes Delta tables there. None of them has transaction semantics; they are what
``make bench`` measures lakeapply against.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from lakeapply.contract.identifiers import quote
from lakeapply.contract.oracle_types import TypeFamily
from lakeapply.contract.table_definitions import TableDefinition
from lakeapply.runtime.session import delta_maven_coordinate

CHANGE_ORDER = ("commit_scn", "scn", "position")


def _values(column: str) -> Column:
    """array<struct<column_name, ..., value>> -> map<column_name, value>."""
    return F.map_from_entries(
        F.transform(F.col(column), lambda v: F.struct(v["column_name"], v["value"]))
    )


def _typed(definition: TableDefinition, old: Column, new: Column) -> list[Column]:
    """Each column from the after image when it carries it (NULL included), else the before image."""
    typed = []
    for column in definition.columns:
        text = F.when(F.map_contains_key(new, column.name), new[column.name]).otherwise(
            old[column.name]
        )
        if column.oracle_type.family in (TypeFamily.BINARY, TypeFamily.LOB_BINARY):
            value = F.unhex(text)
        else:
            value = text.try_cast(column.oracle_type.spark_type())
        typed.append(value.alias(column.name))
    return typed


def row_changes(bronze_lcrs: DataFrame, definition: TableDefinition) -> DataFrame:
    """The row LCRs of one table as typed rows: op, order columns, and the after image overlaid
    on the before image (the before image for deletes), like a hand-written CDC job does."""
    rows = bronze_lcrs.where(
        (F.col("lcr_kind") == "ROW")
        & (F.col("object_owner") == definition.owner)
        & (F.col("object_name") == definition.name)
    )
    empty = F.create_map().cast("map<string,string>")
    old = F.coalesce(_values("old_values"), empty)
    new = F.when(F.col("command_type") == "DELETE", empty).otherwise(
        F.coalesce(_values("new_values"), empty)
    )
    return rows.select(
        F.col("command_type").alias("op"),
        F.coalesce("commit_scn", "scn").alias("commit_scn"),
        "scn",
        F.coalesce("position", F.lit("")).alias("position"),
        *_typed(definition, old, new),
    )


def _key_match(definition: TableDefinition) -> str:
    return " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in definition.key_columns(()))


def _assignments(definition: TableDefinition) -> dict[str, str | Column]:
    return {quote(c.name): F.col("s." + quote(c.name)) for c in definition.columns}


def target_name(database: str, definition: TableDefinition, prefix: str) -> str:
    table = f"{prefix}{definition.owner.lower()}_{definition.name.lower()}"
    return f"{quote(database)}.{quote(table)}"


def create_targets(
    spark: SparkSession, database: str, tables: Sequence[TableDefinition], prefix: str
) -> None:
    """Empty Delta targets, like the destination tables lakeapply creates at configure time."""
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {quote(database)}")
    for definition in tables:
        spark.createDataFrame([], definition.spark_schema()).write.format("delta").mode(
            "overwrite"
        ).saveAsTable(target_name(database, definition, prefix))


def plain_append(
    spark: SparkSession, bronze_lcrs: DataFrame, tables: Sequence[TableDefinition], database: str
) -> None:
    """The floor: append the same row changes, typed, to one Delta table per source table."""
    for definition in tables:
        name = target_name(database, definition, "floor_")
        row_changes(bronze_lcrs, definition).drop(*CHANGE_ORDER, "op").write.format("delta").mode(
            "append"
        ).saveAsTable(name)


def _merge_latest_per_key(
    spark: SparkSession, name: str, definition: TableDefinition, changes: DataFrame
) -> None:
    """The hand-written CDC MERGE: the latest change per key wins; deletes delete."""
    keys = [quote(k) for k in definition.key_columns(())]
    latest = Window.partitionBy(*keys).orderBy(*[F.desc(c) for c in CHANGE_ORDER])
    newest = changes.withColumn("__rank", F.row_number().over(latest)).where("__rank = 1")
    (
        DeltaTable.forName(spark, name)
        .alias("t")
        .merge(newest.alias("s"), _key_match(definition))
        .whenMatchedDelete(condition="s.op = 'DELETE'")
        .whenMatchedUpdate(set=_assignments(definition))
        .whenNotMatchedInsert(condition="s.op <> 'DELETE'", values=_assignments(definition))
        .execute()
    )


def keyed_dedupe_merge(
    spark: SparkSession, bronze_lcrs: DataFrame, tables: Sequence[TableDefinition], database: str
) -> None:
    """Latest change per key by (commit_scn, scn, position), one MERGE per table."""
    for definition in tables:
        _merge_latest_per_key(
            spark,
            target_name(database, definition, "dedupe_"),
            definition,
            row_changes(bronze_lcrs, definition),
        )


def per_transaction_merge(
    spark: SparkSession,
    bronze_lcrs: DataFrame,
    tables: Sequence[TableDefinition],
    database: str,
    transactions: int,
) -> int:
    """A naive port of Oracle apply: one MERGE per committed transaction and table, in commit
    order, over the first ``transactions`` transactions. Returns the LCRs it applied."""
    definitions = {d.name: d for d in tables}
    committed = (
        bronze_lcrs.where(F.col("command_type") == "COMMIT")
        .select("transaction_id", F.coalesce("commit_scn", "scn").alias("commit_scn"))
        .orderBy("commit_scn")
        .limit(transactions)
        .collect()  # the naive port drives the apply from the driver: that is what it measures
    )
    applied = 0
    rows = bronze_lcrs.where(F.col("lcr_kind") == "ROW")
    for commit in committed:
        in_transaction = rows.where(F.col("transaction_id") == commit.transaction_id)
        touched = [r.object_name for r in in_transaction.select("object_name").distinct().collect()]
        for table_name in touched:
            definition = definitions[table_name]
            _merge_latest_per_key(
                spark,
                target_name(database, definition, "txn_"),
                definition,
                row_changes(in_transaction, definition),
            )
        applied += in_transaction.count()
    return applied


@dataclass(frozen=True)
class PipelineOutcome:
    seconds: float
    error: str | None  # the error class line when the pipeline failed


def auto_cdc(
    spark: SparkSession,
    bronze_lcrs: DataFrame,
    definition: TableDefinition,
    work: Path,
) -> PipelineOutcome:
    """Spark Declarative Pipelines AUTO CDC (SCD type 1) into a Delta streaming table.

    The changes are written to a Delta folder first (not timed); ``spark-pipelines run`` then
    runs in its own process with its own metastore (Derby allows one process per metastore).
    """
    changes_path = work / "auto_cdc_changes"
    row_changes(bronze_lcrs, definition).withColumn(
        "sequence", F.struct(*CHANGE_ORDER)
    ).write.format("delta").mode("overwrite").save(str(changes_path))
    project = work / "auto_cdc_project"
    (project / "transformations").mkdir(parents=True, exist_ok=True)
    (project / "spark-pipeline.yml").write_text(
        textwrap.dedent(
            f"""\
            name: lakeapply_bench_auto_cdc
            storage: file://{project / "storage"}
            catalog: spark_catalog
            database: default
            libraries:
              - glob:
                  include: transformations/**
            """
        )
    )
    (project / "transformations" / "auto_cdc.py").write_text(
        textwrap.dedent(
            f"""\
            from pyspark import pipelines as dp
            from pyspark.sql import SparkSession

            spark = SparkSession.active()


            @dp.temporary_view
            def changes():
                return spark.readStream.format("delta").load({str(changes_path)!r})


            dp.create_streaming_table(name="{definition.name.lower()}", format="delta")
            dp.create_auto_cdc_flow(
                target="{definition.name.lower()}",
                source="changes",
                keys={list(definition.key_columns(()))!r},
                sequence_by="sequence",
                apply_as_deletes="op = 'DELETE'",
                except_column_list=["op", "sequence", "commit_scn", "scn", "position"],
                stored_as_scd_type=1,
            )
            """
        )
    )
    warehouse = work / "auto_cdc_warehouse"
    submit = [
        "--packages", delta_maven_coordinate(),
        "--conf", f"spark.jars.ivy={Path.home() / '.ivy2.5.2'}",
        "--conf", "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension",
        "--conf", "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "--conf", f"spark.sql.warehouse.dir={warehouse / 'tables'}",
        "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
        f"jdbc:derby:;databaseName={warehouse / 'metastore_db'};create=true",
        "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={warehouse}",
        "--conf", "spark.sql.catalogImplementation=hive",
        "--conf", f"spark.sql.shuffle.partitions={spark.conf.get('spark.sql.shuffle.partitions')}",
        "--conf", "spark.ui.enabled=false",
        "--driver-memory", "2g",
    ]  # fmt: skip
    environment = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        # The CLI starts its local Spark Connect server through launch_gateway, which reads only this.
        "PYSPARK_SUBMIT_ARGS": " ".join(shlex.quote(a) for a in submit) + " pyspark-shell",
    }
    cli = Path(sys.executable).with_name("spark-pipelines")
    started = time.perf_counter()
    result = subprocess.run(
        [str(cli), *submit, "run", "--spec", str(project / "spark-pipeline.yml")],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if result.returncode == 0:
        return PipelineOutcome(seconds, None)
    lines = (result.stdout + result.stderr).strip().splitlines() or ["(no output)"]
    # The last "...Exception: [ERROR_CLASS] ..." line is the cause; warnings also carry classes.
    errors = [
        found.group(0)
        for line in lines
        if "Exception" in line and (found := re.search(r"\[[A-Z_]+\].*", line))
    ]
    return PipelineOutcome(seconds, errors[-1] if errors else lines[-1])
