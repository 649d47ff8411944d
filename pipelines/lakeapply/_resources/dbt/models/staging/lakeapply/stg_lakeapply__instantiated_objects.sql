with

source as (

    select * from {{ source('lakeapply_apply', 'instantiated_objects') }}

),

renamed as (

    select
        apply_name,
        source_database,
        source_object_owner,
        source_object_name,
        source_object_type,
        instantiation_scn,
        ignore_scn

    from source

)

select * from renamed
