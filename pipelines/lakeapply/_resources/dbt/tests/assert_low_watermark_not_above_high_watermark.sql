-- The low watermark (everything committed at or below it is applied) never exceeds the high
-- watermark (nothing committed above it is applied). One row per violating apply and source.
with

watermarks as (

    select * from {{ ref('int_apply_watermarks') }}

),

final as (

    select
        apply_name,
        source_database,
        low_watermark,
        high_watermark

    from watermarks
    where low_watermark > high_watermark

)

select * from final
