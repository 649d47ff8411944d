with

source as (

    select * from {{ source('lakeapply_apply', 'instantiated_schemas') }}

),

renamed as (

    select
        apply_name,
        source_database,
        source_schema,
        instantiation_scn

    from source

)

select * from renamed
