{#
    Every lakeapply database is named from one prefix (var `lakeapply_prefix`, default
    `lakeapply`): the marts go to <prefix>_gold, a folder with a custom schema to
    <prefix>_gold_<custom> (staging, intermediate). The target's own `schema` is not used, so a
    run for another prefix (e.g. a test catalog) never writes into the default one.
#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set gold_schema = lakeapply_prefix() ~ '_gold' -%}
    {%- if custom_schema_name is none -%}
        {{ gold_schema }}
    {%- else -%}
        {{ gold_schema }}_{{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
