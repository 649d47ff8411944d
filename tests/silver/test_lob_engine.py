"""Rule 12 through the engine: LOB pieces staged, folded onto the stored CLOB, NCLOB and BLOB
values across cycles, and their errors in the error queue (the piece logic itself:
tests/silver/test_lob.py)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lakeapply.contract.table_definitions import table_definition_from_dict
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import dictionary
from lakeapply.silver.engine import (
    ensure_apply_tables,
    ensure_destination_tables,
    run_apply,
    start_apply,
)
from lakeapply.silver.settings import ApplySettings, DestinationTable
from lakeapply.testing import ScnClock, txn
from tests.silver.bronze_fixture import land

DB = "LOB.DB"
DOC = table_definition_from_dict(
    {
        "owner": "DMS",
        "name": "DOC",
        "columns": [
            {"name": "ID", "type": "NUMBER(6)"},
            {"name": "BODY", "type": "CLOB"},
            {"name": "NOTE", "type": "NCLOB"},
            {"name": "SCAN", "type": "BLOB"},
        ],
        "primary_key": ["ID"],
    },
    "test",
)
SETTINGS = ApplySettings(
    apply_name="LOB_APPLY",
    source_databases=(DB,),
    tables=(DestinationTable(DB, DOC, "lob_doc", instantiation_scn=1),),
    disable_on_error=False,
)


def test_lob_pieces_assemble_onto_the_stored_values_across_cycles(
    spark: SparkSession, catalog: Catalog
) -> None:
    ensure_apply_tables(spark, catalog)
    ensure_destination_tables(spark, catalog, SETTINGS)
    start_apply(spark, catalog, SETTINGS)
    clock = ScnClock(100)

    def t(transaction_id: str | None = None) -> Any:
        return txn(DB, clock=clock, tables=DOC, transaction_id=transaction_id)

    land(
        spark,
        catalog,
        [
            *t().insert("DMS.DOC", ID=1, BODY="abc", NOTE="\u00fcber", SCAN=b"\x01\x02").commit(),
            *t().insert("DMS.DOC", ID=2, BODY=None, NOTE="n", SCAN=b"").commit(),
        ],
    )
    run_apply(spark, catalog, SETTINGS)
    one, two = {"ID": "1.0"}, {"ID": 2}
    land(
        spark,
        catalog,
        [
            *t()
            .lob_write("DMS.DOC", one, "BODY", "XY", offset=6)  # a gap of two spaces
            .lob_write("DMS.DOC", one, "NOTE", "a", offset=2)  # characters, not bytes
            .lob_erase("DMS.DOC", one, "SCAN", offset=2, size=5)  # zeros, up to the end
            .lob_write("DMS.DOC", two, "SCAN", b"\xaa", offset=2)
            .commit(),
            # Document 2's BODY is NULL: no LOB to write into (ORA-22275).
            *t("7.7.7").lob_write("DMS.DOC", two, "BODY", "x", offset=1).commit(),
            *t().lob_trim("DMS.DOC", one, "BODY", size=6).commit(),
        ],
    )

    run_apply(spark, catalog, SETTINGS)

    rows = {
        r.ID: (r.BODY, r.NOTE, bytes(r.SCAN))
        for r in spark.table(catalog.silver_table("lob_doc")).collect()
    }
    assert rows == {
        1: ("abc  X", "\u00fcaer", b"\x01\x00"),
        2: (None, "n", b"\x00\xaa"),
    }
    [error] = (
        spark.table(catalog.apply_table(dictionary.ERROR_QUEUE))
        .where(F.col("apply_name") == SETTINGS.apply_name)
        .collect()
    )
    assert (error.source_transaction_id, error.error_number) == ("7.7.7", 22275)
    assert error.error_message == (
        "ORA-22275: invalid LOB locator specified: the LOB column is NULL, LOB WRITE on column "
        "BODY of table DMS.DOC, key (ID)=(2)"
    )
