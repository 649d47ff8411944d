with

source as (

    select * from {{ source('lakeapply_apply', 'rules') }}

),

renamed as (

    select
        apply_name,
        rule_set_type,
        rule_number,
        streams_rule_type,
        source_database,
        schema_name,
        object_name,
        tag_condition,
        rule_condition,
        subset_condition,
        transformations_json

    from source

)

select * from renamed
