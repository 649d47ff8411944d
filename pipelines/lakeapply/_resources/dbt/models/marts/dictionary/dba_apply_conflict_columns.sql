-- DBA_APPLY_CONFLICT_COLUMNS: the columns of the prebuilt update conflict handlers.
with

conflict_columns as (

    select * from {{ ref('stg_lakeapply__conflict_columns') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        method_name as METHOD_NAME,
        resolution_column as RESOLUTION_COLUMN,
        column_name as COLUMN_NAME,
        cast(null as string) as APPLY_DATABASE_LINK

    from conflict_columns

)

select * from final
