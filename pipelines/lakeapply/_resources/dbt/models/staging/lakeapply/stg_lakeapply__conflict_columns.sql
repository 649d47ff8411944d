with

source as (

    select * from {{ source('lakeapply_apply', 'conflict_columns') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        method_name,
        resolution_column,
        column_name

    from source

)

select * from renamed
