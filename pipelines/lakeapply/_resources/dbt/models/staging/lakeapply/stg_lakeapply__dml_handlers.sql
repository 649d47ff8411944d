with

source as (

    select * from {{ source('lakeapply_apply', 'dml_handlers') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        operation_name,
        handler_type,
        user_procedure,
        handler_name,
        statement

    from source

)

select * from renamed
