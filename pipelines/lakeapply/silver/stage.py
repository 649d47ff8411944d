"""The stateless part of applying a row LCR: rules, instantiation SCN, keys, static errors.

Runs on the executors (``mapInPandas``). Everything here depends on the LCR and the settings only,
never on destination rows, so it is computed once per cycle, whatever the number of fold passes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pandas as pd

from lakeapply.silver.dml_handlers import HANDLER_ERROR, HANDLER_ERROR_NUMBER
from lakeapply.silver.fold import batch_records, key_text
from lakeapply.silver.rowops import ApplyRowError, lcr_keys
from lakeapply.silver.settings import ApplySettings
from lakeapply.silver.virtual_dependencies import dependency_values

STAGED_COLUMNS = (
    "discarded boolean, key_text string, moved_key_text string, "
    "static_error_number long, static_error_message string, value_dependencies string"
)


def _stage_one(settings: ApplySettings, message: dict[str, Any]) -> tuple[Any, ...]:
    database = message["source_database_name"]
    owner, name = message["object_owner"], message["object_name"]
    table = settings.table_for(database, owner, name)
    if table is None:  # the rules route every captured LCR: a handler returned this one
        error = (
            942,
            f'ORA-00942: table or view does not exist: "{owner}"."{name}" of source database '
            f'"{database}" is no destination table of apply {settings.apply_name} (an LCR a '
            "DML or error handler returned)",
        )
        return (False, None, None, *error, None)
    if table.dropped:
        error = (
            942,
            f'ORA-00942: table or view does not exist: "{owner}"."{name}" was dropped by a '
            f"DROP TABLE applied earlier (silver table {table.silver_table})",
        )
        return (False, None, None, *error, None)
    # Rule 3: instantiation SCN, table level first, then schema and global.
    instantiation_scn = settings.instantiation_scn_for(database, owner, name)
    if instantiation_scn is None:
        error = (
            26687,
            f'ORA-26687: no instantiation SCN provided for "{owner}"."{name}" in source '
            f'database "{database}"',
        )
        return (False, None, None, *error, None)
    if message["commit_scn"] <= instantiation_scn:
        return (True, None, None, None, None, None)
    if message.get(HANDLER_ERROR) is not None:  # raised by the table's DML handler
        return (False, None, None, HANDLER_ERROR_NUMBER, message[HANDLER_ERROR], None)
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


def stage_function(settings: ApplySettings) -> Any:
    """The mapInPandas function: adds the STAGED_COLUMNS to each message."""

    def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        names = [field.split()[0] for field in STAGED_COLUMNS.split(", ")]
        for batch in batches:
            staged = [_stage_one(settings, message) for message in batch_records(batch)]
            extra = pd.DataFrame.from_records(staged, columns=names, index=batch.index)
            if not staged:
                extra = pd.DataFrame({name: pd.Series(dtype=object) for name in names})
            yield pd.concat([batch, extra], axis=1)

    return run
