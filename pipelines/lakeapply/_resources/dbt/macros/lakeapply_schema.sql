{#- The name of one of lakeapply's databases: lakeapply_schema('apply') -> <prefix>_apply. -#}
{% macro lakeapply_schema(layer) -%}
    {{ lakeapply_prefix() ~ '_' ~ layer }}
{%- endmacro %}
