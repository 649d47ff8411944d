-- Every version of every destination table's definition: the one declared in lakeapply.yml
-- (version 0; none for a table made by CREATE TABLE) and then each one a DDL transaction
-- recorded (rule 10), numbered from 1 in the order the engine applied them. A destination is
-- its silver table (as the engine versions it): a RENAME TO continues its versions under the
-- new source name. The engine applies
-- each cycle with the last recorded version (silver/plan.py, versioned_settings), so the
-- current version here is the last one, declared or not. key_columns_json is the key the apply
-- identifies rows by (rule 5, as lakeapply.contract.table_definitions.TableDefinition.key_columns):
-- the substitute key (key_columns, as set now), else the primary key, else the smallest unique
-- key (by column count, then name) with a NOT NULL column, else every column that is not LOB,
-- LONG or LONG RAW.
with

destination_tables as (

    select * from {{ ref('stg_lakeapply__destination_tables') }}

),

table_versions as (

    select * from {{ ref('stg_lakeapply__table_versions') }}

),

key_columns as (

    select * from {{ ref('stg_lakeapply__key_columns') }}

),

substitute_keys as (

    -- by silver table: a renamed table keeps its key columns under its new name
    select
        key_columns.apply_name,
        key_columns.source_database,
        destination_tables.silver_table,
        transform(
            array_sort(
                collect_list(struct(key_columns.column_position, key_columns.column_name))
            ),
            key_column -> key_column.column_name
        ) as substitute_key

    from key_columns
    inner join destination_tables
        on
            key_columns.apply_name = destination_tables.apply_name
            and key_columns.source_database = destination_tables.source_database
            and key_columns.object_owner = destination_tables.object_owner
            and key_columns.object_name = destination_tables.object_name
    group by key_columns.apply_name, key_columns.source_database, destination_tables.silver_table

),

declared_versions as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        silver_table,
        0 as version_number,
        cast(null as bigint) as commit_scn,
        cast(null as string) as transaction_id,
        cast(null as string) as ddl_text,
        definition_json,
        cast(null as bigint) as cycle_id

    from destination_tables

),

ddl_versions as (

    select
        apply_name,
        source_database,
        -- the source name as this version has it (a RENAME TO's version: the new name)
        coalesce(get_json_object(definition_json, '$.owner'), object_owner) as object_owner,
        coalesce(get_json_object(definition_json, '$.name'), object_name) as object_name,
        silver_table,
        row_number() over (
            partition by apply_name, source_database, silver_table
            order by cycle_id, commit_scn, transaction_id, ddl_text
        ) as version_number,
        commit_scn,
        transaction_id,
        ddl_text,
        definition_json,
        cycle_id

    from table_versions

),

versions as (

    select * from declared_versions
    union all
    select * from ddl_versions

),

parsed as (

    select
        versions.*,
        substitute_keys.substitute_key,
        from_json(
            versions.definition_json,
            'columns array<struct<name: string, type: string, nullable: boolean>>,'
            || ' primary_key array<string>,'
            || ' unique_keys array<struct<name: string, columns: array<string>>>'
        ) as definition

    from versions
    left join substitute_keys
        on
            versions.apply_name = substitute_keys.apply_name
            and versions.source_database = substitute_keys.source_database
            and versions.silver_table = substitute_keys.silver_table

),

key_candidates as (

    select
        *,
        transform(
            filter(definition.columns, column_definition -> column_definition.nullable = false),
            column_definition -> column_definition.name
        ) as not_null_columns,
        transform(
            filter(
                definition.columns,
                column_definition -> regexp_replace(
                    upper(trim(column_definition.type)), '\\s+', ' '
                ) not in ('CLOB', 'NCLOB', 'BLOB', 'LONG', 'LONG RAW')
            ),
            column_definition -> column_definition.name
        ) as non_lob_columns

    from parsed

),

keyed as (

    select
        *,
        try_element_at(
            array_sort(
                filter(
                    definition.unique_keys,
                    unique_key -> exists(
                        unique_key.columns,
                        key_column -> array_contains(not_null_columns, key_column)
                    )
                ),
                (left_key, right_key) -> case
                    when size(left_key.columns) < size(right_key.columns) then -1
                    when size(left_key.columns) > size(right_key.columns) then 1
                    when left_key.name < right_key.name then -1
                    when left_key.name > right_key.name then 1
                    else 0
                end
            ),
            1
        ).columns as smallest_unique_key

    from key_candidates

),

final as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        silver_table,
        version_number,
        commit_scn,
        transaction_id,
        ddl_text,
        definition_json,
        cycle_id,
        -- JSON text: an array travels to dbt's run_query (macros/silver_keys.sql) and to unit
        -- test fixtures as text anyway
        to_json(
            case
                when coalesce(size(substitute_key), 0) > 0 then substitute_key
                when coalesce(size(definition.primary_key), 0) > 0 then definition.primary_key
                when smallest_unique_key is not null then smallest_unique_key
                else non_lob_columns
            end
        ) as key_columns_json,
        coalesce(get_json_object(definition_json, '$.dropped') = 'true', false) as is_dropped,
        version_number = max(version_number) over (
            partition by apply_name, source_database, silver_table
        ) as is_current,
        min(version_number) over (
            partition by apply_name, source_database, silver_table
        ) = 0 as is_declared

    from keyed

)

select * from final
