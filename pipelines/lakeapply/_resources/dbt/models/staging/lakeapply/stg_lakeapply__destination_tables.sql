with

source as (

    select * from {{ source('lakeapply_apply', 'destination_tables') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        silver_table,
        definition_json

    from source

)

select * from renamed
