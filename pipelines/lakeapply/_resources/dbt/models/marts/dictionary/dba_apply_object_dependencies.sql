-- DBA_APPLY_OBJECT_DEPENDENCIES: object dependencies created with CREATE_OBJECT_DEPENDENCY.
with

virtual_dependencies as (

    select * from {{ ref('stg_lakeapply__virtual_dependencies') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        parent_object_owner as PARENT_OBJECT_OWNER,
        parent_object_name as PARENT_OBJECT_NAME

    from virtual_dependencies
    where dependency_type = 'OBJECT'

)

select * from final
