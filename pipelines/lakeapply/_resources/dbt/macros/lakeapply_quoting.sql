{#
    The only identifier quoter and the only string-literal quoter of the dbt project, the same as
    lakeapply.contract.identifiers.quote and sql_string_literal in Python. Every macro, model and
    test that puts a name or a value read from data into SQL text goes through them.
#}

{#- One identifier: backticks around it, inner backticks doubled. -#}
{% macro lakeapply_quote_identifier(name) -%}
    {{- return('`' ~ (name | string | replace('`', '``')) ~ '`') -}}
{%- endmacro %}

{#- Each name of a list quoted with lakeapply_quote_identifier, as a list. -#}
{% macro lakeapply_quote_identifiers(names) -%}
    {%- set quoted = [] -%}
    {%- for name in names -%}
        {%- do quoted.append(lakeapply_quote_identifier(name)) -%}
    {%- endfor -%}
    {{- return(quoted) -}}
{%- endmacro %}

{#- A Spark SQL string literal: single quotes around it, backslashes and single quotes escaped. -#}
{% macro lakeapply_string_literal(value) -%}
    {{- return("'" ~ (value | string | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'") -}}
{%- endmacro %}

{#- The catalog prefix (var lakeapply_prefix), refused unless it is a plain Spark name. -#}
{% macro lakeapply_prefix() -%}
    {%- set prefix = var('lakeapply_prefix', 'lakeapply') | string -%}
    {%- set allowed = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_' -%}
    {%- set bad = prefix | list | reject('in', allowed) | list -%}
    {%- if not prefix or bad or prefix[0] in '0123456789' or prefix | length > 128 -%}
        {{- exceptions.raise_compiler_error(
            'var lakeapply_prefix ' ~ lakeapply_string_literal(prefix)
            ~ ' is not a valid Spark name (letters, digits, underscore;'
            ~ ' not starting with a digit; at most 128 characters)'
        ) -}}
    {%- endif -%}
    {{- return(prefix) -}}
{%- endmacro %}
