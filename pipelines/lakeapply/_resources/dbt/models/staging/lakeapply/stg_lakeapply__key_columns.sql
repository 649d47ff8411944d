with

source as (

    select * from {{ source('lakeapply_apply', 'key_columns') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        column_name,
        column_position

    from source

)

select * from renamed
