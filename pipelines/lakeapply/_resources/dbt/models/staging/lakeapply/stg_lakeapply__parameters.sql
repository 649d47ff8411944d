with

source as (

    select * from {{ source('lakeapply_apply', 'parameters') }}

),

renamed as (

    select
        apply_name,
        upper(parameter) as parameter,
        value,
        set_by_user

    from source

)

select * from renamed
