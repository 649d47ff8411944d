-- DBA_STREAMS_TRANSFORMATIONS: the declarative transformations, in step order: a destination
-- table's own steps (RULE_NAME null) and the steps attached to a positive rule (its RULE_NAME,
-- as in DBA_STREAMS_RULES; RENAME SCHEMA and RENAME TABLE only there).
with

table_steps as (

    select * from {{ ref('stg_lakeapply__transformations') }}

),

rules as (

    select * from {{ ref('stg_lakeapply__rules') }}

),

rule_steps as (

    select
        rules.apply_name,
        rules.rule_set_type,
        rules.rule_number,
        rules.source_database,
        rules.schema_name,
        rules.object_name,
        step.pos + 1 as step_number,
        -- each step is one JSON object of lakeapply.yml's form, e.g. {"rename_schema": {...}}
        step.col as step_json

    from rules
        lateral view posexplode(from_json(rules.transformations_json, 'array<string>')) step

),

rule_steps_read as (

    select
        apply_name,
        concat(apply_name, '_', rule_set_type, '_', cast(rule_number as string)) as rule_name,
        source_database,
        schema_name,
        object_name,
        step_number,
        case
            when get_json_object(step_json, '$.rename_schema') is not null then 'RENAME SCHEMA'
            when get_json_object(step_json, '$.rename_table') is not null then 'RENAME TABLE'
            when get_json_object(step_json, '$.rename_column') is not null then 'RENAME COLUMN'
            when get_json_object(step_json, '$.delete_column') is not null then 'DELETE COLUMN'
            when get_json_object(step_json, '$.add_column') is not null then 'ADD COLUMN'
            when get_json_object(step_json, '$.keep_columns') is not null then 'KEEP COLUMNS'
        end as declarative_type,
        coalesce(
            get_json_object(step_json, '$.rename_schema.from'),
            substring_index(get_json_object(step_json, '$.rename_table.from'), '.', 1)
        ) as from_schema_name,
        coalesce(
            get_json_object(step_json, '$.rename_schema.to'),
            substring_index(get_json_object(step_json, '$.rename_table.to'), '.', 1)
        ) as to_schema_name,
        substring_index(get_json_object(step_json, '$.rename_table.from'), '.', -1)
            as from_table_name,
        substring_index(get_json_object(step_json, '$.rename_table.to'), '.', -1)
            as to_table_name,
        get_json_object(step_json, '$.rename_column.from') as from_column_name,
        get_json_object(step_json, '$.rename_column.to') as to_column_name,
        coalesce(
            get_json_object(step_json, '$.delete_column'),
            get_json_object(step_json, '$.add_column.column'),
            array_join(
                from_json(get_json_object(step_json, '$.keep_columns'), 'array<string>'), ','
            )
        ) as column_name,
        get_json_object(step_json, '$.add_column.value') as column_value,
        get_json_object(step_json, '$.add_column.data_type') as column_type,
        get_json_object(step_json, '$.add_column.expression') as column_function,
        get_json_object(step_json, '$.value_type') as value_type

    from rule_steps

),

table_steps_read as (

    select
        apply_name,
        cast(null as string) as rule_name,
        source_database,
        object_owner as schema_name,
        object_name,
        step_number,
        declarative_type,
        cast(null as string) as from_schema_name,
        cast(null as string) as to_schema_name,
        cast(null as string) as from_table_name,
        cast(null as string) as to_table_name,
        case when declarative_type = 'RENAME COLUMN' then column_names[0] end as from_column_name,
        case when declarative_type = 'RENAME COLUMN' then column_names[1] end as to_column_name,
        case
            when declarative_type in ('DELETE COLUMN', 'ADD COLUMN') then column_names[0]
            when declarative_type = 'KEEP COLUMNS' then array_join(column_names, ',')
        end as column_name,
        column_value,
        column_type,
        column_function,
        value_type

    from table_steps

),

steps as (

    select * from table_steps_read
    union all
    select * from rule_steps_read

),

final as (

    select
        apply_name as APPLY_NAME,
        rule_name as RULE_NAME,
        source_database as SOURCE_DATABASE,
        schema_name as SCHEMA_NAME,
        object_name as TABLE_NAME,
        'DECLARATIVE TRANSFORMATION' as TRANSFORM_TYPE,
        declarative_type as DECLARATIVE_TYPE,
        from_schema_name as FROM_SCHEMA_NAME,
        to_schema_name as TO_SCHEMA_NAME,
        from_table_name as FROM_TABLE_NAME,
        to_table_name as TO_TABLE_NAME,
        from_column_name as FROM_COLUMN_NAME,
        to_column_name as TO_COLUMN_NAME,
        column_name as COLUMN_NAME,
        column_value as COLUMN_VALUE,
        column_type as COLUMN_TYPE,
        column_function as COLUMN_FUNCTION,
        value_type as VALUE_TYPE,
        step_number as STEP_NUMBER

    from steps

)

select * from final
