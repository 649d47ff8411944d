-- The destination tables of each apply process as the engine applies them now: the tables
-- declared in lakeapply.yml and the ones a CREATE TABLE made, each with its current definition
-- (after the DDL applied so far). A table a DROP TABLE dropped stays, flagged is_dropped, so that
-- its error messages still name it; views of live tables filter it out.
with

table_versions as (

    select * from {{ ref('int_destination_table_versions') }}

),

final as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        silver_table,
        definition_json,
        key_columns_json,
        version_number,
        is_dropped,
        is_declared

    from table_versions
    where is_current

)

select * from final
