-- Which transaction changed which source object: the identity columns of bronze's row LCRs.
with

source as (

    select * from {{ source('lakeapply_bronze', 'lcr') }}

),

renamed as (

    select
        source_database_name as source_database,
        transaction_id,
        command_type,
        scn,
        object_owner,
        object_name,
        source_file,
        line_number

    from source
    where lcr_kind = 'ROW'

)

select * from renamed
