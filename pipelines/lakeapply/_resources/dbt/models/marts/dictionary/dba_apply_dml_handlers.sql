-- DBA_APPLY_DML_HANDLERS: the DML handlers of each apply process's destination tables. A
-- procedure handler is a Python callable (USER_PROCEDURE, package.module:function), a statement
-- handler a Spark SQL query over the LCRs (HANDLER_NAME, its text in STATEMENT). lakeapply has
-- no error handlers yet, so ERROR_HANDLER is always N.
with

handlers as (

    select * from {{ ref('stg_lakeapply__dml_handlers') }}

),

final as (

    select
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        operation_name as OPERATION_NAME,
        user_procedure as USER_PROCEDURE,
        handler_type as HANDLER_TYPE,
        'N' as ERROR_HANDLER,
        cast(null as string) as APPLY_DATABASE_LINK,
        apply_name as APPLY_NAME,
        case
            when handler_type = 'STMT HANDLER'
                then coalesce(
                    handler_name,
                    concat(object_owner, '_', object_name, '_', operation_name)
                )
        end as HANDLER_NAME,
        statement as STATEMENT,
        source_database as SOURCE_DATABASE

    from handlers

)

select * from final
