-- DBA_STREAMS_TRANSFORMATIONS: the declarative transformations, in step order.
with

transformations as (

    select * from {{ ref('stg_lakeapply__transformations') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        object_owner as SCHEMA_NAME,
        object_name as TABLE_NAME,
        'DECLARATIVE TRANSFORMATION' as TRANSFORM_TYPE,
        declarative_type as DECLARATIVE_TYPE,
        case when declarative_type = 'RENAME COLUMN' then column_names[0] end as FROM_COLUMN_NAME,
        case when declarative_type = 'RENAME COLUMN' then column_names[1] end as TO_COLUMN_NAME,
        case
            when declarative_type in ('DELETE COLUMN', 'ADD COLUMN') then column_names[0]
            when declarative_type = 'KEEP COLUMNS' then array_join(column_names, ',')
        end as COLUMN_NAME,
        column_value as COLUMN_VALUE,
        column_type as COLUMN_TYPE,
        column_function as COLUMN_FUNCTION,
        value_type as VALUE_TYPE,
        step_number as STEP_NUMBER

    from transformations

)

select * from final
