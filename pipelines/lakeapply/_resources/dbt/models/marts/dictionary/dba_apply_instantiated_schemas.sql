-- DBA_APPLY_INSTANTIATED_SCHEMAS: schema-level instantiation SCNs.
with

instantiated_schemas as (

    select * from {{ ref('stg_lakeapply__instantiated_schemas') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        source_schema as SOURCE_SCHEMA,
        instantiation_scn as INSTANTIATION_SCN,
        cast(null as string) as APPLY_DATABASE_LINK

    from instantiated_schemas

)

select * from final
