"""LOB pieces (rule 12): a capture sends a large CLOB or BLOB change as LOB WRITE, LOB TRIM and
LOB ERASE LCRs, each naming the row by its key and one LOB column. The apply assembles them in
order onto the current value, as DBMS_LOB.WRITE/TRIM/ERASE would; a piece on a row the
destination lacks fails its transaction with ORA-26787, like an UPDATE.
"""

from __future__ import annotations

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, table_definition

DOCUMENT = table_definition(
    "DMS.DOCUMENT",
    {"ID": "NUMBER(6)", "BODY": "CLOB", "SCAN": "BLOB"},
    primary_key=["ID"],
)


def test_lob_pieces_are_assembled_onto_the_stored_value(lakeapply: LakeapplyHarness) -> None:
    lakeapply.configure(apply_settings(DOCUMENT, disable_on_error=False))
    doc = {"ID": 1}

    lakeapply.run(
        lakeapply.txn().insert("DMS.DOCUMENT", ID=1, BODY="Dear Sir,", SCAN=b"\x01").commit(),
        lakeapply.txn()
        .lob_write("DMS.DOCUMENT", doc, "BODY", " thanks.", offset=10)
        .lob_write("DMS.DOCUMENT", doc, "SCAN", b"\xff", offset=3)  # byte 2 is a zero byte
        .lob_erase("DMS.DOCUMENT", doc, "BODY", offset=1, size=4)  # "Dear" -> four spaces
        .commit(),
        lakeapply.txn(transaction_id="9.9.9")  # document 2 does not exist: ORA-26787
        .lob_trim("DMS.DOCUMENT", {"ID": 2}, "BODY", size=0)
        .commit(),
    )

    assert_df_equality(
        lakeapply.silver("DMS.DOCUMENT"),
        lakeapply.expected("DMS.DOCUMENT", [(1, "     Sir, thanks.", b"\x01\x00\xff")]),
        ignore_row_order=True,
    )
    [error] = lakeapply.error_queue().collect()
    assert (error.source_transaction_id, error.error_number) == ("9.9.9", 26787)
