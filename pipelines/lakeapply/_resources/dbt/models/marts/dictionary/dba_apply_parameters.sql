-- DBA_APPLY_PARAMETERS: the parameters of each apply process. COMMIT_SERIALIZATION and
-- DISABLE_ON_ERROR are also columns of apply_processes; they are listed from there when the
-- parameters table does not hold them.
with

parameters as (

    select * from {{ ref('stg_lakeapply__parameters') }}

),

apply_processes as (

    select * from {{ ref('stg_lakeapply__apply_processes') }}

),

settings as (

    select
        apply_name,
        'COMMIT_SERIALIZATION' as parameter,
        commit_serialization as value,
        -- Oracle's default (11g): DEPENDENT_TRANSACTIONS
        case
            when commit_serialization = 'DEPENDENT_TRANSACTIONS' then 'NO' else 'YES'
        end as set_by_user
    from apply_processes

    union all

    select
        apply_name,
        'DISABLE_ON_ERROR' as parameter,
        disable_on_error as value,
        -- Oracle's default: Y
        case when disable_on_error = 'Y' then 'NO' else 'YES' end as set_by_user
    from apply_processes

),

settings_not_in_parameters as (

    select settings.*

    from settings
    left join parameters
        on
            settings.apply_name = parameters.apply_name
            and settings.parameter = parameters.parameter

    where parameters.parameter is null

),

all_parameters as (

    select
        apply_name,
        parameter,
        value,
        set_by_user
    from parameters

    union all

    select
        apply_name,
        parameter,
        value,
        set_by_user
    from settings_not_in_parameters

),

final as (

    select
        apply_name as APPLY_NAME,
        parameter as PARAMETER,
        value as VALUE,
        set_by_user as SET_BY_USER

    from all_parameters

)

select * from final
