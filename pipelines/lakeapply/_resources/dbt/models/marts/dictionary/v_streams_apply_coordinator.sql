-- V$STREAMS_APPLY_COORDINATOR: state, counters and watermarks of each apply process.
with

apply_processes as (

    select * from {{ ref('stg_lakeapply__apply_processes') }}

),

watermarks as (

    select * from {{ ref('int_apply_watermarks') }}

),

per_apply as (

    select
        apply_name,
        sum(total_received) as total_received,
        sum(total_applied) as total_applied,
        sum(total_ignored) as total_ignored,
        sum(total_rolled_back) as total_rolled_back,
        sum(total_errors) as total_errors,
        min(low_watermark) as lwm_message_number,
        min_by(low_watermark_time, low_watermark) as lwm_message_create_time,
        max(high_watermark) as hwm_message_number,
        max_by(high_watermark_time, high_watermark) as hwm_message_create_time,
        max_by(high_watermark_apply_time, high_watermark) as hwm_time

    from watermarks
    group by apply_name

),

final as (

    select
        apply_processes.apply_name as APPLY_NAME,
        case apply_processes.status
            when 'ENABLED' then 'IDLE'
            else apply_processes.status
        end as STATE,
        coalesce(per_apply.total_received, 0) as TOTAL_RECEIVED,
        coalesce(per_apply.total_applied, 0) as TOTAL_APPLIED,
        coalesce(per_apply.total_ignored, 0) as TOTAL_IGNORED,
        coalesce(per_apply.total_rolled_back, 0) as TOTAL_ROLLBACKS,
        coalesce(per_apply.total_errors, 0) as TOTAL_ERRORS,
        per_apply.lwm_message_number as LWM_MESSAGE_NUMBER,
        per_apply.lwm_message_create_time as LWM_MESSAGE_CREATE_TIME,
        per_apply.hwm_message_number as HWM_MESSAGE_NUMBER,
        per_apply.hwm_message_create_time as HWM_MESSAGE_CREATE_TIME,
        per_apply.hwm_time as HWM_TIME,
        case
            when apply_processes.status = 'ENABLED' then apply_processes.status_change_time
        end as STARTUP_TIME

    from apply_processes
    left join per_apply
        on apply_processes.apply_name = per_apply.apply_name

)

select * from final
