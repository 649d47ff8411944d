"""DML handlers the tests register by name (``tests.silver.dml_handler_examples:<function>``):
each takes the DataFrame of row LCRs it handles and returns the LCRs to execute instead."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


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
