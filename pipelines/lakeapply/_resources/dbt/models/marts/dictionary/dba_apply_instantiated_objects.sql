-- DBA_APPLY_INSTANTIATED_OBJECTS: table-level instantiation SCNs.
with

instantiated_objects as (

    select * from {{ ref('stg_lakeapply__instantiated_objects') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        source_database as SOURCE_DATABASE,
        source_object_owner as SOURCE_OBJECT_OWNER,
        source_object_name as SOURCE_OBJECT_NAME,
        source_object_type as SOURCE_OBJECT_TYPE,
        instantiation_scn as INSTANTIATION_SCN,
        ignore_scn as IGNORE_SCN,
        cast(null as string) as APPLY_DATABASE_LINK

    from instantiated_objects

)

select * from final
