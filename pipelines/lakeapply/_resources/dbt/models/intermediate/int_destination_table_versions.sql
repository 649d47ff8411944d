-- Every version of every destination table's definition: the one declared in lakeapply.yml
-- (version 0; none for a table made by CREATE TABLE) and then each one a DDL transaction
-- recorded (rule 10), numbered from 1 in the order the engine applied them. The engine applies
-- each cycle with the last recorded version (silver/engine.py, versioned_settings), so the
-- current version here is the last one, declared or not.
with

destination_tables as (

    select * from {{ ref('stg_lakeapply__destination_tables') }}

),

table_versions as (

    select * from {{ ref('stg_lakeapply__table_versions') }}

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
        object_owner,
        object_name,
        silver_table,
        row_number() over (
            partition by apply_name, source_database, object_owner, object_name
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
        coalesce(get_json_object(definition_json, '$.dropped') = 'true', false) as is_dropped,
        version_number = max(version_number) over (
            partition by apply_name, source_database, object_owner, object_name
        ) as is_current,
        min(version_number) over (
            partition by apply_name, source_database, object_owner, object_name
        ) = 0 as is_declared

    from versions

)

select * from final
