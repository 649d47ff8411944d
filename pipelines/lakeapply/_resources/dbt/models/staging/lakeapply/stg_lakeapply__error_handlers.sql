with

source as (

    select * from {{ source('lakeapply_apply', 'error_handlers') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        operation_name,
        user_procedure

    from source

)

select * from renamed
