"""Schemas of the apply dictionary: settings, progress, error queue, cycles, spill.

They live in ``<prefix>_apply``; the gold dbt views (named like Oracle's DBA_APPLY_* views) read
them. Every table carries ``apply_name``: several apply processes share them, fully independent.
"""

from __future__ import annotations

from pyspark.sql import types as T

from lakeapply.bronze.tables import lcr_table_schema

S, L, TS, B = T.StringType(), T.LongType(), T.TimestampType(), T.BooleanType()


def _schema(*fields: tuple[str, T.DataType, bool]) -> T.StructType:
    return T.StructType([T.StructField(name, kind, nullable) for name, kind, nullable in fields])


# --- settings (the DBA_APPLY_* configuration views) ------------------------------------------
APPLY_PROCESSES = "apply_processes"  # DBA_APPLY
APPLY_PROCESSES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("status", S, False),  # ENABLED | DISABLED | ABORTED
    ("status_change_time", TS, False),
    ("error_number", L, True),
    ("error_message", S, True),
    ("commit_serialization", S, False),
    ("disable_on_error", S, False),  # Y | N
    ("source_databases", T.ArrayType(S), False),
)
PARAMETERS = "parameters"  # DBA_APPLY_PARAMETERS
PARAMETERS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("parameter", S, False),
    ("value", S, True),
    ("set_by_user", S, False),  # YES | NO
)
DESTINATION_TABLES = "destination_tables"
DESTINATION_TABLES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("silver_table", S, False),
    ("definition_json", S, False),  # the table definition document
)
KEY_COLUMNS = "key_columns"  # DBA_APPLY_KEY_COLUMNS (substitute keys)
KEY_COLUMNS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("column_name", S, False),
    ("column_position", L, False),
)
INSTANTIATED_OBJECTS = "instantiated_objects"  # DBA_APPLY_INSTANTIATED_OBJECTS
INSTANTIATED_OBJECTS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("source_object_owner", S, False),
    ("source_object_name", S, False),
    ("source_object_type", S, False),
    ("instantiation_scn", L, True),
    ("ignore_scn", L, True),
)
INSTANTIATED_SCHEMAS = "instantiated_schemas"  # DBA_APPLY_INSTANTIATED_SCHEMAS
INSTANTIATED_SCHEMAS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("source_schema", S, False),
    ("instantiation_scn", L, False),
)
INSTANTIATED_GLOBAL = "instantiated_global"  # DBA_APPLY_INSTANTIATED_GLOBAL
INSTANTIATED_GLOBAL_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("instantiation_scn", L, False),
)
CONFLICT_COLUMNS = "conflict_columns"  # DBA_APPLY_CONFLICT_COLUMNS
CONFLICT_COLUMNS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("method_name", S, False),  # OVERWRITE | DISCARD | MAXIMUM | MINIMUM
    ("resolution_column", S, False),
    ("column_name", S, False),
)
COMPARE_OLD_VALUES = "compare_old_values"  # COMPARE_OLD_VALUES(..., compare => FALSE)
COMPARE_OLD_VALUES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("column_name", S, False),
    ("operation", S, False),  # UPDATE | DELETE
    ("compare", S, False),  # N
)
TRANSFORMATIONS = "transformations"  # DBA_STREAMS_TRANSFORMATIONS (declarative ones)
TRANSFORMATIONS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("step_number", L, False),
    ("declarative_type", S, False),  # DELETE COLUMN | RENAME COLUMN | ADD COLUMN | KEEP COLUMNS
    ("column_names", T.ArrayType(S, False), False),  # RENAME: [from, to]; KEEP: the kept ones
    ("value_type", S, False),  # NEW | OLD | *
    ("column_value", S, True),  # ADD COLUMN: the constant
    ("column_function", S, True),  # ADD COLUMN: the Spark SQL expression
    ("column_type", S, True),  # ADD COLUMN: the LCR data_type of the added value
)
DML_HANDLERS = "dml_handlers"  # DBA_APPLY_DML_HANDLERS
DML_HANDLERS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("operation_name", S, False),  # INSERT | UPDATE | DELETE | LOB_UPDATE | DEFAULT
    ("handler_type", S, False),  # PROCEDURE HANDLER | STMT HANDLER
    ("user_procedure", S, True),  # PROCEDURE HANDLER: package.module:function
    ("handler_name", S, True),  # STMT HANDLER
    ("statement", S, True),  # STMT HANDLER: Spark SQL over {lcrs}
)
ERROR_HANDLERS = "error_handlers"  # DBA_APPLY_DML_HANDLERS rows with ERROR_HANDLER = 'Y'
ERROR_HANDLERS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("operation_name", S, False),  # INSERT | UPDATE | DELETE | LOB_UPDATE | DEFAULT
    ("user_procedure", S, False),  # package.module:function
)
RULES = "rules"  # DBA_STREAMS_RULES (an apply process's positive and negative rule sets)
RULES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("rule_set_type", S, False),  # POSITIVE | NEGATIVE
    ("rule_number", L, False),
    ("streams_rule_type", S, False),  # GLOBAL | SCHEMA | TABLE
    ("source_database", S, True),
    ("schema_name", S, True),
    ("object_name", S, True),
    ("tag_condition", S, True),  # NULL | NOT NULL | a tag in hex
    ("rule_condition", S, False),  # the condition as text, for reading
    ("subset_condition", S, True),  # a subset rule's condition, as declared
    ("transformations_json", S, True),  # the rule's transformations (lakeapply.yml form), JSON
)
# DBA_APPLY_VALUE_DEPENDENCIES (one row per column) and DBA_APPLY_OBJECT_DEPENDENCIES (one row per
# child and parent), in one table: both are small and read together.
VIRTUAL_DEPENDENCIES = "virtual_dependencies"
VIRTUAL_DEPENDENCIES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("dependency_type", S, False),  # VALUE | OBJECT
    ("dependency_name", S, True),  # VALUE
    ("object_owner", S, False),
    ("object_name", S, False),
    ("column_name", S, True),  # VALUE
    ("column_position", L, True),  # VALUE, 1-based
    ("parent_object_owner", S, True),  # OBJECT
    ("parent_object_name", S, True),  # OBJECT
)

# --- progress ---------------------------------------------------------------------------------
CYCLES = "cycles"
CYCLES_SCHEMA = _schema(
    ("apply_name", S, False),
    ("cycle_id", L, False),
    ("phase", S, False),  # PLANNED | COMMITTED
    ("bronze_from_batch", L, False),  # exclusive
    ("bronze_to_batch", L, False),  # inclusive
    # silver table -> Delta version read; also "__spill__" and, for an EXECUTE_ERROR cycle,
    # "__error_queue__", "__error_messages__" and "__execute_error__:<local id>" (cycle_state.CyclePlan)
    ("table_versions_before", T.MapType(S, L), True),
    ("table_versions_after", T.MapType(S, L), True),  # COMMITTED: versions after the MERGEs
    ("logged_at", TS, False),
)
PROGRESS = "progress"  # one row per apply, source database and committed cycle
PROGRESS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("cycle_id", L, False),
    ("low_watermark", L, True),  # APPLIED_MESSAGE_NUMBER / LWM_MESSAGE_NUMBER
    ("low_watermark_time", TS, True),  # source time of the LWM transaction's commit
    ("high_watermark", L, True),  # HWM_MESSAGE_NUMBER
    ("high_watermark_time", TS, True),
    ("oldest_scn", L, True),  # OLDEST_MESSAGE_NUMBER
    ("oldest_transaction_id", S, True),
    ("spill_scn", L, True),  # SPILL_MESSAGE_NUMBER
    ("apply_time", TS, False),
    ("total_received", L, False),  # cumulative counters
    ("total_applied", L, False),
    ("total_ignored", L, False),
    ("total_rolled_back", L, False),
    ("total_errors", L, False),
    ("status", S, False),
    ("table_versions", T.MapType(S, L), True),  # silver table -> version at this watermark
)
TRANSACTIONS = "transactions"  # outcome of every committed transaction processed
TRANSACTIONS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("transaction_id", S, False),
    ("commit_scn", L, False),
    ("first_scn", L, True),
    ("commit_time", TS, True),  # source time of the COMMIT
    ("outcome", S, False),  # APPLIED | DISCARDED (instantiation SCN) | ERROR
    ("message_count", L, False),
    ("cycle_id", L, False),
    ("applied_at", TS, False),
)
# Every transaction whose ROLLBACK a cycle processed: LCRs of it that land later (after the
# ROLLBACK) are settled as rolled back, never kept in the spill (silver/late.py).
ROLLED_BACK = "rolled_back_transactions"
ROLLED_BACK_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("transaction_id", S, False),
    ("rollback_scn", L, True),
    ("cycle_id", L, False),
)
# A version of a destination table's definition, from a DDL transaction (rule 10): the engine
# applies each cycle with the latest version an earlier cycle recorded (DDL is a barrier). A
# CREATE TABLE adds a table's first row; a DROP TABLE's row has ``"dropped": true`` in its
# document (silver/ddl.py, DROPPED_KEY).
TABLE_VERSIONS = "table_versions"
TABLE_VERSIONS_SCHEMA = _schema(
    ("apply_name", S, False),
    ("source_database", S, False),
    ("object_owner", S, False),
    ("object_name", S, False),
    ("silver_table", S, False),
    ("commit_scn", L, False),  # the DDL transaction's: the version takes effect after it
    ("transaction_id", S, False),
    ("ddl_text", S, False),
    ("definition_json", S, False),  # the table definition document after the DDL
    ("cycle_id", L, False),
)
SPILL = "spill"  # LCRs of transactions still open (or deferred) at the end of a cycle
SPILL_SCHEMA = T.StructType([T.StructField("apply_name", S, False), *lcr_table_schema().fields])

# --- the error queue --------------------------------------------------------------------------
ERROR_QUEUE = "error_queue"  # DBA_APPLY_ERROR
ERROR_QUEUE_SCHEMA = _schema(
    ("apply_name", S, False),
    ("queue_name", S, False),
    ("local_transaction_id", S, False),
    ("source_database", S, False),
    ("source_transaction_id", S, False),
    ("source_commit_scn", L, False),
    ("message_number", L, False),  # position of the failing message in the transaction
    ("error_number", L, False),
    ("error_message", S, False),
    ("recipient_id", L, False),
    ("recipient_name", S, False),
    ("message_count", L, False),
    ("error_creation_time", TS, False),
    ("cycle_id", L, False),
)
ERROR_MESSAGES = "error_messages"  # DBA_APPLY_ERROR_MESSAGES: every message of the transaction
ERROR_MESSAGES_SCHEMA = T.StructType(
    [
        T.StructField("apply_name", S, False),
        T.StructField("local_transaction_id", S, False),
        T.StructField("message_number", L, False),
        *lcr_table_schema().fields,
    ]
)

# The settings of the apply processes: written by publishing settings (`lakeapply configure`,
# the admin API), which creates them, as do the commands a user runs (`lakeapply apply`,
# `admin`, gold). An apply cycle never reads them (its settings are passed in), so one run from
# settings that were never published (the testing kit's, a test's) does not create them: that
# cost a test ~4 s of its ~40 (2026-12-05). A reader of one that does not exist reads no rows.
SETTINGS_TABLES: dict[str, T.StructType] = {
    PARAMETERS: PARAMETERS_SCHEMA,
    DESTINATION_TABLES: DESTINATION_TABLES_SCHEMA,
    KEY_COLUMNS: KEY_COLUMNS_SCHEMA,
    INSTANTIATED_OBJECTS: INSTANTIATED_OBJECTS_SCHEMA,
    INSTANTIATED_SCHEMAS: INSTANTIATED_SCHEMAS_SCHEMA,
    INSTANTIATED_GLOBAL: INSTANTIATED_GLOBAL_SCHEMA,
    CONFLICT_COLUMNS: CONFLICT_COLUMNS_SCHEMA,
    COMPARE_OLD_VALUES: COMPARE_OLD_VALUES_SCHEMA,
    TRANSFORMATIONS: TRANSFORMATIONS_SCHEMA,
    DML_HANDLERS: DML_HANDLERS_SCHEMA,
    ERROR_HANDLERS: ERROR_HANDLERS_SCHEMA,
    RULES: RULES_SCHEMA,
    VIRTUAL_DEPENDENCIES: VIRTUAL_DEPENDENCIES_SCHEMA,
}
# What every apply cycle reads or writes: the status, the cycles and their outcomes.
CYCLE_TABLES: dict[str, T.StructType] = {
    APPLY_PROCESSES: APPLY_PROCESSES_SCHEMA,
    CYCLES: CYCLES_SCHEMA,
    PROGRESS: PROGRESS_SCHEMA,
    TRANSACTIONS: TRANSACTIONS_SCHEMA,
    ROLLED_BACK: ROLLED_BACK_SCHEMA,
    TABLE_VERSIONS: TABLE_VERSIONS_SCHEMA,
    SPILL: SPILL_SCHEMA,
}
# The error queue: created by the first cycle that queues an error transaction (and, like the
# settings tables, by the commands a user runs), so an apply without errors never pays for
# them. A reader of one that does not exist reads no rows (``cycle_state.error_rows``).
ERROR_TABLES: dict[str, T.StructType] = {
    ERROR_QUEUE: ERROR_QUEUE_SCHEMA,
    ERROR_MESSAGES: ERROR_MESSAGES_SCHEMA,
}
DICTIONARY_TABLES: dict[str, T.StructType] = {**CYCLE_TABLES, **ERROR_TABLES, **SETTINGS_TABLES}
# The tables every bronze cycle appends to with a transaction id (the spill is rewritten only
# when it changes, the rolled-back transactions only when a ROLLBACK arrives).
WRITTEN_EVERY_CYCLE = (TRANSACTIONS, PROGRESS, CYCLES)
# The tables cycles add files to (a row or a few per cycle, never rewritten whole): compacted
# every few cycles (``runtime.catalog.compaction_due``).
APPENDED_EVERY_CYCLE = (CYCLES, PROGRESS, TRANSACTIONS, ROLLED_BACK, TABLE_VERSIONS, *ERROR_TABLES)
