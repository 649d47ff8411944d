with

source as (

    select * from {{ source('lakeapply_apply', 'apply_processes') }}

),

renamed as (

    select
        apply_name,
        status,
        status_change_time,
        error_number,
        error_message,
        commit_serialization,
        disable_on_error,
        source_databases

    from source

)

select * from renamed
