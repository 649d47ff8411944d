"""The one place a SparkSession is built. Everything else receives the session as an argument."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from urllib.parse import unquote, urlparse

from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from lakeapply.errors import ConfigurationError, EnvironmentSetupError
from lakeapply.runtime import jvm_cache, scratch

DELTA_SCALA_VERSION = "2.13"
JVM_MEMORY_SIZE = re.compile(r"[1-9][0-9]*[mMgG]")


# Expressions and operators evaluated by Spark's interpreter instead of generated Java code.
# Compiling a query's generated code (Janino, then the JVM's JIT) costs more than it saves on a
# few hundred thousand rows, and lakeapply's queries are wide: a first apply cycle of 10k LCRs
# 23.2 -> 14.5 s, of 100k 26.5 -> 21.0 s, but of 1M 58.0 -> 74.6 s (cycle_profile, warm,
# 2026-12-07). See ``interpreted_evaluation``.
INTERPRETED_EVALUATION = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}

SMALL_DATA_OPTIONS = {
    **INTERPRETED_EVALUATION,
    "spark.sql.adaptive.enabled": "false",
    "spark.databricks.delta.stats.skipping": "false",
    # Delta's checksum file (.crc) after each commit: with a commit or two per small table and
    # query, writing it cost more than it saves readers (37 apply tests on 2 workers, same
    # hour: 658 s with it, 549 s without; CREATE TABLE ~0.25 s -> ~0.20 s).
    "spark.databricks.delta.writeChecksumFile.enabled": "false",
}

# A short CLI process on small data spends most of its CPU warming up the JVM: the optimizing
# compiler (C2) compiles Spark's hot code on the same 2 cores and the process ends before that
# pays back. The client compiler alone: `lakeapply --small-data ingest` on an empty landing,
# fresh warehouses, alternated, 81 and 66 s against 122 and 95 s (2026-12-04, loaded 2-core
# machine). Not for long-lived sessions: three test files ran 1.6x slower with it (2026-12-02).
# The client compiler alone also shrinks the JVM's code cache to the client VM's 48 MB (240 MB
# with both compilers), which Spark's generated and compiled code filled in 19 s of a crash-soak
# apply (2026-12-05): "Out of space in CodeCache for adapters", a VirtualMachineError that stops
# the SparkContext and fails the command. So the cache keeps the tiered default's size. The
# throughput collector, as for a long session (below): `make run` 55.5, 54.9, 55.3, 58.1 and
# 58.4 s with it against 58.1, 57.7, 60.2, 56.6, 58.0 and 60.3 s with G1 (2026-12-07, the last
# three pairs alternated).
SHORT_SMALL_DATA_PROCESS_JAVA_OPTIONS = (
    " -XX:+UseParallelGC -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
)
# A long-lived session on small data (the tests', the testing kit's) runs many small queries on a
# heap that stays small: the throughput collector spends less of the two cores than G1's
# concurrent work. Two test files on two workers, alternated: 530 and 557 s against 561 and
# 627 s (2026-12-04/05).
LONG_SMALL_DATA_SESSION_JAVA_OPTIONS = " -XX:+UseParallelGC"


@dataclass(frozen=True)
class LocalSparkSettings:
    """Settings of the embedded local session (ignored on Databricks)."""

    warehouse: Path
    master: str = "local[2]"
    shuffle_partitions: int = 4
    snapshot_partitions: int = 2
    driver_memory: str = "4g"
    app_name: str = "lakeapply"
    # For tests and tiny demos: a few rows per query, many distinct queries. Compiling each
    # query's generated code, Delta's data-skipping job per scan and AQE's re-planning cost
    # more than the rows do (measured: an apply cycle of 5 transactions 15.5 s -> 12 s), and
    # so does Delta's checksum file written after every commit.
    # Off for real data: data skipping is what keeps a MERGE from reading the whole table.
    small_data: bool = False
    # Short processes started again and again (the CLI's) write the JVM's class archive when
    # there is none; a long-lived session (a test run, a notebook) would write it only at its
    # end, too late to help anyone, so it only uses one (see lakeapply.runtime.jvm_cache).
    write_class_archive: bool = False
    # Spark jobs (and stages) the status store keeps: few for a long-running apply (see
    # local_session_options); a profile that names every job of a cycle raises it.
    retained_jobs: int = 50

    def __post_init__(self) -> None:
        if not JVM_MEMORY_SIZE.fullmatch(self.driver_memory):
            raise ConfigurationError(
                f"driver memory {self.driver_memory!r}: expected a size such as 4g or 6144m"
            )


def session_warehouse(spark: SparkSession) -> Path:
    """The warehouse folder of a local session: the parent of ``spark.sql.warehouse.dir``."""
    location = spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse"
    parsed = urlparse(location)
    path = unquote(parsed.path) if parsed.scheme in ("file", "") else location
    return Path(path).resolve().parent


def isolated_session(spark: SparkSession) -> SparkSession:
    """A session over ``spark``'s context, tables and cache with SQL settings and a current
    catalog and database of its own, copied from ``spark``'s: what another thread changes on
    ``spark`` meanwhile does not reach it (dbt-spark turns ANSI mode off and changes the
    current database of the session it runs on)."""
    session = spark.newSession()
    for key, value in spark.conf.getAll.items():
        if spark.conf.isModifiable(key) and session.conf.get(key, None) != value:
            session.conf.set(key, value)
    if session.catalog.currentCatalog() != spark.catalog.currentCatalog():
        session.catalog.setCurrentCatalog(spark.catalog.currentCatalog())
    if session.catalog.currentDatabase() != spark.catalog.currentDatabase():
        session.catalog.setCurrentDatabase(spark.catalog.currentDatabase())
    return session


def running_on_databricks() -> bool:
    return "DATABRICKS_RUNTIME_VERSION" in os.environ


@contextmanager
def interpreted_evaluation(spark: SparkSession, wanted: bool = True) -> Iterator[None]:
    """Within the block, ``spark`` evaluates queries interpreted (``INTERPRETED_EVALUATION``)
    when ``wanted``; its settings are restored after. It only ever turns generated code off,
    so blocks nest and a session built for small data stays interpreted. Not on Databricks:
    Photon does not generate Java code, and serverless compute refuses these settings."""
    if not wanted or running_on_databricks():
        yield
        return
    before = {key: spark.conf.get(key, None) for key in INTERPRETED_EVALUATION}
    for key, value in INTERPRETED_EVALUATION.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, earlier in before.items():
            if earlier is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, earlier)


def delta_maven_coordinate() -> str:
    """The Delta jar matching the installed delta-spark and pyspark (e.g. delta-spark_4.2_2.13)."""
    spark_major_minor = ".".join(version("pyspark").split(".")[:2])
    return (
        f"io.delta:delta-spark_{spark_major_minor}_{DELTA_SCALA_VERSION}:{version('delta-spark')}"
    )


def spark_log_file(warehouse: Path) -> Path:
    """Where the local JVM's own output goes: Ivy's resolution report, log4j, JVM warnings."""
    return warehouse.resolve() / "logs" / "spark.log"


def delta_jars_cached() -> bool:
    """True when Ivy already holds the Delta jar (then starting Spark fetches nothing)."""
    group, artifact, release = delta_maven_coordinate().split(":")
    return (Path.home() / ".ivy2.5.2" / "jars" / f"{group}_{artifact}-{release}.jar").is_file()


def local_session_options(settings: LocalSparkSettings, warehouse: Path) -> dict[str, str]:
    """The Spark options of the local session over ``warehouse`` (a resolved folder)."""
    metastore = warehouse / "metastore_db"
    options = {
        "spark.master": settings.master,
        "spark.app.name": settings.app_name,
        "spark.jars.packages": delta_maven_coordinate(),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(warehouse / "tables"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={metastore};create=true"
        ),
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={warehouse}",
        "spark.driver.memory": settings.driver_memory,
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.default.parallelism": str(settings.shuffle_partitions),
        "spark.databricks.delta.snapshotPartitions": str(settings.snapshot_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.ansi.enabled": "true",
        "spark.databricks.delta.schema.autoMerge.enabled": "false",
        "spark.sql.sources.partitionOverwriteMode": "static",
        # Tungsten's memory page: by default heap * 0.6 / cores / 16, rounded up to a power of
        # two, capped at 64 MB: 64 MB here. A broadcast join builds its hash relation in whole
        # pages, so each small table an apply cycle broadcasts held a 64 MB long[] in the
        # driver's block store until the cleaner freed it after a GC: over a 100-cycle run ~2 GB
        # of the 4g heap were such pages (JFR old-object samples), old gen 86-93 % full.
        "spark.buffer.pageSize": "2m",
        # The status store behind the (disabled) UI keeps every query's plan graph, metrics and
        # description up to these counts (defaults 1000 queries, 1000 jobs and stages, 100k
        # tasks): a long-running apply (~30 queries per cycle) grew its live heap by ~15 MiB
        # per cycle until then, and each cycle slowed with the fuller heap. Nothing here reads
        # it (no UI, no status tracker): keep the last few. Measured 2026-12-05, 50 LCRs per
        # cycle: live heap after a GC 162 -> 257 MiB over 6 cycles with the defaults, flat
        # (155-163 MiB) with these.
        "spark.sql.ui.retainedExecutions": "20",
        "spark.ui.retainedJobs": str(settings.retained_jobs),
        "spark.ui.retainedStages": str(settings.retained_jobs),
        "spark.ui.retainedTasks": "2000",
    }
    if settings.small_data:
        options |= SMALL_DATA_OPTIONS
        options["spark.driver.extraJavaOptions"] += (
            SHORT_SMALL_DATA_PROCESS_JAVA_OPTIONS
            if settings.write_class_archive  # a short process (see the field)
            else LONG_SMALL_DATA_SESSION_JAVA_OPTIONS
        )
    return options


def get_spark(
    settings: LocalSparkSettings, notify: Callable[[str], None] | None = None
) -> SparkSession:
    """Return the active session on Databricks (Delta is built in), else build the local one.

    The local session has the Delta extension and catalog, a Hive metastore in Derby kept under the
    warehouse folder (so the pipeline and dbt see the same tables), few shuffle partitions, no UI.
    The Delta jars are resolved by Ivy from Maven Central on first use and cached in ~/.ivy2.5.2;
    ``notify`` gets one line when that download is about to happen. The JVM writes its output
    (Ivy's report, log4j, warnings) to :func:`spark_log_file`, not to the console.
    """
    if running_on_databricks():
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        return SparkSession.builder.getOrCreate()

    # Python workers must run this interpreter (the one lakeapply and pyarrow are installed in).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    warehouse = settings.warehouse.resolve()
    warehouse.mkdir(parents=True, exist_ok=True)
    options = local_session_options(settings, warehouse)
    if SparkContext._gateway is None and "SPARK_LOCAL_DIRS" not in os.environ:
        folder = scratch.process_scratch(scratch.scratch_root())
        options["spark.local.dir"] = str(folder)
        # The JVM's own temporary files too (spark-submit's folder, native libraries the
        # compression codecs unpack): a killed JVM leaves them where its scratch is removed.
        options["spark.driver.extraJavaOptions"] += f' "-Djava.io.tmpdir={folder}"'
    builder = SparkSession.builder.enableHiveSupport()
    for key, value in options.items():
        builder = builder.config(key, value)
    log = spark_log_file(warehouse)
    resolved_by_ivy = False
    try:
        if SparkContext._gateway is None:
            resolved_by_ivy = _start_jvm(dict(options), log, notify, settings.write_class_archive)
        spark = builder.getOrCreate()
    except PySparkException as error:
        raise EnvironmentSetupError(_explain_startup_failure(str(error), log)) from error
    spark.sparkContext.setLogLevel("ERROR")
    if resolved_by_ivy:
        jvm_cache.remember_jars(options["spark.jars.packages"], spark.conf.get("spark.jars") or "")
    return spark


def _start_jvm(
    options: dict[str, str],
    log: Path,
    notify: Callable[[str], None] | None,
    write_class_archive: bool,
) -> bool:
    """Launch the JVM with the jars and the class archive earlier starts left (see
    :mod:`lakeapply.runtime.jvm_cache`); Ivy resolves only when there is no usable jar list.
    True when Ivy resolved the jars (the started session's ``spark.jars`` is then worth keeping).
    """
    coordinate = options["spark.jars.packages"]
    archive = jvm_cache.class_archive(coordinate, may_write=write_class_archive)
    if archive is not None:
        options["spark.driver.extraJavaOptions"] += archive.java_options()
    jars = jvm_cache.resolved_jars(coordinate)
    if jars is not None:
        del options["spark.jars.packages"]
        options["spark.jars"] = jars
        jvm = _launch_jvm(options, log)
        resolved_by_ivy = False
    else:
        if notify is not None and not delta_jars_cached():
            notify(
                f"fetching the Delta jars ({coordinate}) from Maven Central "
                f"into ~/.ivy2.5.2 (first run only; details in {log})"
            )
        with _ivy_resolution_lock():
            jvm = _launch_jvm(options, log)
        resolved_by_ivy = True
    if archive is not None:
        archive.finish_when_the_jvm_exits(jvm)
    return resolved_by_ivy


@contextmanager
def _ivy_resolution_lock() -> Iterator[None]:
    """Hold an exclusive lock on the Ivy cache while a JVM resolves the Delta jars.

    Two Ivy resolutions writing one cache at once (two lakeapply processes, or parallel test
    workers, starting on a fresh machine) can leave it half-written; the lock serializes only
    the JVM launch, a few seconds once the jars are cached.
    """
    cache = Path.home() / ".ivy2.5.2"
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / "lakeapply-resolve.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _launch_jvm(options: dict[str, str], log: Path) -> subprocess.Popen[bytes] | None:
    """Start Spark's JVM the way SparkContext would, its stdout and stderr going to ``log``.

    spark-submit resolves ``spark.jars.packages`` with Ivy before the driver starts and prints
    the whole resolution report, then log4j prints to the console: none of it is the user's
    business unless something fails, and the error message then names the log.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    conf = SparkConf(loadDefaults=False).setAll(list(options.items()))
    with log.open("ab") as output:
        output.write(f"--- {datetime.now(UTC).isoformat()} pid {os.getpid()}\n".encode())
        output.flush()
        gateway = launch_gateway(  # type: ignore[no-untyped-call]
            conf, popen_kwargs={"stdout": output, "stderr": output}
        )
    with SparkContext._lock:
        if SparkContext._gateway is None:
            SparkContext._gateway = gateway
            SparkContext._jvm = gateway.jvm
            process: subprocess.Popen[bytes] | None = getattr(gateway, "proc", None)
            return process
        gateway.shutdown()  # another thread won the race: keep its JVM
        return None


def _explain_startup_failure(message: str, log: Path) -> str:
    if re.search(r"JAVA_GATEWAY_EXITED|unresolved dependency|not found", message):
        return (
            "Spark could not start. The usual cause on a first run is that the Delta jars "
            f"({delta_maven_coordinate()}) could not be downloaded from Maven Central: check the "
            "network, or pre-fetch them with `mvn dependency:get "
            f"-Dartifact={delta_maven_coordinate()}` (Ivy looks in ~/.m2 first). Java 17 must be on "
            f"PATH. Original error: {message.splitlines()[0] if message else '?'} (Spark's "
            f"output: {log})"
        )
    return f"Spark could not start: {message} (Spark's output: {log})"
