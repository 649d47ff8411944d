-- DBA_APPLY_INSTANTIATED_GLOBAL: database-level instantiation SCNs.
with

instantiated_global as (

    select * from {{ ref('stg_lakeapply__instantiated_global') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        instantiation_scn as INSTANTIATION_SCN,
        cast(null as string) as APPLY_DATABASE_LINK

    from instantiated_global

)

select * from final
