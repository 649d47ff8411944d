{#
    A query returning one row per key value held by more than one row of a silver table, over
    every live destination table of `destination_tables` (int_destination_tables: declared or
    made by CREATE TABLE, rows with is_dropped skipped) whose silver table exists, keyed by the
    key of its current definition (key_columns_json: apply-semantics rule 5, computed in
    int_destination_table_versions). The listing is read when the test runs (run_query), so a
    new destination table is checked without editing the project. Columns: silver_table,
    key_columns, key_value (JSON), occurrences.
#}
{% macro silver_duplicate_keys(destination_tables) %}
    {%- set checks = [] -%}
    {%- if execute -%}
        {%- set destinations = run_query(
            'select silver_table, key_columns_json from ' ~ destination_tables
            ~ ' where not is_dropped order by silver_table, apply_name'
        ) -%}
        {%- set seen = [] -%}
        {%- for row in destinations -%}
            {%- set key = fromjson(row[1]) or [] -%}
            {%- set check_id = row[0] ~ '|' ~ (key | join(',')) -%}
            {%- set relation = adapter.get_relation(
                database=none, schema=lakeapply_schema('silver'), identifier=row[0]
            ) -%}
            {%- if relation is not none and key and check_id not in seen -%}
                {%- do seen.append(check_id) -%}
                {%- set quoted = lakeapply_quote_identifiers(key) -%}
                {%- set check -%}
    select
        {{ lakeapply_string_literal(row[0]) }} as silver_table,
        {{ lakeapply_string_literal(key | join(", ")) }} as key_columns,
        to_json(struct({{ quoted | join(', ') }})) as key_value,
        count(*) as occurrences
    from {{ lakeapply_quote_identifier(relation.schema) }}.{{ lakeapply_quote_identifier(relation.identifier) }}
    group by {{ quoted | join(', ') }}
    having count(*) > 1
                {%- endset -%}
                {%- do checks.append(check) -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {%- if checks %}
    {{ checks | join('\n\n    union all\n') }}
    {%- else %}
    select
        cast(null as string) as silver_table,
        cast(null as string) as key_columns,
        cast(null as string) as key_value,
        cast(0 as bigint) as occurrences
    where false
    {%- endif %}
{% endmacro %}
