"""Parse landing lines against the LCR contract and say precisely why a line is rejected.

Pure DataFrame -> DataFrame: input has a ``line`` column (and optionally ``read_problem``, set by
the reader when the line's bytes could not be read as text); output adds ``lcr`` (the parsed
struct), ``field`` (the offending field, if any) and ``reason`` (NULL for a valid LCR).
"""

from __future__ import annotations

from weakref import WeakKeyDictionary

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.identifiers import ORACLE_IDENTIFIER_PATTERN
from lakeapply.contract.lcr import (
    DDL_COMMANDS,
    DIRECTIVE_COMMANDS,
    LCR_FIELDS,
    ROW_COMMANDS,
    TRANSACTION_ID_PATTERN,
    lcr_parse_schema,
)
from lakeapply.contract.oracle_types import LCR_DATA_TYPES

_ALL_COMMANDS = ROW_COMMANDS + DIRECTIVE_COMMANDS + DDL_COMMANDS
_REQUIRED_BY_COMMAND = {
    "INSERT": ("object_owner", "object_name", "new_values"),
    "UPDATE": ("object_owner", "object_name", "old_values", "new_values"),
    "DELETE": ("object_owner", "object_name", "old_values"),
    "LOB WRITE": ("object_owner", "object_name"),
    "LOB ERASE": ("object_owner", "object_name"),
    "LOB TRIM": ("object_owner", "object_name"),
}


def _raw(field: str) -> Column:
    """The field as written, a VARIANT (NULL when absent): from a second parse in which every
    field is a VARIANT, so its JSON type is known (the typed parse turns ``"12"`` into a NULL
    ``scn`` and ``12`` into the string ``source_database_name`` "12")."""
    return F.col("raw")[field]


def _given(field: str) -> Column:
    """The field is present and not JSON null."""
    return _raw(field).isNotNull() & ~F.is_variant_null(_raw(field))


def _json_type(value: Column) -> Column:
    """STRING, BIGINT (any JSON integer in the 64-bit range; INT, SMALLINT, TINYINT for small
    ones), DECIMAL(p,s), DOUBLE, BOOLEAN, OBJECT<...>, ARRAY<...> or VOID (JSON null)."""
    return F.schema_of_variant(value)


_JSON_INTEGER_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def _as_written(value: Column, length: int = 60) -> Column:
    """The first characters of a VARIANT as JSON text, for a reason."""
    return F.substring(F.to_json(value), 1, length)


def _raw_schema() -> T.StructType:
    return T.StructType([T.StructField(f.name, T.VariantType()) for f in LCR_FIELDS])


def _sql_list(values: tuple[str, ...]) -> str:
    return ", ".join(values)


def _column_value_problem(array_field: str) -> tuple[Column, Column]:
    """(is bad, reason) for the first bad element of a column value array."""
    values = F.col("lcr")[array_field]

    def bad_name(value: Column) -> Column:
        return value["column_name"].isNull() | ~value["column_name"].rlike(
            ORACLE_IDENTIFIER_PATTERN
        )

    def bad_type(value: Column) -> Column:
        return value["data_type"].isNull() | ~value["data_type"].isin(*LCR_DATA_TYPES)

    first_bad_name = F.array_position(F.transform(values, bad_name), F.lit(True))
    first_bad_type = F.array_position(F.transform(values, bad_type), F.lit(True))
    reason = F.when(
        first_bad_name > 0,
        F.format_string(
            f"{array_field}[%d].column_name must be a non-empty identifier "
            "(1-128 characters, no control characters or double quotes), got %s",
            first_bad_name - 1,
            F.coalesce(values[first_bad_name - 1]["column_name"], F.lit("nothing")),
        ),
    ).otherwise(
        F.format_string(
            f"{array_field}[%d].data_type must be one of {_sql_list(LCR_DATA_TYPES)}, got %s",
            first_bad_type - 1,
            F.coalesce(values[first_bad_type - 1]["data_type"], F.lit("nothing")),
        )
    )
    return values.isNotNull() & ((first_bad_name > 0) | (first_bad_type > 0)), reason


def _column_value_json_type_problem(array_field: str) -> tuple[Column, Column]:
    """(is bad, reason) for the first column value whose ``column_name`` is not a JSON string or
    whose ``value`` is not a string, a number or null (the typed parse would keep an object's
    JSON text, or ``true``, as the value's text)."""
    elements = F.try_variant_get(_raw(array_field), "$", "array<variant>")

    def member_type(element: Column, member: str) -> Column:
        return _json_type(F.try_variant_get(element, f"$.{member}", "variant"))

    def bad_name(element: Column) -> Column:
        return F.coalesce(member_type(element, "column_name") != "STRING", F.lit(False))

    def bad_value(element: Column) -> Column:
        return F.coalesce(
            member_type(element, "value").rlike("^(OBJECT|ARRAY|BOOLEAN)"), F.lit(False)
        )

    first_bad_name = F.array_position(F.transform(elements, bad_name), F.lit(True))
    first_bad_value = F.array_position(F.transform(elements, bad_value), F.lit(True))

    def written(index: Column, member: str) -> Column:
        return _as_written(F.try_variant_get(elements[index - 1], f"$.{member}", "variant"))

    reason = F.when(
        first_bad_name > 0,
        F.format_string(
            f"{array_field}[%d].column_name must be a string, got %s",
            first_bad_name - 1,
            written(first_bad_name, "column_name"),
        ),
    ).otherwise(
        F.format_string(
            f"{array_field}[%d].value must be a string, a number or null, got %s",
            first_bad_value - 1,
            written(first_bad_value, "value"),
        )
    )
    return elements.isNotNull() & ((first_bad_name > 0) | (first_bad_value > 0)), reason


def _json_type_check(name: str, kind: str) -> tuple[Column, str | None, Column]:
    """A given field whose JSON type is not the contract's: (condition, field, reason)."""
    json_type = _json_type(_raw(name))
    if kind == "integer":
        bad = ~json_type.isin(*_JSON_INTEGER_TYPES)
        expected = "an integer (a JSON number without fraction or exponent, 64-bit)"
    elif kind == "column_values":
        bad = ~json_type.startswith("ARRAY")
        expected = "an array of column values"
    else:
        bad = json_type != "STRING"
        expected = "a string"
    reason = F.concat(F.lit(f"field '{name}' must be {expected}, got "), _as_written(_raw(name)))
    return _given(name) & bad, name, reason


def classify_lines(lines: DataFrame) -> DataFrame:
    """Add ``lcr``, ``field`` and ``reason`` to a DataFrame of landing lines."""
    # Two projections rather than a withColumn each: every one analyzes the whole plan again.
    parsed = lines.select(
        "*",
        F.from_json(F.col("line"), lcr_parse_schema(), {"mode": "PERMISSIVE"}).alias("lcr"),
        F.from_json(F.col("line"), _raw_schema(), {"mode": "PERMISSIVE"}).alias("raw"),
    )
    field_column, reason_column = _classification(
        parsed.sparkSession,
        "read_problem" in lines.columns,
        "read_problem_field" in lines.columns,
    )
    return parsed.select(
        *(parsed[name] for name in lines.columns),
        "lcr",
        field_column.alias("field"),
        reason_column.alias("reason"),
    )


# Building the classification takes ~11,000 calls into the JVM: 3.4-4 s on a slow 2-core
# machine, four times the classification's own Spark job over a few lines (measured
# 2026-12-05), and paid by every ingest batch and every line the testing kit lands. The columns
# reference input columns by name only, so one build serves every DataFrame of a session.
_Classification = tuple[Column, Column]
_classifications: WeakKeyDictionary[SparkSession, dict[tuple[bool, bool], _Classification]] = (
    WeakKeyDictionary()
)


def _classification(
    spark: SparkSession, has_read_problem: bool, has_read_problem_field: bool
) -> _Classification:
    """The (field, reason) columns of a line, built once per session and input shape."""
    built = _classifications.setdefault(spark, {})
    shape = (has_read_problem, has_read_problem_field)
    if shape not in built:
        built[shape] = _build_classification(has_read_problem, has_read_problem_field)
    return built[shape]


def _build_classification(has_read_problem: bool, has_read_problem_field: bool) -> _Classification:
    command = F.col("lcr.command_type")
    is_row = command.isin(*ROW_COMMANDS)
    is_ddl = command.isin(*DDL_COMMANDS)

    # (condition, field, reason) in the order a reader would check them; the first match wins.
    checks: list[tuple[Column, str | Column | None, Column]] = []
    if has_read_problem:
        # Set by the reader (lakeapply.bronze.lines): bytes that are not UTF-8, a file that
        # cannot be decompressed. It says more than any JSON check could.
        # A capture-format adapter (lakeapply.bronze.formats) also names the offending field.
        problem_field = (
            F.col("read_problem_field") if has_read_problem_field else F.lit(None).cast("string")
        )
        checks.append((F.col("read_problem").isNotNull(), problem_field, F.col("read_problem")))
    checks += [
        (F.trim(F.col("line")) == "", None, F.lit("empty line")),
        (
            F.col("line").startswith("\ufeff"),
            None,
            F.lit(
                "line starts with a UTF-8 byte order mark (BOM), which is only allowed at the "
                "start of a file"
            ),
        ),
        (
            ~F.col("line").rlike(r"^\s*\{") | F.json_object_keys(F.col("line")).isNull(),
            None,
            F.concat(
                F.lit(
                    "not a JSON object (invalid or truncated JSON, or nested deeper than the "
                    "JSON parser allows): "
                ),
                F.substring(F.col("line"), 1, 80),
            ),
        ),
    ]
    checks += _contract_checks(command, is_row, is_ddl)

    field_column: Column = F.lit(None).cast("string")
    reason_column: Column = F.lit(None).cast("string")
    for condition, offending_field, reason in reversed(checks):
        field_value = (
            offending_field if isinstance(offending_field, Column) else F.lit(offending_field)
        )
        field_column = F.when(condition, field_value).otherwise(field_column)
        reason_column = F.when(condition, reason).otherwise(reason_column)
    return field_column, reason_column


def _contract_checks(
    command: Column, is_row: Column, is_ddl: Column
) -> list[tuple[Column, str | Column | None, Column]]:
    """The LCR contract's checks of a parsed line (``lcr``, ``raw``), in the order a reader
    would check them: required fields, JSON types, the schema, the command type, ids and times,
    then what each command requires (``_command_checks``)."""
    checks: list[tuple[Column, str | Column | None, Column]] = []
    for field in LCR_FIELDS:
        if field.required:
            checks.append(
                (
                    ~_given(field.name),
                    field.name,
                    F.lit(
                        f"required field '{field.name}' is missing or null (expected {field.kind})"
                    ),
                )
            )
    checks += [_json_type_check(field.name, field.kind) for field in LCR_FIELDS]
    checks += [
        (
            F.col("lcr").isNull() | F.col("lcr.source_database_name").isNull(),
            None,
            F.lit(
                "line does not match the LCR schema (a column value must be an object with "
                "column_name, data_type and value)"
            ),
        ),
        (
            ~command.isin(*_ALL_COMMANDS),
            "command_type",
            F.concat(
                F.lit(f"field 'command_type' must be one of {_sql_list(_ALL_COMMANDS)}; got "),
                command,
            ),
        ),
        (
            ~F.col("lcr.transaction_id").rlike(TRANSACTION_ID_PATTERN),
            "transaction_id",
            F.concat(
                F.lit("field 'transaction_id' must be usn.slot.sqn (e.g. 4.11.854); got "),
                F.col("lcr.transaction_id"),
            ),
        ),
        (
            F.col("lcr.source_time").isNotNull()
            & F.try_to_timestamp(F.col("lcr.source_time")).isNull(),
            "source_time",
            F.concat(
                F.lit("field 'source_time' must be an ISO-8601 time; got "),
                F.col("lcr.source_time"),
            ),
        ),
    ]
    return checks + _command_checks(command, is_row, is_ddl)


def _command_checks(
    command: Column, is_row: Column, is_ddl: Column
) -> list[tuple[Column, str | Column | None, Column]]:
    """What each command requires: the column value arrays, the fields of its command type,
    identifiers, a DDL's text, and each column value's JSON types."""
    checks: list[tuple[Column, str | Column | None, Column]] = []
    for array_field in ("old_values", "new_values"):
        checks.append(
            (
                _given(array_field) & F.col("lcr")[array_field].isNull(),
                array_field,
                F.lit(
                    f"field '{array_field}' must be an array of column values "
                    '({"column_name": ..., "data_type": ..., "value": ...})'
                ),
            )
        )
    for command_name, required in _REQUIRED_BY_COMMAND.items():
        for field_name in required:
            checks.append(
                (
                    (command == command_name) & F.col("lcr")[field_name].isNull(),
                    field_name,
                    F.lit(f"an LCR with command_type {command_name} requires field '{field_name}'"),
                )
            )
    for field_name in ("object_owner", "object_name"):
        value = F.col("lcr")[field_name]
        checks.append(
            (
                (is_row | is_ddl) & value.isNotNull() & ~value.rlike(ORACLE_IDENTIFIER_PATTERN),
                field_name,
                F.concat(
                    F.lit(
                        f"field '{field_name}' must be an identifier (1-128 characters, no control "
                        "characters or double quotes); got "
                    ),
                    value,
                ),
            )
        )
    checks.append(
        (
            is_ddl & F.col("lcr.ddl_text").isNull(),
            "ddl_text",
            F.lit("a DDL LCR requires field 'ddl_text'"),
        )
    )
    for array_field in ("old_values", "new_values"):
        bad, element_reason = _column_value_json_type_problem(array_field)
        checks.append((bad, array_field, element_reason))
        bad, element_reason = _column_value_problem(array_field)
        checks.append((bad, array_field, element_reason))
    return checks


def lcr_kind(command: Column) -> Column:
    """ROW, DIRECTIVE (COMMIT/ROLLBACK) or DDL."""
    return (
        F.when(command.isin(*ROW_COMMANDS), F.lit("ROW"))
        .when(command.isin(*DIRECTIVE_COMMANDS), F.lit("DIRECTIVE"))
        .otherwise(F.lit("DDL"))
    )
