"""DML handlers the tests register by name (``tests.silver.dml_handler_examples:<function>``):
each takes the DataFrame of row LCRs it handles and returns the LCRs to execute instead."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
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


# Handlers that write another destination table of the apply (an audit or history table), as an
# Oracle handler runs SQL on other tables inside the apply's transaction.


def _value_of(column: str) -> Column:
    """A column's value in the LCR: its new value, else its old one (a DELETE)."""

    def named(images: str) -> Column:
        return F.try_element_at(F.filter(images, lambda v: v["column_name"] == column), F.lit(1))

    return F.coalesce(named("new_values")["value"], named("old_values")["value"])


def _history_row(lcrs: DataFrame, object_name: str) -> DataFrame:
    """One INSERT into ``object_name`` per LCR: the account, the operation, the commit SCN."""
    values = [
        ("ID", "NUMBER", _value_of("ID")),
        ("OPERATION", "VARCHAR2", F.col("command_type")),
        ("COMMIT_SCN", "NUMBER", F.col("commit_scn").cast("string")),
        ("AMOUNT", "NUMBER", F.col("new_amount")),
    ]
    return (
        lcrs.withColumn(
            "new_amount",
            F.try_element_at(
                F.filter("new_values", lambda v: v["column_name"] == "AMOUNT"), F.lit(1)
            )["value"],
        )
        .withColumns(
            {
                "command_type": F.lit("INSERT"),
                "object_name": F.lit(object_name),
                "old_values": F.lit(None).cast(lcrs.schema["old_values"].dataType),
                "new_values": F.array(
                    *(
                        F.struct(
                            F.lit(name).alias("column_name"),
                            F.lit(data_type).alias("data_type"),
                            value.alias("value"),
                        )
                        for name, data_type, value in values
                    )
                ),
            }
        )
        .drop("new_amount")
    )


def record_history(lcrs: DataFrame) -> DataFrame:
    """Each LCR executed as captured, and a row of APP.ACCOUNT_HISTORY recording it."""
    return lcrs.unionByName(_history_row(lcrs, "ACCOUNT_HISTORY"))


def record_history_in_a_missing_table(lcrs: DataFrame) -> DataFrame:
    """A handler with a bug: it records history in a table the apply does not have."""
    return lcrs.unionByName(_history_row(lcrs, "NO_SUCH_HISTORY"))


def insert_duplicate_as_update_and_log_it(lcrs: DataFrame) -> DataFrame:
    """:func:`insert_duplicate_as_update`, and a row of APP.ACCOUNT_HISTORY for each LCR it
    fixes (OPERATION ``DUPLICATE``): one LCR per failing LCR and table."""
    logged = _history_row(lcrs, "ACCOUNT_HISTORY").withColumn(
        "new_values",
        F.transform(
            "new_values",
            lambda v: F.when(
                v["column_name"] == "OPERATION",
                F.struct(
                    v["column_name"].alias("column_name"),
                    v["data_type"].alias("data_type"),
                    F.lit("DUPLICATE").alias("value"),
                ),
            ).otherwise(v),
        ),
    )
    return insert_duplicate_as_update(lcrs).unionByName(logged)


# The statement form of record_history for INSERTs (a UNION ALL matches columns by position:
# both branches list the columns they change last, in one order).
RECORD_INSERTS = (
    "SELECT * EXCEPT (command_type, object_name, old_values, new_values), "
    "command_type, object_name, old_values, new_values FROM {lcrs} "
    "UNION ALL "
    "SELECT * EXCEPT (command_type, object_name, old_values, new_values), "
    "'INSERT', 'ACCOUNT_HISTORY', NULL, array("
    "named_struct('column_name', 'ID', 'data_type', 'NUMBER', 'value', "
    "try_element_at(filter(new_values, v -> v.column_name = 'ID'), 1).value), "
    "named_struct('column_name', 'OPERATION', 'data_type', 'VARCHAR2', 'value', command_type), "
    "named_struct('column_name', 'COMMIT_SCN', 'data_type', 'NUMBER', "
    "'value', CAST(commit_scn AS STRING)), "
    "named_struct('column_name', 'AMOUNT', 'data_type', 'NUMBER', 'value', "
    "try_element_at(filter(new_values, v -> v.column_name = 'AMOUNT'), 1).value)) "
    "FROM {lcrs}"
)


def record_changes(lcrs: DataFrame) -> DataFrame:
    """Each LCR executed as captured, and a row of CHANGES (same owner) naming it: transaction,
    message, the row's ID and the operation (the workloads' history handler)."""
    values = [
        ("TRANSACTION_ID", "VARCHAR2", F.col("transaction_id")),
        ("MESSAGE_NUMBER", "NUMBER", F.col("message_number").cast("string")),
        ("ID", "NUMBER", _value_of("ID")),
        ("OPERATION", "VARCHAR2", F.col("command_type")),
    ]
    change = lcrs.withColumns(
        {
            "command_type": F.lit("INSERT"),
            "object_name": F.lit("CHANGES"),
            "old_values": F.lit(None).cast(lcrs.schema["old_values"].dataType),
            "new_values": F.array(
                *(
                    F.struct(
                        F.lit(name).alias("column_name"),
                        F.lit(data_type).alias("data_type"),
                        value.alias("value"),
                    )
                    for name, data_type, value in values
                )
            ),
        }
    )
    return lcrs.unionByName(change)
