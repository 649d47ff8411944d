-- The LCR identity and ordering columns of the spill; the row images stay in the source table.
with

source as (

    select * from {{ source('lakeapply_apply', 'spill') }}

),

renamed as (

    select
        apply_name,
        source_database_name as source_database,
        transaction_id,
        command_type,
        lcr_kind,
        scn,
        commit_scn,
        position,
        source_time,
        object_owner,
        object_name,
        source_file,
        line_number

    from source

)

select * from renamed
