-- DBA_APPLY: every apply process, its status and, when an error disabled it, that error.
with

apply_processes as (

    select * from {{ ref('stg_lakeapply__apply_processes') }}

),

final as (

    select
        apply_name as APPLY_NAME,
        'YES' as APPLY_CAPTURED,
        status as STATUS,
        status_change_time as STATUS_CHANGE_TIME,
        case when status = 'ABORTED' then error_number end as ERROR_NUMBER,
        case when status = 'ABORTED' then error_message end as ERROR_MESSAGE

    from apply_processes

)

select * from final
