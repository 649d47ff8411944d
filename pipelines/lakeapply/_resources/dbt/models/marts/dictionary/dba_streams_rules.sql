-- DBA_STREAMS_RULES: the rules of the apply processes' positive and negative rule sets.
with

rules as (

    select * from {{ ref('stg_lakeapply__rules') }}

),

final as (

    select
        apply_name as STREAMS_NAME,
        'APPLY' as STREAMS_TYPE,
        concat(apply_name, '_', rule_set_type, '_', cast(rule_number as string)) as RULE_NAME,
        rule_set_type as RULE_SET_TYPE,
        streams_rule_type as STREAMS_RULE_TYPE,
        'DML' as RULE_TYPE,
        schema_name as SCHEMA_NAME,
        object_name as OBJECT_NAME,
        source_database as SOURCE_DATABASE,
        tag_condition as TAG_CONDITION,
        rule_condition as RULE_CONDITION,
        -- ADD_SUBSET_RULES: the subset condition as declared (Oracle's DML_CONDITION)
        subset_condition as DML_CONDITION

    from rules

)

select * from final
