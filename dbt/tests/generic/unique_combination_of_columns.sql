{#
    The model has at most one row per combination of the given columns (a composite key):
    returns one row per duplicated combination. Like dbt_utils' test of the same name, without
    the package (the project installs no dbt packages, so it builds offline).
#}
{% test unique_combination_of_columns(model, combination_of_columns) %}

    {%- set key_columns = combination_of_columns | join(', ') %}

    select
        {{ key_columns }},
        count(*) as occurrences
    from {{ model }}
    group by {{ key_columns }}
    having count(*) > 1

{% endtest %}
