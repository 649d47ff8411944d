-- DBA_APPLY_KEY_COLUMNS: substitute key columns set with SET_KEY_COLUMNS.
with

key_columns as (

    select * from {{ ref('stg_lakeapply__key_columns') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        column_name as COLUMN_NAME,
        column_position as COLUMN_POSITION,
        cast(null as string) as APPLY_DATABASE_LINK

    from key_columns

)

select * from final
