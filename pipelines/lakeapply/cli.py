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


def _load_apply_settings(config: Path, apply_name: str | None) -> Any:
    from lakeapply.errors import ConfigurationError
    from lakeapply.silver.config import load_config

    processes = load_config(config)
    if apply_name is None:
        if len(processes) != 1:
            names = ", ".join(p.apply_name for p in processes)
            raise ConfigurationError(f"{config}: several apply processes ({names}): pick one")
        return processes[0]
    for process in processes:
        if process.apply_name == apply_name:
            return process
    raise ConfigurationError(f"{config}: no apply process named {apply_name!r}")


@main.command()
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=Path("lakeapply.yml"),
    show_default=True,
    help="Apply processes to run.",
)
@click.option("--apply-name", default=None, help="Which apply process (default: the only one).")
@click.pass_obj
def apply(obj: CliContext, config: Path, apply_name: str | None) -> None:
    """Apply committed transactions from bronze to the silver tables (Oracle apply semantics)."""
    from lakeapply.silver.engine import run_apply

    settings = _load_apply_settings(config, apply_name)
    spark = _spark(obj)
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
