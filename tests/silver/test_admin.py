"""The DBMS_APPLY_ADM-like API: settings round-trip through the Delta dictionary tables."""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lakeapply import jobs
from lakeapply.contract.table_definitions import SCHEMAS_DIR, table_definition_from_dict
from lakeapply.errors import ConfigurationError
from lakeapply.runtime.catalog import Catalog
from lakeapply.silver import admin, dictionary
from lakeapply.silver.config import load_config, transformation_to_dict
from lakeapply.silver.cycle_state import apply_rows
from lakeapply.silver.plan import apply_status, set_status
from lakeapply.silver.settings import (
    ApplySettings,
    CommitSerialization,
    ConflictResolution,
    DestinationTable,
    ObjectDependency,
    UpdateConflictHandler,
    ValueDependency,
)
from lakeapply.testing import unique_catalog_prefix

# One worker runs the whole module under `pytest -n 2 --dist loadgroup`: its module-scoped
# fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)

DEMO = load_config(SCHEMAS_DIR.parent / "lakeapply.yml")[0]
STUDENT = "US03.STUDENT"


def _settings() -> ApplySettings:
    """The demo apply process with every kind of setting filled in."""
    course, student, *rest = DEMO.tables
    student = replace(
        student,
        key_columns=("FIRST_NAME", "SURNAME"),
        instantiation_scn=30,
        ignore_scn=20,
        uncompared_columns=frozenset({("GENDER", "UPDATE"), ("GENDER", "DELETE")}),
        update_conflict_handlers=(
            UpdateConflictHandler(
                ConflictResolution.MAXIMUM, ("TUITION_FEE", "ENTRY_YEAR"), "TUITION_FEE"
            ),
            UpdateConflictHandler(ConflictResolution.DISCARD, ("SUBJECT",), "SUBJECT"),
        ),
    )
    return replace(
        DEMO,
        apply_name="APPLY_ADMIN",
        tables=(course, student, *rest),
        commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS,
        discard_tagged=True,
        schema_instantiation_scns=(("ORCL", "US03", 10), ("DBS1.EXAMPLE.COM", "SYNTH", 11)),
        global_instantiation_scns=(("DBS1.EXAMPLE.COM", 5),),
        max_cycle_batches=3,
        max_error_passes=2,
        # In the order load_settings returns them (sorted).
        value_dependencies=(
            ValueDependency("STUDENT_COURSE", "US03", "COURSE", ("UNIVERSITY", "SUBJECT")),
            ValueDependency("STUDENT_COURSE", "US03", "STUDENT", ("UNIVERSITY", "SUBJECT")),
        ),
        object_dependencies=(ObjectDependency("US03", "STUDENT", "US03", "COURSE"),),
    )


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    """One catalog for the module: creating the dictionary tables once saves minutes; every test
    publishes the apply process it reads before reading it."""
    return Catalog("admin_tests")


def _student(settings: ApplySettings) -> DestinationTable:
    table = settings.table_for("ORCL", "US03", "STUDENT")
    assert table is not None
    return table


def test_published_settings_load_back_equal_to_the_original(
    spark: SparkSession, catalog: Catalog
) -> None:
    settings = _settings()
    admin.publish_settings(spark, catalog, DEMO)
    admin.publish_settings(spark, catalog, settings)
    assert admin.load_settings(spark, catalog, "APPLY_ADMIN") == settings
    assert admin.load_settings(spark, catalog, "APPLY_DEMO") == DEMO
    for table in settings.tables:
        document = admin.table_definition_to_dict(table.definition)
        assert table_definition_from_dict(document, "test") == table.definition


def test_publishing_again_with_fewer_settings_removes_the_rows_no_longer_set(
    spark: SparkSession, catalog: Catalog
) -> None:
    """Key columns, dependencies and instantiation SCNs emptied: their tables are written
    although the new settings give them no row (only untouched empty tables are skipped)."""
    admin.publish_settings(spark, catalog, _settings())
    plain = replace(DEMO, apply_name="APPLY_ADMIN")
    admin.publish_settings(spark, catalog, plain)
    assert admin.load_settings(spark, catalog, "APPLY_ADMIN") == plain


def test_the_demos_first_run_publishes_into_the_new_tables_without_probing_them(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run creates the dictionary tables as it publishes, so it asks none of them
    whether it holds rows of the apply (a dozen queries); the next run reads the settings."""
    probed: list[str] = []
    holding_rows = admin._tables_holding_rows

    def recording(spark: SparkSession, catalog: Catalog, apply: str, names: list[str]) -> set[str]:
        probed.extend(names)
        return holding_rows(spark, catalog, apply, names)

    monkeypatch.setattr(admin, "_tables_holding_rows", recording)
    first = Catalog(unique_catalog_prefix("first_run"))
    assert jobs._configured(spark, first, DEMO) == DEMO
    assert probed == []
    assert jobs._configured(spark, first, DEMO) == DEMO


def test_loading_an_apply_process_that_does_not_exist_fails_naming_it(
    spark: SparkSession, catalog: Catalog
) -> None:
    with pytest.raises(ConfigurationError, match="'APPLY_NONE' does not exist"):
        admin.load_settings(spark, catalog, "APPLY_NONE")
    admin.publish_settings(spark, catalog, DEMO)
    with pytest.raises(ConfigurationError, match="'APPLY_NONE' does not exist"):
        admin.set_parameter(spark, catalog, "APPLY_NONE", "MAX_ERROR_PASSES", 3)


def test_a_settings_table_an_older_lakeapply_did_not_have_reads_as_empty_until_written(
    spark: SparkSession,
) -> None:
    """A warehouse of an older lakeapply lacks the settings tables added since (dropped here):
    loading reads no row from it, and the next admin change creates it and writes its rows."""
    catalog = Catalog(unique_catalog_prefix("admin_older"))  # its own: a table is dropped
    admin.publish_settings(spark, catalog, DEMO)
    spark.sql(f"DROP TABLE {catalog.apply_table(dictionary.VIRTUAL_DEPENDENCIES)}")

    assert admin.load_settings(spark, catalog, DEMO.apply_name) == DEMO
    admin.create_object_dependency(spark, catalog, DEMO.apply_name, "US03.STUDENT", "US03.COURSE")
    dependencies = apply_rows(spark, catalog, dictionary.VIRTUAL_DEPENDENCIES, DEMO.apply_name)
    assert dependencies.count() == 1


def test_table_level_setters_change_what_load_settings_returns(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, _settings())
    name = "APPLY_ADMIN"
    admin.set_key_columns(spark, catalog, name, "ORCL", STUDENT, ["SURNAME"])
    admin.set_table_instantiation_scn(spark, catalog, name, "ORCL", STUDENT, 40)
    admin.compare_old_values(spark, catalog, name, "ORCL", STUDENT, ["GENDER"], "DELETE", True)
    admin.compare_old_values(spark, catalog, name, "ORCL", STUDENT, ["SUBJECT"], "*", False)
    admin.set_update_conflict_handler(
        spark, catalog, name, "ORCL", STUDENT, None, None, ["SUBJECT"]
    )
    admin.set_update_conflict_handler(
        spark,
        catalog,
        name,
        "ORCL",
        STUDENT,
        "MINIMUM",
        "ENTRY_YEAR",
        ["ENTRY_YEAR", "TUITION_FEE"],
    )
    student = _student(admin.load_settings(spark, catalog, name))
    assert student.key_columns == ("SURNAME",)
    assert student.instantiation_scn == 40
    assert student.uncompared_columns == {
        ("GENDER", "UPDATE"),
        ("SUBJECT", "UPDATE"),
        ("SUBJECT", "DELETE"),
    }
    assert student.update_conflict_handlers == (
        UpdateConflictHandler(
            ConflictResolution.MINIMUM, ("ENTRY_YEAR", "TUITION_FEE"), "ENTRY_YEAR"
        ),
    )
    admin.set_key_columns(spark, catalog, name, "ORCL", STUDENT, None)
    assert _student(admin.load_settings(spark, catalog, name)).key_columns == ()


def test_apply_level_setters_change_what_load_settings_returns(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, DEMO)
    name = "APPLY_DEMO"
    admin.set_schema_instantiation_scn(spark, catalog, name, "ORCL", "US03", 7)
    admin.set_global_instantiation_scn(spark, catalog, name, "ORCL", 3)
    admin.set_parameter(spark, catalog, name, "COMMIT_SERIALIZATION", "DEPENDENT_TRANSACTIONS")
    admin.set_parameter(spark, catalog, name, "disable_on_error", "Y")
    admin.set_parameter(spark, catalog, name, "MAX_CYCLE_BATCHES", 5)
    admin.set_parameter(spark, catalog, name, "MAX_ERROR_PASSES", "1")
    assert admin.load_settings(spark, catalog, name) == replace(
        DEMO,
        schema_instantiation_scns=(("ORCL", "US03", 7),),
        global_instantiation_scns=(("ORCL", 3),),
        commit_serialization=CommitSerialization.DEPENDENT_TRANSACTIONS,
        disable_on_error=True,
        max_cycle_batches=5,
        max_error_passes=1,
    )
    for parameter, value, message in [
        ("PARALLELISM", "4", "unknown parameter 'PARALLELISM'"),
        ("COMMIT_SERIALIZATION", "NONE", "invalid value 'NONE'"),
        ("DISABLE_ON_ERROR", "yes", "invalid value 'yes' \\(Y or N\\)"),
        ("MAX_ERROR_PASSES", "0", "invalid value '0' \\(an integer >= 1\\)"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            admin.set_parameter(spark, catalog, name, parameter, value)
    with pytest.raises(ConfigurationError, match="source database 'NOPE' is not one of"):
        admin.set_global_instantiation_scn(spark, catalog, name, "NOPE", 3)


def test_stop_and_start_apply_set_a_status_that_publishing_keeps(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, DEMO)
    assert apply_status(spark, catalog, "APPLY_DEMO") == "ENABLED"
    admin.stop_apply(spark, catalog, "APPLY_DEMO")
    admin.set_parameter(spark, catalog, "APPLY_DEMO", "MAX_ERROR_PASSES", 4)
    assert apply_status(spark, catalog, "APPLY_DEMO") == "DISABLED"
    admin.start_apply(spark, catalog, "APPLY_DEMO")
    assert apply_status(spark, catalog, "APPLY_DEMO") == "ENABLED"


def test_start_apply_clears_the_abort_and_keeps_the_published_settings(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, DEMO)
    set_status(spark, catalog, DEMO, "ABORTED", (1403, "ORA-01403: no data found"))
    admin.start_apply(spark, catalog, "APPLY_DEMO")
    (row,) = apply_rows(spark, catalog, "apply_processes", "APPLY_DEMO").collect()
    assert (row.status, row.error_number, row.error_message) == ("ENABLED", None, None)
    assert admin.load_settings(spark, catalog, "APPLY_DEMO") == DEMO


def test_starting_or_stopping_an_apply_process_that_does_not_exist_fails_naming_it(
    spark: SparkSession, catalog: Catalog
) -> None:
    with pytest.raises(ConfigurationError, match="'APPLY_NONE' does not exist"):
        admin.start_apply(spark, catalog, "APPLY_NONE")
    admin.publish_settings(spark, catalog, DEMO)
    with pytest.raises(ConfigurationError, match="'APPLY_NONE' does not exist"):
        admin.stop_apply(spark, catalog, "APPLY_NONE")
    assert apply_status(spark, catalog, "APPLY_DEMO") == "ENABLED"


def test_an_instantiation_scn_below_the_ignore_scn_is_refused(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, _settings())
    message = re.escape(
        "the instantiation SCN cannot be set below the object's ignore SCN (19 < 20)"
    )
    with pytest.raises(ConfigurationError, match=message):
        admin.set_table_instantiation_scn(spark, catalog, "APPLY_ADMIN", "ORCL", STUDENT, 19)
    with pytest.raises(ConfigurationError, match=message):
        admin.instantiate(spark, catalog, "APPLY_ADMIN", "ORCL", STUDENT, 19)
    assert _student(admin.load_settings(spark, catalog, "APPLY_ADMIN")).instantiation_scn == 30


def test_an_unknown_column_or_table_is_refused_with_a_precise_message(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, DEMO)
    unknown = re.escape("unknown column(s) ['NICKNAME'] (not in US03.STUDENT)")
    with pytest.raises(ConfigurationError, match=unknown):
        admin.set_key_columns(spark, catalog, "APPLY_DEMO", "ORCL", STUDENT, ["NICKNAME"])
    with pytest.raises(ConfigurationError, match=unknown):
        admin.compare_old_values(
            spark, catalog, "APPLY_DEMO", "ORCL", STUDENT, ["NICKNAME"], "*", False
        )
    with pytest.raises(ConfigurationError, match=unknown):
        admin.set_update_conflict_handler(
            spark, catalog, "APPLY_DEMO", "ORCL", STUDENT, "OVERWRITE", "NICKNAME", ["NICKNAME"]
        )
    with pytest.raises(
        ConfigurationError, match=re.escape("no destination table for US03.TEACHER from ORCL")
    ):
        admin.set_table_instantiation_scn(spark, catalog, "APPLY_DEMO", "ORCL", "US03.TEACHER", 1)
    assert admin.load_settings(spark, catalog, "APPLY_DEMO") == DEMO


def test_instantiate_loads_a_csv_export_and_sets_the_instantiation_scn(
    spark: SparkSession, catalog: Catalog, tmp_path: Path
) -> None:
    admin.publish_settings(spark, catalog, DEMO)
    export = tmp_path / "student.csv"
    export.write_text(
        "student_key,First_Name,SURNAME,TUITION_FEE\n1,Ada,Lovelace,9000.5\n2,Alan,,\n"
    )
    admin.instantiate(spark, catalog, "APPLY_DEMO", "ORCL", STUDENT, 2000, export, "csv")
    rows = spark.table(catalog.silver_table("orcl_us03_student")).orderBy("STUDENT_KEY").collect()
    assert [(r.STUDENT_KEY, r.FIRST_NAME, r.SURNAME, r.TUITION_FEE, r.GENDER) for r in rows] == [
        (Decimal(1), "Ada", "Lovelace", Decimal("9000.5"), None),
        (Decimal(2), "Alan", None, None, None),
    ]
    assert _student(admin.load_settings(spark, catalog, "APPLY_DEMO")).instantiation_scn == 2000
    with pytest.raises(ConfigurationError, match="is not empty: refusing to load"):
        admin.instantiate(spark, catalog, "APPLY_DEMO", "ORCL", STUDENT, 2001, export, "csv")
    bad = tmp_path / "course.csv"
    bad.write_text("UNIVERSITY,NICKNAME\n1,x\n")
    with pytest.raises(ConfigurationError, match=re.escape("unknown column(s) ['NICKNAME']")):
        admin.instantiate(spark, catalog, "APPLY_DEMO", "ORCL", "US03.COURSE", 5, bad, "csv")


def test_publishing_rewrites_dictionary_rows_without_replacing_the_table(
    spark: SparkSession, catalog: Catalog
) -> None:
    # Replacing a table (saveAsTable in overwrite mode) makes Delta re-register its schema in the
    # Hive metastore, which Hive refuses for a table stored in Spark's own format: an
    # "ERROR HiveAlterHandler: Failed to alter table" per dictionary table on every publish.
    from delta.tables import DeltaTable

    from lakeapply.silver import dictionary

    admin.publish_settings(spark, catalog, DEMO)
    admin.publish_settings(spark, catalog, DEMO)
    for name in dictionary.DICTIONARY_TABLES:
        history = DeltaTable.forName(spark, catalog.apply_table(name)).history().collect()
        operations = {row.operation for row in history}
        assert not any("REPLACE" in operation for operation in operations), (name, operations)


def test_rules_added_and_removed_through_the_api_load_back_in_their_rule_sets(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, replace(DEMO, apply_name="APPLY_RULES"))
    admin.add_rule(spark, catalog, "APPLY_RULES", "negative", {"tag": "NOT NULL"})
    admin.add_rule(spark, catalog, "APPLY_RULES", "positive", {"schema": "US03"})
    admin.add_rule(spark, catalog, "APPLY_RULES", "POSITIVE", {"schema": "SYNTH", "table": "T001"})
    loaded = admin.load_settings(spark, catalog, "APPLY_RULES")
    assert [(r.tag, r.level) for r in loaded.negative_rules] == [("NOT NULL", "GLOBAL")]
    assert [(r.schema, r.table) for r in loaded.positive_rules or ()] == [
        ("US03", None),
        ("SYNTH", "T001"),
    ]

    admin.remove_rule(spark, catalog, "APPLY_RULES", "positive", {"schema": "US03"})
    admin.remove_rule(spark, catalog, "APPLY_RULES", "negative", None)
    loaded = admin.load_settings(spark, catalog, "APPLY_RULES")
    assert loaded.negative_rules == ()
    assert [(r.schema, r.table) for r in loaded.positive_rules or ()] == [("SYNTH", "T001")]
    # The last positive rule takes the positive rule set with it: table rules alone again.
    admin.remove_rule(
        spark, catalog, "APPLY_RULES", "positive", {"schema": "SYNTH", "table": "T001"}
    )
    assert admin.load_settings(spark, catalog, "APPLY_RULES").positive_rules is None


def test_transformation_steps_are_added_to_and_removed_from_a_positive_rule_by_number(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, replace(DEMO, apply_name="APPLY_RULE_STEPS"))
    admin.add_rule(spark, catalog, "APPLY_RULE_STEPS", "positive", {"schema": "LEGACY"})
    rename = {"rename_schema": {"from": "LEGACY", "to": "US03"}}
    admin.add_rule_transformation(spark, catalog, "APPLY_RULE_STEPS", 1, rename)
    admin.add_rule_transformation(
        spark, catalog, "APPLY_RULE_STEPS", 1, {"delete_column": "NOTE"}, step_number=1
    )

    [rule] = admin.load_settings(spark, catalog, "APPLY_RULE_STEPS").positive_rules or ()
    assert [transformation_to_dict(step) for step in rule.transformations] == [
        {"delete_column": "NOTE", "value_type": "*"},
        {**rename, "value_type": "*"},
    ]
    admin.remove_rule_transformation(spark, catalog, "APPLY_RULE_STEPS", 1, 1)
    [rule] = admin.load_settings(spark, catalog, "APPLY_RULE_STEPS").positive_rules or ()
    assert [transformation_to_dict(step) for step in rule.transformations] == [
        {**rename, "value_type": "*"}
    ]
    with pytest.raises(ConfigurationError, match="no positive rule 2"):
        admin.add_rule_transformation(spark, catalog, "APPLY_RULE_STEPS", 2, rename)
    with pytest.raises(ConfigurationError, match="has no transformation step 3"):
        admin.remove_rule_transformation(spark, catalog, "APPLY_RULE_STEPS", 1, 3)


def test_a_rule_the_configuration_file_would_refuse_is_refused_by_the_api_too(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, replace(DEMO, apply_name="APPLY_BAD_RULES"))
    with pytest.raises(ConfigurationError, match=r"ADD_RULES NEGATIVE: tag: 'maybe' does not"):
        admin.add_rule(spark, catalog, "APPLY_BAD_RULES", "negative", {"tag": "maybe"})
    with pytest.raises(ConfigurationError, match="'schema' is a dependency of 'table'"):
        admin.add_rule(spark, catalog, "APPLY_BAD_RULES", "negative", {"table": "T001"})
    with pytest.raises(ConfigurationError, match="not POSITIVE or NEGATIVE"):
        admin.add_rule(spark, catalog, "APPLY_BAD_RULES", "neutral", {"schema": "US03"})
    with pytest.raises(ConfigurationError, match="has no rule"):
        admin.remove_rule(spark, catalog, "APPLY_BAD_RULES", "negative", {"schema": "US03"})
    assert admin.load_settings(spark, catalog, "APPLY_BAD_RULES").negative_rules == ()


def test_transformation_steps_are_inserted_and_removed_at_their_step_numbers(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, replace(DEMO, apply_name="APPLY_STEPS"))
    add = admin.add_transformation
    add(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, {"delete_column": "NICKNAME"})
    add(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, {"keep_columns": ["STUDENT_KEY"]})
    rename = {"rename_column": {"from": "LAST_NAME", "to": "SURNAME"}}
    add(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, rename, 2)
    steps = _student(admin.load_settings(spark, catalog, "APPLY_STEPS")).transformations
    assert [(s.kind.value, s.columns) for s in steps] == [
        ("DELETE COLUMN", ("NICKNAME",)),
        ("RENAME COLUMN", ("LAST_NAME", "SURNAME")),
        ("KEEP COLUMNS", ("STUDENT_KEY",)),
    ]

    admin.remove_transformation(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, 1)
    steps = _student(admin.load_settings(spark, catalog, "APPLY_STEPS")).transformations
    assert [s.kind.value for s in steps] == ["RENAME COLUMN", "KEEP COLUMNS"]
    with pytest.raises(ConfigurationError, match="has no transformation step 3"):
        admin.remove_transformation(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, 3)
    with pytest.raises(ConfigurationError, match=re.escape("step number 9 is outside 1..3")):
        add(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, {"delete_column": "X"}, 9)
    with pytest.raises(ConfigurationError, match=re.escape("ADD_TRANSFORMATION US03.STUDENT")):
        add(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, {"drop_column": "X"})
    admin.remove_transformation(spark, catalog, "APPLY_STEPS", "ORCL", STUDENT, None)
    assert _student(admin.load_settings(spark, catalog, "APPLY_STEPS")).transformations == ()


def test_virtual_dependency_procedures_change_what_load_settings_returns(
    spark: SparkSession, catalog: Catalog
) -> None:
    admin.publish_settings(spark, catalog, _settings())
    name = "APPLY_ADMIN"
    admin.set_value_dependency(spark, catalog, name, "STUDENT_COURSE", "US03.COURSE", None)
    admin.set_value_dependency(spark, catalog, name, "BY_YEAR", "US03.STUDENT", ["ENTRY_YEAR"])
    admin.drop_object_dependency(spark, catalog, name, STUDENT, "US03.COURSE")
    admin.create_object_dependency(spark, catalog, name, "US03.COURSE", STUDENT)
    settings = admin.load_settings(spark, catalog, name)
    assert settings.value_dependencies == (
        ValueDependency("BY_YEAR", "US03", "STUDENT", ("ENTRY_YEAR",)),
        ValueDependency("STUDENT_COURSE", "US03", "STUDENT", ("UNIVERSITY", "SUBJECT")),
    )
    assert settings.object_dependencies == (ObjectDependency("US03", "COURSE", "US03", "STUDENT"),)
    with pytest.raises(ConfigurationError, match=r"no object dependency of US03\.STUDENT"):
        admin.drop_object_dependency(spark, catalog, name, STUDENT, "US03.COURSE")
    with pytest.raises(ConfigurationError, match=r"virtual_dependencies/value/\d+/columns"):
        admin.set_value_dependency(spark, catalog, name, "BY_YEAR", "US03.COURSE", ["NOPE"])
