-- DBA_APPLY_TABLE_VERSIONS (a lakeapply view, in the spirit of the multiversioned Oracle
-- Streams data dictionary): every version of every destination table's definition, the one
-- declared in lakeapply.yml (VERSION 0) and one per DDL applied (rule 10), with the DDL, its
-- commit SCN, and the version's columns and keys.
with

table_versions as (

    select * from {{ ref('int_destination_table_versions') }}

),

parsed as (

    select
        *,
        from_json(
            definition_json,
            'columns array<struct<name: string, type: string, nullable: boolean>>,'
            || ' primary_key array<string>,'
            || ' unique_keys array<struct<name: string, columns: array<string>>>'
        ) as definition

    from table_versions

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        object_owner as SOURCE_OBJECT_OWNER,
        object_name as SOURCE_OBJECT_NAME,
        {{ lakeapply_string_literal(lakeapply_schema("silver")) }} as OBJECT_OWNER,
        silver_table as OBJECT_NAME,
        version_number as VERSION,
        case when is_dropped then 'DROPPED' else 'VALID' end as STATUS,
        case when is_current then 'YES' else 'NO' end as CURRENT_VERSION,
        commit_scn as SOURCE_COMMIT_SCN,
        transaction_id as SOURCE_TRANSACTION_ID,
        ddl_text as DDL_TEXT,
        size(definition.columns) as COLUMN_COUNT,
        array_join(
            transform(
                definition.columns,
                column_definition -> concat(
                    column_definition.name,
                    ' ',
                    column_definition.type,
                    case when column_definition.nullable = false then ' NOT NULL' else '' end
                )
            ),
            ', '
        ) as COLUMNS,
        array_join(from_json(key_columns_json, 'array<string>'), ', ') as KEY_COLUMNS,
        array_join(definition.primary_key, ', ') as PRIMARY_KEY,
        array_join(
            transform(
                definition.unique_keys,
                unique_key -> concat(
                    unique_key.name, ' (', array_join(unique_key.columns, ', '), ')'
                )
            ),
            '; '
        ) as UNIQUE_KEYS,
        definition_json as DEFINITION,
        cycle_id as CYCLE_ID

    from parsed

)

select * from final
