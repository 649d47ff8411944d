with

source as (

    select * from {{ source('lakeapply_apply', 'table_versions') }}

),

renamed as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        silver_table,
        commit_scn,
        transaction_id,
        ddl_text,
        definition_json,
        cycle_id

    from source

)

select * from renamed
