"""The ``lakeapply`` command line: thin wrappers over the pipeline functions."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from lakeapply.errors import LakeapplyError

console = Console(stderr=True)


@dataclass(frozen=True)
class CliContext:
    warehouse: Path
    catalog_prefix: str


@contextmanager
def progress_steps(description: str) -> Iterator[Callable[[str], None]]:
    """A spinner with the current step; long work reports steps through the callback."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description)
        yield lambda step: progress.update(task, description=f"{description}: {step}")


def _spark(ctx: CliContext) -> Any:
    from lakeapply.runtime.session import LocalSparkSettings, get_spark

    with progress_steps("starting Spark (first run downloads the Delta jars)"):
        return get_spark(LocalSparkSettings(ctx.warehouse))


def _catalog(ctx: CliContext) -> Any:
    from lakeapply.runtime.catalog import Catalog

    return Catalog(ctx.catalog_prefix)


class LakeapplyGroup(click.Group):
    """Turns every LakeapplyError into one clear line and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except LakeapplyError as error:
            console.print(f"[red]error:[/red] {error}")
            sys.exit(1)


@click.group(cls=LakeapplyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--warehouse",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("warehouse"),
    envvar="LAKEAPPLY_WAREHOUSE",
    show_default=True,
    help="Local warehouse folder (Delta tables and the Derby metastore). Env: LAKEAPPLY_WAREHOUSE.",
)
@click.option(
    "--catalog-prefix",
    default="lakeapply",
    envvar="LAKEAPPLY_CATALOG_PREFIX",
    show_default=True,
    help="Prefix of the databases: <prefix>_bronze, <prefix>_silver, <prefix>_apply.",
)
@click.pass_context
def main(ctx: click.Context, warehouse: Path, catalog_prefix: str) -> None:
    """lakeapply: Oracle Streams apply semantics for Delta Lake (landing -> bronze -> silver -> gold)."""
    ctx.obj = CliContext(warehouse, catalog_prefix)


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Landing folder to write LCR files into.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--transactions", type=int, default=1000, show_default=True)
@click.option("--synthetic-tables", type=int, default=2, show_default=True)
@click.option(
    "--sources",
    default="DBS1.EXAMPLE.COM",
    show_default=True,
    help="Comma-separated source database names.",
)
@click.option("--files-per-source", type=int, default=4, show_default=True)
@click.option("--bad-line-ratio", type=float, default=0.0, show_default=True)
@click.option("--conflict-ratio", type=float, default=0.0, show_default=True)
@click.option(
    "--sample-scenario/--no-sample-scenario",
    default=True,
    show_default=True,
    help="Include the STUDENT/COURSE scenario of the GoldenGate redo document.",
)
@click.option("--gzip", "compress", is_flag=True, help="Write .jsonl.gz files.")
def generate(
    out: Path,
    seed: int,
    transactions: int,
    synthetic_tables: int,
    sources: str,
    files_per_source: int,
    bad_line_ratio: float,
    conflict_ratio: float,
    sample_scenario: bool,
    compress: bool,
) -> None:
    """Write a deterministic OLTP-like LCR workload (JSON Lines, the LCR contract)."""
    from lakeapply.landing.generator import WorkloadSpec, write_workload

    spec = WorkloadSpec(
        seed=seed,
        transactions=transactions,
        synthetic_tables=synthetic_tables,
        source_databases=tuple(s.strip() for s in sources.split(",") if s.strip()),
        files_per_source=files_per_source,
        bad_line_ratio=bad_line_ratio,
        conflict_ratio=conflict_ratio,
        include_sample_scenario=sample_scenario,
    )
    with progress_steps("generating"):
        workload = write_workload(spec, out, compress=compress)
    click.echo(
        f"wrote {workload.line_count} lines ({workload.bad_line_count} bad) in "
        f"{len(workload.files)} files under {out}: {workload.committed_transactions} committed, "
        f"{workload.rolled_back_transactions} rolled back, {workload.open_transactions} open "
        "transactions"
    )


@main.command()
@click.option(
    "--landing",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="Folder of .jsonl / .jsonl.gz LCR files (searched recursively).",
)
@click.pass_obj
def ingest(obj: CliContext, landing: Path) -> None:
    """Land new LCR lines into bronze, exactly once (bad lines go to the quarantine)."""
    from lakeapply.bronze.ingest import ingest as run_ingest

    spark = _spark(obj)
    with progress_steps("ingesting") as step:
        report = run_ingest(spark, _catalog(obj), landing, progress=step)
    if report.batch_id is None:
        click.echo("nothing new to ingest")
        return
    click.echo(
        f"ingest batch {report.batch_id}{' (resumed)' if report.resumed else ''}: "
        f"{report.lines} lines from {len(report.files)} files -> {report.bronze_rows} bronze, "
        f"{report.quarantined_rows} quarantined"
    )


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_obj
def status(obj: CliContext, as_json: bool) -> None:
    """Show what bronze (and, once applied, silver) holds."""
    from lakeapply.status import collect_status, render_status

    report = collect_status(_spark(obj), _catalog(obj))
    if as_json:
        click.echo(json.dumps(asdict(report), indent=2, default=str))
    else:
        render_status(report, Console())


@main.command()
@click.option(
    "--landing",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("landing"),
    show_default=True,
)
@click.option("--seed", type=int, default=7, show_default=True)
@click.option("--transactions", type=int, default=2000, show_default=True)
@click.pass_obj
def run(obj: CliContext, landing: Path, seed: int, transactions: int) -> None:
    """The demo job: generate sample LCRs (if the landing folder is empty), ingest, summarize."""
    from lakeapply.jobs import run_demo

    run_demo(obj.warehouse, obj.catalog_prefix, landing, seed, transactions, Console())


def _apply_settings(spark: Any, catalog: Any, apply_name: str | None) -> Any:
    """The effective settings from the dictionary tables (the only apply, if none is named)."""
    from lakeapply.errors import ConfigurationError
    from lakeapply.silver import tables as dictionary
    from lakeapply.silver.admin import load_settings
    from lakeapply.silver.engine import ensure_apply_tables

    ensure_apply_tables(spark, catalog)
    if apply_name is None:
        names = [
            r.apply_name
            for r in spark.table(catalog.apply_table(dictionary.APPLY_PROCESSES))
            .select("apply_name")
            .orderBy("apply_name")
            .collect()
        ]
        if len(names) != 1:
            raise ConfigurationError(
                f"{len(names)} apply processes are configured ({', '.join(names) or 'none'}): "
                "name one with --apply-name, or run `lakeapply configure` first"
            )
        apply_name = names[0]
    return load_settings(spark, catalog, apply_name)


@main.command()
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=Path("lakeapply.yml"),
    show_default=True,
)
@click.pass_obj
def configure(obj: CliContext, config: Path) -> None:
    """Publish the apply processes of lakeapply.yml into the dictionary tables (replaces them)."""
    from lakeapply.silver.admin import publish_settings
    from lakeapply.silver.config import load_config

    processes = load_config(config)
    spark = _spark(obj)
    for settings in processes:
        publish_settings(spark, _catalog(obj), settings)
        click.echo(f"configured {settings.apply_name}: {len(settings.tables)} destination tables")


@main.command()
@click.option("--apply-name", default=None, help="Which apply process (default: the only one).")
@click.pass_obj
def apply(obj: CliContext, apply_name: str | None) -> None:
    """Apply committed transactions from bronze to the silver tables (Oracle apply semantics)."""
    from lakeapply.silver.engine import run_apply

    spark = _spark(obj)
    settings = _apply_settings(spark, _catalog(obj), apply_name)
    with progress_steps(f"applying {settings.apply_name}") as step:
        reports = run_apply(spark, _catalog(obj), settings, progress=step)
    if not reports:
        click.echo(f"{settings.apply_name}: nothing new to apply")
    for report in reports:
        click.echo(
            f"{report.apply_name} cycle {report.cycle_id}{' (resumed)' if report.resumed else ''}: "
            f"{report.applied} applied, {report.ignored} ignored, {report.errors} errors, "
            f"{report.rolled_back} rolled back; low watermarks {report.low_watermarks}"
            + (
                "; ABORTED (see DBA_APPLY_ERROR, then `lakeapply admin start-apply`)"
                if report.aborted
                else ""
            )
        )


@main.command()
@click.option("--apply-name", required=True)
@click.option("--source-database", required=True)
@click.option("--object", "object_name", required=True, help="OWNER.NAME of the source table.")
@click.option("--scn", type=int, required=True, help="Instantiation SCN (the SCN of the copy).")
@click.option(
    "--export",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="Initial copy of the source table to load.",
)
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["parquet", "csv", "json"]),
    default="parquet",
    show_default=True,
)
@click.pass_obj
def instantiate(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    scn: int,
    export: Path | None,
    export_format: str,
) -> None:
    """Create a destination table, load an initial copy, set its instantiation SCN."""
    from lakeapply.silver import admin

    admin.instantiate(
        _spark(obj),
        _catalog(obj),
        apply_name,
        source_database,
        object_name,
        scn,
        export,
        export_format,
    )
    click.echo(f"instantiated {source_database} {object_name} at SCN {scn}")


@main.group(name="admin")
def admin_group() -> None:
    """DBMS_APPLY_ADM: change an apply process's settings at run time (dictionary tables)."""


def _admin_call(obj: CliContext, name: str, *args: Any) -> None:
    from lakeapply.silver import admin

    getattr(admin, name)(_spark(obj), _catalog(obj), *args)
    click.echo(f"{name.upper()} done")


def _columns(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


@admin_group.command("start-apply")
@click.argument("apply_name")
@click.pass_obj
def start_apply_command(obj: CliContext, apply_name: str) -> None:
    """START_APPLY (after an abort: resumes after the failed transaction)."""
    _admin_call(obj, "start_apply", apply_name)


@admin_group.command("stop-apply")
@click.argument("apply_name")
@click.pass_obj
def stop_apply_command(obj: CliContext, apply_name: str) -> None:
    """STOP_APPLY."""
    _admin_call(obj, "stop_apply", apply_name)


@admin_group.command("set-parameter")
@click.argument("apply_name")
@click.argument("parameter")
@click.argument("value")
@click.pass_obj
def set_parameter_command(obj: CliContext, apply_name: str, parameter: str, value: str) -> None:
    """SET_PARAMETER: COMMIT_SERIALIZATION, DISABLE_ON_ERROR, MAX_CYCLE_BATCHES, ..."""
    _admin_call(obj, "set_parameter", apply_name, parameter, value)


@admin_group.command("set-key-columns")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns", default="")
@click.pass_obj
def set_key_columns_command(
    obj: CliContext, apply_name: str, source_database: str, object_name: str, columns: str
) -> None:
    """SET_KEY_COLUMNS: comma-separated substitute key; empty removes it."""
    _admin_call(
        obj, "set_key_columns", apply_name, source_database, object_name, _columns(columns) or None
    )


@admin_group.command("set-table-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("scn", type=int)
@click.pass_obj
def set_table_scn_command(
    obj: CliContext, apply_name: str, source_database: str, object_name: str, scn: int
) -> None:
    """SET_TABLE_INSTANTIATION_SCN."""
    _admin_call(obj, "set_table_instantiation_scn", apply_name, source_database, object_name, scn)


@admin_group.command("set-schema-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("source_schema")
@click.argument("scn", type=int)
@click.pass_obj
def set_schema_scn_command(
    obj: CliContext, apply_name: str, source_database: str, source_schema: str, scn: int
) -> None:
    """SET_SCHEMA_INSTANTIATION_SCN."""
    _admin_call(
        obj, "set_schema_instantiation_scn", apply_name, source_database, source_schema, scn
    )


@admin_group.command("set-global-instantiation-scn")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("scn", type=int)
@click.pass_obj
def set_global_scn_command(
    obj: CliContext, apply_name: str, source_database: str, scn: int
) -> None:
    """SET_GLOBAL_INSTANTIATION_SCN."""
    _admin_call(obj, "set_global_instantiation_scn", apply_name, source_database, scn)


@admin_group.command("compare-old-values")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns")
@click.option(
    "--operation", type=click.Choice(["UPDATE", "DELETE", "*"]), default="UPDATE", show_default=True
)
@click.option("--compare/--no-compare", default=False, show_default=True)
@click.pass_obj
def compare_old_values_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    columns: str,
    operation: str,
    compare: bool,
) -> None:
    """COMPARE_OLD_VALUES: switch conflict detection for columns on or off."""
    _admin_call(
        obj,
        "compare_old_values",
        apply_name,
        source_database,
        object_name,
        _columns(columns),
        operation,
        compare,
    )


@admin_group.command("set-update-conflict-handler")
@click.argument("apply_name")
@click.argument("source_database")
@click.argument("object_name")
@click.argument("columns")
@click.option(
    "--method",
    type=click.Choice(["OVERWRITE", "DISCARD", "MAXIMUM", "MINIMUM"]),
    default=None,
    help="Omit to remove the handler of this column list.",
)
@click.option("--resolution-column", default=None)
@click.pass_obj
def set_update_conflict_handler_command(
    obj: CliContext,
    apply_name: str,
    source_database: str,
    object_name: str,
    columns: str,
    method: str | None,
    resolution_column: str | None,
) -> None:
    """SET_UPDATE_CONFLICT_HANDLER: a prebuilt handler for a column group."""
    _admin_call(
        obj,
        "set_update_conflict_handler",
        apply_name,
        source_database,
        object_name,
        method,
        resolution_column,
        _columns(columns),
    )


@main.command()
@click.option(
    "--command",
    "dbt_command",
    type=click.Choice(["build", "run", "test"]),
    default="build",
    show_default=True,
    help="The dbt command to run in-process.",
)
@click.option(
    "--show",
    multiple=True,
    default=("DBA_APPLY_PROGRESS", "DBA_APPLY_ERROR"),
    show_default=True,
    help="Gold views to print, the way SQL*Plus shows them.",
)
@click.pass_obj
def gold(obj: CliContext, dbt_command: str, show: tuple[str, ...]) -> None:
    """Build the gold dbt views (DBA_APPLY_PROGRESS, DBA_APPLY_ERROR, ...) in-process."""
    from lakeapply.gold.runner import render_sqlplus, run_gold

    spark = _spark(obj)
    with progress_steps(f"dbt {dbt_command}"):
        report = run_gold(spark, obj.warehouse.resolve(), obj.catalog_prefix, dbt_command)
    click.echo(report.summary())
    for view in show:
        click.echo(render_sqlplus(spark, obj.catalog_prefix, view))
