"""The stateless part of applying a row LCR: route it, discard it below the instantiation SCN,
read its key, and find the errors the LCR alone decides (rules 3 and 5).

Everything here depends on the LCR and the settings only, never on destination rows, so it is
computed once per cycle, whatever the number of fold passes. The common path runs in the JVM as
Spark Column expressions (``_staged_in_spark``):

* routing: an LCR of no destination table of the apply (one a handler returned) or of a dropped
  table is ORA-00942;
* rule 3: the instantiation SCN (table level, then schema, then global) is resolved once per
  source object on the driver and joined in; no SCN is ORA-26687, a commit SCN at or below it
  discards the LCR; a DML handler's error is ORA-20000;
* rule 5: the key of an INSERT, UPDATE or DELETE whose key columns are NUMBER or character
  columns and whose key values convert cleanly (``_spark_keys``), and the key an UPDATE moves
  the row to.

Only the rest crosses into Python (``mapInPandas``, ``_keys_in_python``): keys of other types,
keys whose values need the full checks of ``rowops`` to name their error (26688, 00957, 00904,
01722, 01438, 12899, ...), LOB pieces, and the value tuples of virtual dependencies. Both paths
write a key as the same text (``fold.key_text``), so the LCRs of one key meet in one group
whichever path read them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from lakeapply.contract.oracle_types import (
    MAX_DECIMAL_PRECISION,
    UNCONSTRAINED_NUMBER_SCALE,
    TypeFamily,
)
from lakeapply.contract.table_definitions import ColumnDefinition
from lakeapply.silver.cycle_state import materialize
from lakeapply.silver.dml_handlers import HANDLER_ERROR, HANDLER_ERROR_NUMBER
from lakeapply.silver.fold import batch_records, key_text
from lakeapply.silver.rowops import ApplyRowError, lcr_keys
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.silver.virtual_dependencies import dependencies_of, dependency_values

STAGED_COLUMNS = (
    "discarded boolean, key_text string, moved_key_text string, "
    "static_error_number long, static_error_message string, value_dependencies string"
)
_STAGED_NAMES = tuple(field.split()[0] for field in STAGED_COLUMNS.split(", "))
_IMAGES = ("old_values", "new_values")  # the value arrays the Spark path reads keys from
_IN_PYTHON = "_staged_in_python"
_OBJECT = ("source_database_name", "object_owner", "object_name")

# The subset of rowops' number syntax Spark is sure to read the same way: ASCII digits, no
# blanks (Python's \d and \s also match other scripts' digits and blanks: those go to Python).
_PLAIN_NUMBER = r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$"
# Spark's JSON writer escapes control characters as \u001F, Python's as \u001f: keys holding
# one are read in Python only, so that one key has one text.
_CONTROL_CHARACTER = r"[\x00-\x1f]"


@dataclass(frozen=True)
class _KeyColumn:
    """How Spark reads one key column from an LCR value (None from ``_spark_key_column``: it
    cannot, and the table's LCRs are staged in Python)."""

    name: str
    decimal: T.DecimalType | None  # NUMBER columns
    length: int | None  # character columns: the declared length, if any
    blank_padded: bool  # CHAR, NCHAR


def _spark_key_column(column: ColumnDefinition) -> _KeyColumn | None:
    oracle_type = column.oracle_type
    if oracle_type.family is TypeFamily.NUMBER:
        precision, scale = oracle_type.precision, oracle_type.scale or 0
        if precision is None:  # rowops._to_number: stored as DECIMAL(38,10)
            precision, scale = MAX_DECIMAL_PRECISION, UNCONSTRAINED_NUMBER_SCALE
        if not 0 <= scale <= precision <= MAX_DECIMAL_PRECISION:
            return None
        if oracle_type.spark_type() != T.DecimalType(precision, scale):
            return None
        return _KeyColumn(column.name, T.DecimalType(precision, scale), None, False)
    if oracle_type.family is TypeFamily.CHARACTER:
        padded = oracle_type.name in ("CHAR", "NCHAR") and oracle_type.length is not None
        return _KeyColumn(column.name, None, oracle_type.length, padded)
    return None


def _spark_key_columns(
    settings: ApplySettings, table: DestinationTable
) -> tuple[_KeyColumn, ...] | None:
    """The table's key as Spark reads it, or None when its LCRs are staged in Python."""
    if dependencies_of(settings, table):  # virtual dependency values are computed in Python
        return None
    columns = tuple(_spark_key_column(table.definition.column(c)) for c in table.effective_key)
    if any(column is None for column in columns):
        return None
    return tuple(column for column in columns if column is not None)


def _destination_objects(
    settings: ApplySettings, to_stage: DataFrame
) -> tuple[DataFrame, list[tuple[_KeyColumn, ...]]]:
    """(source object) -> its destination: dropped, silver table, instantiation SCN (rule 3,
    resolved here once per object) and the index of its key reading (null: Python), and the
    distinct key readings."""
    readings: list[tuple[_KeyColumn, ...]] = []
    rows = []
    for source in sorted({table.source_object for table in settings.tables}):
        table = settings.table_for(*source)
        if table is None:
            continue
        reading = _spark_key_columns(settings, table)
        if reading is not None and reading not in readings:
            readings.append(reading)
        rows.append(
            (
                *source,
                table.dropped,
                table.silver_table,
                settings.instantiation_scn_for(*source),
                None if reading is None else readings.index(reading),
            )
        )
    objects = to_stage.sparkSession.createDataFrame(
        rows,
        "source_database_name string, object_owner string, object_name string, "
        "_dropped boolean, _destination string, _instantiation_scn long, _reading int",
    )
    return objects, readings


def _text(column: str) -> Column:
    """A message part as Python's f-string writes it (None for NULL)."""
    return F.coalesce(F.col(column).cast("string"), F.lit("None"))


def _routing_errors(settings: ApplySettings) -> tuple[Column, Column]:
    """(error number, message) of an LCR that cannot reach a destination row: no destination
    table, a dropped one, no instantiation SCN."""
    owner, name, database = (
        _text("object_owner"),
        _text("object_name"),
        _text("source_database_name"),
    )
    unrouted = F.col("_dropped").isNull()
    dropped = F.col("_dropped")
    no_scn = F.col("_instantiation_scn").isNull()
    number = (
        F.when(unrouted, F.lit(942)).when(dropped, F.lit(942)).when(no_scn, F.lit(26687))
    ).cast("long")
    message = (
        F.when(
            unrouted,
            F.concat(
                F.lit('ORA-00942: table or view does not exist: "'),
                owner,
                F.lit('"."'),
                name,
                F.lit('" of source database "'),
                database,
                F.lit(
                    f'" is no destination table of apply {settings.apply_name} (an LCR a DML '
                    "or error handler returned)"
                ),
            ),
        )
        .when(
            dropped,
            F.concat(
                F.lit('ORA-00942: table or view does not exist: "'),
                owner,
                F.lit('"."'),
                name,
                F.lit('" was dropped by a DROP TABLE applied earlier (silver table '),
                F.col("_destination"),
                F.lit(")"),
            ),
        )
        .when(
            no_scn,
            F.concat(
                F.lit('ORA-26687: no instantiation SCN provided for "'),
                owner,
                F.lit('"."'),
                name,
                F.lit('" in source database "'),
                database,
                F.lit('"'),
            ),
        )
    )
    return number, message


def _names(image: Column) -> Column:
    """The column names of an image, in order (no lambda: Spark compiles the whole stage)."""
    return F.coalesce(image, F.array())["column_name"]


def _unique_names(image: Column) -> Column:
    """No column twice in the image (rowops raises ORA-00957 for that: Python names it)."""
    names = _names(image)
    return F.size(F.array_distinct(names)) == F.size(names)


def _value_of(image: Column, name: str) -> tuple[Column, Column]:
    """(present, raw value) of one column in an image whose names are unique (the stage checks
    that first). ``array_position`` and ``get`` instead of a ``filter`` lambda: a higher-order
    function is interpreted row by row and turns off code generation for the whole projection."""
    position = F.array_position(_names(image), F.lit(name))
    # get: NULL, not an error, for the index -1 of an absent column (whatever ANSI says)
    return position > 0, F.get(F.coalesce(image, F.array())["value"], position - 1)


def _converted(column: _KeyColumn, raw: Column) -> tuple[Column, Column]:
    """(clean, value): the value as the destination type holds it, and whether Spark read it
    exactly as ``rowops.convert_value`` does (otherwise Python reads it)."""
    if column.decimal is not None:
        # Spark's cast rounds half up to the scale and is NULL when the rounded value has more
        # integer digits than the precision allows: rowops' rounding and its ORA-01438.
        value = raw.try_cast(column.decimal)
        return raw.isNull() | (raw.rlike(_PLAIN_NUMBER) & value.isNotNull()), value
    fits = F.lit(True) if column.length is None else F.char_length(raw) <= column.length
    clean = raw.isNull() | (fits & ~raw.rlike(_CONTROL_CHARACTER))
    if column.blank_padded and column.length is not None:
        return clean, F.rpad(raw, column.length, " ")  # D8: CHAR is blank-padded
    return clean, raw


def _key_json(values: list[Column]) -> Column:
    return F.to_json(F.array(*[value.cast("string") for value in values]))


Layer = dict[str, Column]


def _spark_keys(reading: tuple[_KeyColumn, ...], index: int) -> tuple[list[Layer], Column]:
    """The layers of intermediate columns that read the key of an LCR of a table read by
    ``reading`` (number ``index``), and (clean, key text, moved key text) over them, as
    ``rowops.lcr_keys`` finds them: INSERT from new_values, UPDATE and DELETE from old_values,
    and for an UPDATE the key its new values move the row to (NULL when unchanged).

    Layers, not one expression: each value is used several times (cleanliness, key, moved key)
    and inside conditions, where Spark evaluates a subexpression again at every use."""
    prefix = f"_r{index}_"

    def col(name: str) -> Column:
        return F.col(prefix + name)

    command = F.col("command_type")
    mine = F.col("_reading") == index
    keyed_by_old = command.isin("UPDATE", "DELETE")
    images: Layer = {
        prefix + "key_image": F.when(
            mine, F.when(keyed_by_old, F.col("old_values")).otherwise(F.col("new_values"))
        ),
        prefix + "new_image": F.when(mine, F.col("new_values")),
    }
    lookups: Layer = {
        prefix + "names_ok": command.isin("INSERT", "UPDATE", "DELETE")
        & _unique_names(col("key_image"))
        & (~(command == "UPDATE") | _unique_names(col("new_image")))
    }
    for number, column in enumerate(reading):
        present, raw = _value_of(col("key_image"), column.name)
        sent, new_raw = _value_of(col("new_image"), column.name)
        lookups |= {
            f"{prefix}present{number}": present,
            f"{prefix}raw{number}": raw,
            f"{prefix}sent{number}": sent,
            f"{prefix}new_raw{number}": new_raw,
        }
    conversions: Layer = {}
    for number, column in enumerate(reading):
        readable, value = _converted(column, col(f"raw{number}"))
        new_readable, new_value = _converted(column, col(f"new_raw{number}"))
        conversions |= {
            f"{prefix}readable{number}": readable,
            f"{prefix}value{number}": value,
            f"{prefix}new_readable{number}": new_readable,
            f"{prefix}new_value{number}": new_value,
        }
    clean, keys, moved, any_sent, changed = col("names_ok"), [], [], F.lit(False), F.lit(False)
    for number in range(len(reading)):
        value, sent = col(f"value{number}"), col(f"sent{number}")
        moved_value = F.when(sent, col(f"new_value{number}")).otherwise(value)
        clean = clean & col(f"present{number}") & col(f"readable{number}")
        clean = clean & (~(command == "UPDATE") | ~sent | col(f"new_readable{number}"))
        keys.append(value)
        moved.append(moved_value)
        any_sent = any_sent | sent
        changed = changed | ~moved_value.eqNullSafe(value)
    moved_text = F.when((command == "UPDATE") & any_sent & changed, _key_json(moved))
    return [images, lookups, conversions], F.struct(
        clean.alias("clean"), _key_json(keys).alias("key"), moved_text.alias("moved")
    )


def _by_reading(readings: list[tuple[_KeyColumn, ...]]) -> tuple[list[Layer], Column]:
    """The layers of every key reading, and the (clean, key, moved) struct of each LCR, chosen
    by its table's key reading."""
    layers: list[Layer] = [{}, {}, {}]
    chosen: Column = F.lit(None)
    for index, reading in reversed(list(enumerate(readings))):
        reading_layers, keys = _spark_keys(reading, index)
        for layer, more in zip(layers, reading_layers, strict=True):
            layer.update(more)
        chosen = F.when(F.col("_reading") == index, keys).otherwise(chosen)
    if not readings:
        chosen = F.struct(
            F.lit(False).alias("clean"),
            F.lit(None).cast("string").alias("key"),
            F.lit(None).cast("string").alias("moved"),
        )
    return layers, chosen


def _staged_in_spark(settings: ApplySettings, to_stage: DataFrame) -> DataFrame:
    """Every LCR with the STAGED_COLUMNS Spark decides, and ``_IN_PYTHON`` for the ones whose
    key Python reads."""
    objects, readings = _destination_objects(settings, to_stage)
    frame = to_stage.join(F.broadcast(objects), list(_OBJECT), "left")
    error_number, error_message = _routing_errors(settings)
    layers, keys = _by_reading(readings)
    for layer in layers:
        frame = frame.withColumns(layer)
    routed = error_number.isNull()
    frame = frame.withColumns(
        {
            "_error_number": error_number,
            "_discarded": routed & (F.col("commit_scn") <= F.col("_instantiation_scn")),
            "_keys": keys,
        }
    )
    routed = F.col("_error_number").isNull()
    discarded = F.col("_discarded")
    handler_error = routed & ~discarded & F.col(HANDLER_ERROR).isNotNull()
    decided = ~routed | discarded | handler_error
    keyed = ~decided & F.col("_reading").isNotNull() & F.col("_keys.clean")
    output = [c for c in to_stage.columns if c not in _IMAGES]
    return frame.select(
        *output,
        discarded.alias("discarded"),
        F.when(keyed, F.col("_keys.key")).alias("key_text"),
        F.when(keyed, F.col("_keys.moved")).alias("moved_key_text"),
        F.when(~routed, F.col("_error_number"))
        .when(handler_error, F.lit(HANDLER_ERROR_NUMBER).cast("long"))
        .alias("static_error_number"),
        F.when(~routed, error_message)
        .when(handler_error, F.col(HANDLER_ERROR))
        .alias("static_error_message"),
        F.lit(None).cast("string").alias("value_dependencies"),
        (~decided & ~keyed).alias(_IN_PYTHON),
    )


def _stage_one(settings: ApplySettings, message: dict[str, Any]) -> tuple[Any, ...]:
    """The key of an LCR Spark did not read (routed, not discarded, no handler error)."""
    table = settings.table_for(
        message["source_database_name"], message["object_owner"], message["object_name"]
    )
    assert table is not None  # Spark stages the LCRs of no destination table (ORA-00942)
    lcr = {
        "command_type": message["command_type"],
        "old_values": json.loads(message["old_json"]) if message["old_json"] else None,
        "new_values": json.loads(message["new_json"]) if message["new_json"] else None,
    }
    try:
        key, moved = lcr_keys(table, lcr)
    except ApplyRowError as error:
        return (False, None, None, error.error_number, error.text, None)
    return (
        False,
        key_text(table, key),
        None if moved is None else key_text(table, moved),
        None,
        None,
        dependency_values(settings, table, lcr),  # virtual dependencies (rule 9)
    )


def _keys_in_python(settings: ApplySettings) -> Any:
    """The mapInPandas function: adds the STAGED_COLUMNS to each message."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        names = list(_STAGED_NAMES)
        for batch in batches:
            staged = [_stage_one(settings, message) for message in batch_records(batch)]
            extra = pd.DataFrame.from_records(staged, columns=names, index=batch.index)
            if not staged:
                extra = pd.DataFrame({name: pd.Series(dtype=object) for name in names})
            yield pd.concat([batch, extra], axis=1)

    return run


def stage_lcrs(settings: ApplySettings, to_stage: DataFrame) -> DataFrame:
    """``to_stage`` (each LCR to execute, with its value arrays and their JSON text) staged:
    without the value arrays, plus the STAGED_COLUMNS (materialized)."""
    in_spark = materialize(_staged_in_spark(settings, to_stage))
    in_python = in_spark.where(F.col(_IN_PYTHON))
    decided = in_spark.where(~F.col(_IN_PYTHON)).drop(_IN_PYTHON)
    if in_python.limit(1).count() == 0:
        return decided
    unstaged = in_python.drop(_IN_PYTHON, *_STAGED_NAMES)
    staged_schema = T.StructType(
        unstaged.schema.fields + T._parse_datatype_string(STAGED_COLUMNS).fields  # type: ignore[attr-defined]
    )
    by_python = unstaged.mapInPandas(_keys_in_python(settings), staged_schema)
    return materialize(decided.unionByName(by_python))
