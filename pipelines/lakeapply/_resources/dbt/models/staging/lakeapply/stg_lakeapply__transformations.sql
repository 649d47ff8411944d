with

source as (

    select * from {{ source('lakeapply_apply', 'transformations') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        step_number,
        declarative_type,
        column_names,
        value_type,
        column_value,
        column_function,
        column_type

    from source

)

select * from renamed
