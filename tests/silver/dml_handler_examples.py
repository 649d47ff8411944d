"""DML handlers the tests register by name (``tests.silver.dml_handler_examples:<function>``):
each takes the DataFrame of row LCRs it handles and returns the LCRs to execute instead."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tests.reference.dml_handlers import STATEMENTS


def soft_delete(lcrs: DataFrame) -> DataFrame:
    """A DELETE becomes an UPDATE that marks the row deleted: the destination keeps history."""
    deleted = F.array(
        F.struct(
            F.lit("DELETED").alias("column_name"),
            F.lit("VARCHAR2").alias("data_type"),
            F.lit("Y").alias("value"),
        )
    )
    return lcrs.withColumns({"command_type": F.lit("UPDATE"), "new_values": deleted})


def ignore(lcrs: DataFrame) -> DataFrame:
    """Every LCR handled without being executed."""
    return lcrs.limit(0)


def refuse_negative_amounts(lcrs: DataFrame) -> DataFrame:
    """An LCR setting AMOUNT below zero raises an error; the others execute unchanged."""
    amount = F.get(F.filter("new_values", lambda v: v["column_name"] == "AMOUNT"), 0)["value"]
    return lcrs.withColumn(
        "error_message",
        F.when(
            amount.try_cast("decimal(38,10)") < 0,  # not a number: the apply reports it
            F.concat(F.lit("negative AMOUNT "), amount),
        ),
    )


def refuse_everything(lcrs: DataFrame) -> DataFrame:
    """Every LCR raises an error."""
    return lcrs.withColumn("error_message", F.lit("refused"))


def note_handled(lcrs: DataFrame) -> DataFrame:
    """NOTE set to 'H' in the new values (added when the LCR has none for it)."""
    note = F.struct(
        F.lit("NOTE").alias("column_name"),
        F.lit("VARCHAR2").alias("data_type"),
        F.lit("H").alias("value"),
    )
    kept = F.filter("new_values", lambda v: v["column_name"] != "NOTE")
    return lcrs.withColumn(
        "new_values",
        F.when(F.col("new_values").isNull(), F.col("new_values")).otherwise(
            F.concat(kept, F.array(note))
        ),
    )


def without_old_values(lcrs: DataFrame) -> DataFrame:
    """A handler with a bug: it drops a column the apply needs."""
    return lcrs.drop("old_values")


UPPER_HOLDER = (
    "SELECT * EXCEPT (new_values), "
    "transform(new_values, v -> CASE WHEN v.column_name = 'HOLDER' "
    "THEN named_struct('column_name', v.column_name, 'data_type', v.data_type, "
    "'value', upper(v.value)) ELSE v END) AS new_values FROM {lcrs}"
)

# Statement handlers the reference has row versions of (by handler_name).
MIRROR_NEGATIVE = STATEMENTS["MIRROR_NEGATIVE"]
AS_CAPTURED = STATEMENTS["AS_CAPTURED"]


# Error handlers: each gets the failing LCRs with raised_error_number / raised_error_message.


def skip_missing_rows(lcrs: DataFrame) -> DataFrame:
    """An LCR whose row does not exist (ORA-26787) is handled by doing nothing; any other
    error is executed again unchanged (and fails again)."""
    return lcrs.where(F.col("raised_error_number") != 26787)


def insert_duplicate_as_update(lcrs: DataFrame) -> DataFrame:
    """An INSERT of a key that exists (ORA-00001) becomes an UPDATE of that row to the
    inserted values (keyed by ID, comparing nothing else)."""
    duplicate = (F.col("command_type") == "INSERT") & (F.col("raised_error_number") == 1)
    return lcrs.withColumns(
        {
            "command_type": F.when(duplicate, F.lit("UPDATE")).otherwise(F.col("command_type")),
            "old_values": F.when(
                duplicate, F.filter("new_values", lambda v: v["column_name"] == "ID")
            ).otherwise(F.col("old_values")),
            "new_values": F.when(
                duplicate, F.filter("new_values", lambda v: v["column_name"] != "ID")
            ).otherwise(F.col("new_values")),
        }
    )


def apply_without_comparing(lcrs: DataFrame) -> DataFrame:
    """An UPDATE or DELETE whose old values conflict with the row (ORA-26786) is executed
    again comparing only the key (ID): the source's change wins."""
    conflict = F.col("raised_error_number") == 26786
    return lcrs.withColumn(
        "old_values",
        F.when(conflict, F.filter("old_values", lambda v: v["column_name"] == "ID")).otherwise(
            F.col("old_values")
        ),
    )


def refuse_with_the_error(lcrs: DataFrame) -> DataFrame:
    """Every failing LCR raises an error of the handler's own, naming the apply's."""
    return lcrs.withColumn(
        "error_message", F.concat(F.lit("could not apply: "), F.col("raised_error_message"))
    )


def two_for_one(lcrs: DataFrame) -> DataFrame:
    """A handler with a bug: it returns each failing LCR twice."""
    return lcrs.unionByName(lcrs)
