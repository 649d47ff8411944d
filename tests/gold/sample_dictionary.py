"""A small apply dictionary for the gold layer: a gap, an open transaction, an error transaction.

APPLY_DEMO (DEPENDENT_TRANSACTIONS, disable_on_error N) applies US03.STUDENT and US03.COURSE from
ORCL. Processed transactions, by commit SCN:

    1000 APPLIED  (STUDENT)        cycle 1
    1010 APPLIED  (COURSE)         cycle 1
    1020 deferred (COURSE)         committed, its COMMIT waits in the spill: the gap
    1030 APPLIED  (STUDENT)        cycle 2, applied above the gap
    1040 ERROR    (COURSE+STUDENT) cycle 2, in the error queue with its 2 messages
    open          (STUDENT)        first SCN 1012, no COMMIT yet

and its progress rows record the low watermark 1010 (below the gap), the high watermark 1040 and
the oldest SCN 1012 (the open transaction). (Today's engine schedules DEPENDENT_TRANSACTIONS like
FULL and records LWM = HWM; the gold layer shows whatever the engine records.)

APPLY_HALTED (FULL, disable_on_error Y) applied 2000, then aborted on ORA-26787 at 2010 (first SCN
2005): that transaction is in its error queue and processed (rule 9): both watermarks are 2010.
2.3.202 (first SCN 2015, committed at 2020) is not processed: it waits in the spill and is the
oldest SCN.

HOSTILE_SILVER holds a table of APPLY_DEMO whose owner, name and key column are legal quoted Oracle
names that are hostile in SQL text (backticks, quotes, semicolons, spaces): the gold build, its
duplicate-key test included, must treat them as data.

``populate`` writes it with the schemas of lakeapply.silver.dictionary; tests/gold/test_gold.py
uses it, and so can a hand-run of the standalone ``dbt build`` (see dbt/README.md).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from decimal import Decimal
from typing import Any

import yaml
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from lakeapply.bronze.tables import LCR_TABLE, lcr_table_schema
from lakeapply.contract.table_definitions import SCHEMAS_DIR, sample_table_definitions
from lakeapply.runtime.catalog import Catalog, ensure_database, ensure_delta_table
from lakeapply.silver import dictionary as apply_tables

APPLY = "APPLY_DEMO"
HALTED = "APPLY_HALTED"
DB = "ORCL"
GAP_TRANSACTION = "1.12.102"
OPEN_TRANSACTION = "1.15.105"
ERROR_TRANSACTION = "1.14.104"
LOCAL_ERROR_TRANSACTION = "7.3.41"
HALTED_TRANSACTION = "2.2.201"  # the transaction APPLY_HALTED aborted on
HALTED_WAITING = "2.3.202"  # committed after it: not processed
STUDENT_SILVER = "orcl_us03_student"
COURSE_SILVER = "orcl_us03_course"
HOSTILE_SILVER = "orcl_hostile_t"
HOSTILE_OWNER = "MY SCHEMA`)'; --"
HOSTILE_TABLE = "T;DROP TABLE sentinel"
HOSTILE_KEY = "K`EY; DROP TABLE sentinel; --"
HOSTILE_VALUE = "FIRST NAME,(=)"
HOSTILE_DEFINITION = {
    "owner": HOSTILE_OWNER,
    "name": HOSTILE_TABLE,
    "columns": [
        {"name": HOSTILE_KEY, "type": "NUMBER(10)"},
        {"name": HOSTILE_VALUE, "type": "VARCHAR2(20)"},
    ],
    "primary_key": [HOSTILE_KEY],
}
ERROR_MESSAGE = (
    'ORA-26787: The row with key ("STUDENT_KEY") = (7) does not exist in table US03.STUDENT'
)


def at(clock: str) -> datetime:
    """A time on the sample day (the session time zone is UTC)."""
    return datetime.fromisoformat(f"2024-05-01 {clock}")


def _lcr(
    schema: T.StructType, line: int, transaction_id: str, command: str, scn: int, **fields: Any
) -> dict[str, Any]:
    record: dict[str, Any] = dict.fromkeys(schema.fieldNames())
    table = fields.pop("table", None)
    record.update(
        source_database_name=DB,
        transaction_id=transaction_id,
        command_type=command,
        scn=scn,
        lcr_kind="DIRECTIVE" if command in ("COMMIT", "ROLLBACK") else "ROW",
        source_file="landing/orcl.jsonl",
        line_number=line,
        byte_offset=line * 100,
        ingest_batch_id=1,
        ingested_at=at("11:59:59"),
    )
    if table is not None:
        record.update(object_owner="US03", object_name=table)
    record.update(fields)
    record["raw_lcr"] = json.dumps(
        {k: v for k, v in record.items() if v is not None and k != "raw_lcr"}, default=str
    )
    return record


# (transaction, command, scn, table); line numbers follow the list order.
BRONZE_LCRS = [
    ("1.10.100", "INSERT", 995, "STUDENT"),
    ("1.10.100", "COMMIT", 1000, None),
    ("1.11.101", "INSERT", 1006, "COURSE"),
    ("1.11.101", "COMMIT", 1010, None),
    (OPEN_TRANSACTION, "INSERT", 1012, "STUDENT"),
    (GAP_TRANSACTION, "INSERT", 1015, "COURSE"),
    (GAP_TRANSACTION, "COMMIT", 1020, None),
    ("1.13.103", "UPDATE", 1026, "STUDENT"),
    ("1.13.103", "COMMIT", 1030, None),
    (ERROR_TRANSACTION, "INSERT", 1035, "COURSE"),
    (ERROR_TRANSACTION, "UPDATE", 1036, "STUDENT"),
    (ERROR_TRANSACTION, "COMMIT", 1040, None),
    ("2.1.200", "INSERT", 1995, "STUDENT"),
    ("2.1.200", "COMMIT", 2000, None),
    (HALTED_TRANSACTION, "UPDATE", 2005, "STUDENT"),
    (HALTED_TRANSACTION, "COMMIT", 2010, None),
    (HALTED_WAITING, "INSERT", 2015, "STUDENT"),
    (HALTED_WAITING, "COMMIT", 2020, None),
]
SPILLED = {APPLY: {OPEN_TRANSACTION, GAP_TRANSACTION}, HALTED: {HALTED_WAITING}}


def _definition_json(name: str) -> str:
    document = yaml.safe_load((SCHEMAS_DIR / "tables" / f"us03.{name}.yml").read_text())
    return json.dumps(document)


def populate(spark: SparkSession, catalog: Catalog) -> None:
    """Create ``<prefix>_apply``, ``<prefix>_bronze.lcr`` and one silver table with the sample."""
    for database in (catalog.apply, catalog.bronze, catalog.silver):
        ensure_database(spark, database)
    tables: dict[str, tuple[T.StructType, list[dict[str, Any]]]] = {
        catalog.apply_table(name): (schema, [])
        for name, schema in apply_tables.DICTIONARY_TABLES.items()
    }

    def apply_table(name: str, rows: list[dict[str, Any]]) -> None:
        tables[catalog.apply_table(name)][1].extend(rows)

    lcr_schema = lcr_table_schema()
    bronze = [
        _lcr(lcr_schema, line, transaction, command, scn, table=table)
        for line, (transaction, command, scn, table) in enumerate(BRONZE_LCRS, start=1)
    ]
    tables[catalog.bronze_table(LCR_TABLE)] = (lcr_schema, bronze)
    apply_table(
        apply_tables.SPILL,
        [
            {"apply_name": apply_name, **lcr}
            for apply_name, spilled in SPILLED.items()
            for lcr in bronze
            if lcr["transaction_id"] in spilled
        ],
    )
    apply_table(
        apply_tables.APPLY_PROCESSES,
        [
            {
                "apply_name": APPLY,
                "status": "ENABLED",
                "status_change_time": at("11:00:00"),
                "commit_serialization": "DEPENDENT_TRANSACTIONS",
                "disable_on_error": "N",
                "source_databases": [DB],
            },
            {
                "apply_name": HALTED,
                "status": "ABORTED",
                "status_change_time": at("11:30:00"),
                "error_number": 26787,
                "error_message": ERROR_MESSAGE,
                "commit_serialization": "FULL",
                "disable_on_error": "Y",
                "source_databases": [DB],
            },
        ],
    )
    apply_table(
        apply_tables.PARAMETERS,
        [
            {
                "apply_name": APPLY,
                "parameter": "disable_on_error",
                "value": "N",
                "set_by_user": "YES",
            },
            {
                "apply_name": APPLY,
                "parameter": "max_cycle_batches",
                "value": "100",
                "set_by_user": "YES",
            },
        ],
    )
    apply_table(
        apply_tables.DESTINATION_TABLES,
        [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "object_owner": "US03",
                "object_name": name.upper(),
                "silver_table": f"orcl_us03_{name}",
                "definition_json": _definition_json(name),
            }
            for name in ("student", "course")
        ]
        + [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "object_owner": HOSTILE_OWNER,
                "object_name": HOSTILE_TABLE,
                "silver_table": HOSTILE_SILVER,
                "definition_json": json.dumps(HOSTILE_DEFINITION),
            }
        ],
    )
    apply_table(
        apply_tables.INSTANTIATED_OBJECTS,
        [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "source_object_owner": "US03",
                "source_object_name": name,
                "source_object_type": "TABLE",
                "instantiation_scn": 900,
                "ignore_scn": None,
            }
            for name in ("STUDENT", "COURSE")
        ],
    )
    apply_table(
        apply_tables.INSTANTIATED_SCHEMAS,
        [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "source_schema": "US03",
                "instantiation_scn": 800,
            }
        ],
    )
    apply_table(
        apply_tables.INSTANTIATED_GLOBAL,
        [{"apply_name": APPLY, "source_database": DB, "instantiation_scn": 700}],
    )
    apply_table(
        apply_tables.KEY_COLUMNS,
        [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "object_owner": "US03",
                "object_name": "COURSE",
                "column_name": column,
                "column_position": position,
            }
            for position, column in enumerate(SUBSTITUTE_KEY, start=1)
        ],
    )
    apply_table(
        apply_tables.CONFLICT_COLUMNS,
        [
            {
                "apply_name": APPLY,
                "source_database": DB,
                "object_owner": "US03",
                "object_name": "STUDENT",
                "method_name": "MAXIMUM",
                "resolution_column": "TUITION_FEE",
                "column_name": "TUITION_FEE",
            }
        ],
    )

    # STUDENT rows depend on the COURSE they take (a foreign key the destination lacks).
    dependency = {"apply_name": APPLY, "object_owner": "US03"}
    apply_table(
        apply_tables.VIRTUAL_DEPENDENCIES,
        [
            {
                **dependency,
                "dependency_type": "VALUE",
                "dependency_name": "STUDENT_COURSE",
                "object_name": name,
                "column_name": "SUBJECT",
                "column_position": 1,
            }
            for name in ("STUDENT", "COURSE")
        ]
        + [
            {
                **dependency,
                "dependency_type": "OBJECT",
                "object_name": "STUDENT",
                "parent_object_owner": "US03",
                "parent_object_name": "COURSE",
            }
        ],
    )

    def transaction(
        transaction_id: str,
        scn: int,
        first: int,
        commit: str,
        outcome: str,
        cycle: int,
        applied: str,
        apply_name: str = APPLY,
    ) -> dict[str, Any]:
        return {
            "apply_name": apply_name,
            "source_database": DB,
            "transaction_id": transaction_id,
            "commit_scn": scn,
            "first_scn": first,
            "commit_time": at(commit),
            "outcome": outcome,
            "message_count": 1,
            "cycle_id": cycle,
            "applied_at": at(applied),
        }

    apply_table(
        apply_tables.TRANSACTIONS,
        [
            transaction("1.10.100", 1000, 995, "12:00:00", "APPLIED", 1, "12:00:20"),
            transaction("1.11.101", 1010, 1006, "12:00:05", "APPLIED", 1, "12:00:20"),
            transaction("1.13.103", 1030, 1026, "12:00:15", "APPLIED", 2, "12:01:00"),
            transaction(ERROR_TRANSACTION, 1040, 1035, "12:00:18", "ERROR", 2, "12:01:00"),
            transaction("2.1.200", 2000, 1995, "11:29:00", "APPLIED", 1, "11:30:00", HALTED),
            transaction(HALTED_TRANSACTION, 2010, 2005, "11:29:10", "ERROR", 1, "11:30:00", HALTED),
        ],
    )

    def progress(cycle: int, high: int, applied: int, errors: int) -> dict[str, Any]:
        # As the engine records them: the low watermark stays below the gap (1020).
        return {
            "apply_name": APPLY,
            "source_database": DB,
            "cycle_id": cycle,
            "low_watermark": 1010,
            "low_watermark_time": at("12:00:05"),
            "high_watermark": high,
            "high_watermark_time": at("12:00:05" if high == 1010 else "12:00:18"),
            "oldest_scn": 1012,
            "oldest_transaction_id": OPEN_TRANSACTION,
            "spill_scn": 1012,
            "apply_time": at("12:00:20" if cycle == 1 else "12:01:00"),
            "total_received": 6 * cycle,
            "total_applied": applied,
            "total_ignored": 0,
            "total_rolled_back": 0,
            "total_errors": errors,
            "status": "ENABLED",
            "table_versions": {STUDENT_SILVER: cycle},
        }

    halted_progress = {
        **progress(1, 2010, 1, 1),
        "apply_name": HALTED,
        "low_watermark": 2010,
        "low_watermark_time": at("11:29:10"),
        "high_watermark_time": at("11:29:10"),
        "oldest_scn": 2015,
        "oldest_transaction_id": HALTED_WAITING,
        "spill_scn": 2015,
        "apply_time": at("11:30:00"),
        "total_received": 6,
        "status": "ABORTED",
        "table_versions": {},
    }
    apply_table(
        apply_tables.PROGRESS,
        [progress(1, 1010, 2, 0), progress(2, 1040, 3, 1), halted_progress],
    )

    def error_queue_row(
        apply_name: str, local_id: str, transaction_id: str, scn: int, failing: int, count: int
    ) -> dict[str, Any]:
        return {
            "apply_name": apply_name,
            "queue_name": f"{apply_name}_QUEUE",
            "local_transaction_id": local_id,
            "source_database": DB,
            "source_transaction_id": transaction_id,
            "source_commit_scn": scn,
            "message_number": failing,
            "error_number": 26787,
            "error_message": ERROR_MESSAGE,
            "recipient_id": 0,
            "recipient_name": "LAKEAPPLY",
            "message_count": count,
            "error_creation_time": at("12:01:00" if apply_name == APPLY else "11:30:00"),
            "cycle_id": 2 if apply_name == APPLY else 1,
        }

    def messages(apply_name: str, local_id: str, transaction_id: str) -> list[dict[str, Any]]:
        rows = (lcr for lcr in bronze if lcr["transaction_id"] == transaction_id)
        return [
            {"apply_name": apply_name, "local_transaction_id": local_id, "message_number": n, **lcr}
            for n, lcr in enumerate((lcr for lcr in rows if lcr["lcr_kind"] == "ROW"), start=1)
        ]

    apply_table(
        apply_tables.ERROR_QUEUE,
        [
            error_queue_row(APPLY, LOCAL_ERROR_TRANSACTION, ERROR_TRANSACTION, 1040, 2, 2),
            error_queue_row(HALTED, "1.1", HALTED_TRANSACTION, 2010, 1, 1),
        ],
    )
    apply_table(
        apply_tables.ERROR_MESSAGES,
        messages(APPLY, LOCAL_ERROR_TRANSACTION, ERROR_TRANSACTION)
        + messages(HALTED, "1.1", HALTED_TRANSACTION),
    )

    for definition in sample_table_definitions():
        schema = definition.spark_schema()
        tables[catalog.silver_table(f"orcl_us03_{definition.name.lower()}")] = (
            schema,
            [
                dict(zip(schema.fieldNames(), silver_row(schema, row), strict=True))
                for row in SILVER_ROWS[definition.name]
            ],
        )

    # One Delta commit per table (tables without rows are created empty), a few at a time.
    def create(table: str) -> None:
        schema, rows = tables[table]
        if not rows:
            ensure_delta_table(spark, table, schema)
            return
        ordered = [tuple(row.get(name) for name in schema.fieldNames()) for row in rows]
        spark.createDataFrame(ordered, schema).write.format("delta").mode("overwrite").saveAsTable(
            table
        )

    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(create, tables))

    # Hostile column names need Delta column mapping, which ensure_delta_table turns on.
    hostile = catalog.silver_table(HOSTILE_SILVER)
    hostile_schema = T.StructType(
        [
            T.StructField(HOSTILE_KEY, T.DecimalType(10, 0)),
            T.StructField(HOSTILE_VALUE, T.StringType()),
        ]
    )
    ensure_delta_table(spark, hostile, hostile_schema)
    spark.createDataFrame([(Decimal(1), "a"), (Decimal(2), "a")], hostile_schema).write.format(
        "delta"
    ).mode("append").saveAsTable(hostile)


# Silver rows; COURSE has the substitute key (UNIVERSITY, SUBJECT), narrower than its primary key.
SUBSTITUTE_KEY = ("UNIVERSITY", "SUBJECT")
SILVER_ROWS: dict[str, list[dict[str, Any]]] = {
    "STUDENT": [
        {"STUDENT_KEY": 1, "FIRST_NAME": "Ada", "SURNAME": "Lovelace"},
        {"STUDENT_KEY": 2, "FIRST_NAME": "Alan", "SURNAME": "Turing"},
    ],
    "COURSE": [
        {"UNIVERSITY": "Cambridge", "SUBJECT": "Mathematics", "ENTRY_YEAR": 1950},
        {"UNIVERSITY": "Cambridge", "SUBJECT": "Physics", "ENTRY_YEAR": 1950},
    ],
}


def silver_row(schema: T.StructType, values: dict[str, Any]) -> tuple[Any, ...]:
    """A silver row in ``schema`` order; numbers become Decimals (NUMBER columns)."""
    return tuple(
        Decimal(values[name]) if isinstance(values.get(name), int) else values.get(name)
        for name in schema.fieldNames()
    )
