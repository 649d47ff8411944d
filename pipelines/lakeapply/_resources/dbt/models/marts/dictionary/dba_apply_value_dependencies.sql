-- DBA_APPLY_VALUE_DEPENDENCIES: value dependencies set with SET_VALUE_DEPENDENCY.
with

virtual_dependencies as (

    select * from {{ ref('stg_lakeapply__virtual_dependencies') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        dependency_name as DEPENDENCY_NAME,
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        column_name as COLUMN_NAME,
        column_position as COLUMN_POSITION

    from virtual_dependencies
    where dependency_type = 'VALUE'

)

select * from final
