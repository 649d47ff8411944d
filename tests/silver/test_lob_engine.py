"""Rule 12 through the engine: LOB pieces staged, folded onto the stored CLOB, NCLOB and BLOB
values across cycles, and their errors in the error queue (the piece logic itself:
tests/silver/test_lob.py)."""

from __future__ import annotations

from chispa import assert_df_equality

from lakeapply.testing import LakeapplyHarness, apply_settings, destination, table_definition

DB = "LOB.DB"
DOC = table_definition(
    "DMS.DOC",
    {"ID": "NUMBER(6)", "BODY": "CLOB", "NOTE": "NCLOB", "SCAN": "BLOB"},
    primary_key=["ID"],
)


def test_lob_pieces_assemble_onto_the_stored_values_across_cycles(
    lakeapply: LakeapplyHarness,
) -> None:
    lakeapply.configure(
        apply_settings(destination(DOC, source=DB, instantiation_scn=1), disable_on_error=False)
    )
    t = lakeapply.txn
    lakeapply.run(
        t().insert("DMS.DOC", ID=1, BODY="abc", NOTE="\u00fcber", SCAN=b"\x01\x02").commit(),
        t().insert("DMS.DOC", ID=2, BODY=None, NOTE="n", SCAN=b"").commit(),
    )
    one, two = {"ID": "1.0"}, {"ID": 2}

    lakeapply.run(
        t()
        .lob_write("DMS.DOC", one, "BODY", "XY", offset=6)  # a gap of two spaces
        .lob_write("DMS.DOC", one, "NOTE", "a", offset=2)  # characters, not bytes
        .lob_erase("DMS.DOC", one, "SCAN", offset=2, size=5)  # zeros, up to the end
        .lob_write("DMS.DOC", two, "SCAN", b"\xaa", offset=2)
        .commit(),
        # Document 2's BODY is NULL: no LOB to write into (ORA-22275).
        t(transaction_id="7.7.7").lob_write("DMS.DOC", two, "BODY", "x", offset=1).commit(),
        t().lob_trim("DMS.DOC", one, "BODY", size=6).commit(),
    )

    assert_df_equality(
        lakeapply.silver("DMS.DOC"),
        lakeapply.expected(
            "DMS.DOC",
            [
                (1, "abc  X", "\u00fcaer", bytearray(b"\x01\x00")),
                (2, None, "n", bytearray(b"\x00\xaa")),
            ],
        ),
        ignore_row_order=True,
    )
    [error] = lakeapply.error_queue().collect()
    assert (error.source_transaction_id, error.error_number) == ("7.7.7", 22275)
    assert error.error_message == (
        "ORA-22275: invalid LOB locator specified: the LOB column is NULL, LOB WRITE on column "
        "BODY of table DMS.DOC, key (ID)=(2)"
    )
