with

source as (

    select * from {{ source('lakeapply_apply', 'virtual_dependencies') }}

),

renamed as (

    select
        apply_name,
        dependency_type,
        dependency_name,
        object_owner,
        object_name,
        column_name,
        column_position,
        parent_object_owner,
        parent_object_name

    from source

)

select * from renamed
