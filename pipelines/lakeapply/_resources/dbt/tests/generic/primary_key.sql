{#
    The given columns are a key of the model: none of them is null (not_null) and no two rows
    share their values (unique), checked together in one aggregation so that every key of every
    model is tested without doubling the test count. Returns one row per failing key value.
#}
{%- test primary_key(model, column_names) -%}
{%- set quoted = lakeapply_quote_identifiers(column_names) -%}
{%- set key_columns = quoted | join(', ') %}
select
    {{ key_columns }},
    count(*) as occurrences
from {{ model }}
group by {{ key_columns }}
having
    count(*) > 1
    or {{ quoted | join(' is null or ') }} is null
{% endtest %}
