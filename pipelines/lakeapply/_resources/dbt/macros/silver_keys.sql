{#
    The key that identifies rows of a destination table (apply-semantics rule 5, the same
    precedence as lakeapply.contract.table_definitions.TableDefinition.key_columns): the substitute
    key, else the primary key, else the smallest unique key (by column count, then name) with a
    NOT NULL column, else every column that is not LOB, LONG or LONG RAW.
    `definition` is the parsed table definition document, `substitute_key` a list of columns.
#}
{% macro lakeapply_effective_key(definition, substitute_key) %}
    {%- if substitute_key -%}
        {{ return(substitute_key) }}
    {%- endif -%}
    {%- if definition.get('primary_key') -%}
        {{ return(definition['primary_key']) }}
    {%- endif -%}
    {%- set not_null_columns = [] -%}
    {%- for column in definition['columns'] -%}
        {%- if column.get('nullable', true) == false -%}
            {%- do not_null_columns.append(column['name']) -%}
        {%- endif -%}
    {%- endfor -%}
    {%- set smallest = namespace(key=none) -%}
    {%- for unique_key in definition.get('unique_keys', []) | sort(attribute='name') -%}
        {%- set has_not_null = unique_key['columns'] | select('in', not_null_columns) | list -%}
        {%- if has_not_null and (
            smallest.key is none
            or unique_key['columns'] | length < smallest.key['columns'] | length
        ) -%}
            {%- set smallest.key = unique_key -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if smallest.key is not none -%}
        {{ return(smallest.key['columns']) }}
    {%- endif -%}
    {%- set lob_types = ['CLOB', 'NCLOB', 'BLOB', 'LONG', 'LONG RAW'] -%}
    {%- set all_columns = [] -%}
    {%- for column in definition['columns'] -%}
        {%- if (column['type'] | upper | trim).split() | join(' ') not in lob_types -%}
            {%- do all_columns.append(column['name']) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(all_columns) }}
{% endmacro %}


{#
    A query returning one row per key value held by more than one row of a silver table, over
    every live destination table listed in destination_tables (int_destination_tables: declared
    or made by CREATE TABLE, with its current definition; rows with is_dropped are skipped),
    with substitute keys from key_columns, whose silver table exists. The listing is read when
    the test runs (run_query), so a new destination table is checked without editing the
    project. Columns: silver_table, key_columns, key_value (JSON), occurrences.
#}
{% macro silver_duplicate_keys(destination_tables, key_columns) %}
    {%- set checks = [] -%}
    {%- if execute -%}
        {%- set substitute_keys = {} -%}
        {%- set key_rows = run_query(
            'select apply_name, source_database, object_owner, object_name, column_name from '
            ~ key_columns ~ ' order by column_position'
        ) -%}
        {%- for row in key_rows -%}
            {%- set object_id = [row[0], row[1], row[2], row[3]] | join('|') -%}
            {%- do substitute_keys.setdefault(object_id, []).append(row[4]) -%}
        {%- endfor -%}
        {%- set destinations = run_query(
            'select apply_name, source_database, object_owner, object_name, silver_table,'
            ~ ' definition_json from ' ~ destination_tables
            ~ ' where not is_dropped order by silver_table, apply_name'
        ) -%}
        {%- set seen = [] -%}
        {%- for row in destinations -%}
            {%- set object_id = [row[0], row[1], row[2], row[3]] | join('|') -%}
            {%- set key = lakeapply_effective_key(
                fromjson(row[5]), substitute_keys.get(object_id, [])
            ) -%}
            {%- set check_id = row[4] ~ '|' ~ (key | join(',')) -%}
            {%- set relation = adapter.get_relation(
                database=none, schema=lakeapply_schema('silver'), identifier=row[4]
            ) -%}
            {%- if relation is not none and key and check_id not in seen -%}
                {%- do seen.append(check_id) -%}
                {%- set quoted = lakeapply_quote_identifiers(key) -%}
                {%- set check -%}
    select
        {{ lakeapply_string_literal(row[4]) }} as silver_table,
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
