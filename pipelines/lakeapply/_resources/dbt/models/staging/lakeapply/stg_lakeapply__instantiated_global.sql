with

source as (

    select * from {{ source('lakeapply_apply', 'instantiated_global') }}

),

renamed as (

    select
        apply_name,
        source_database,
        instantiation_scn

    from source

)

select * from renamed
