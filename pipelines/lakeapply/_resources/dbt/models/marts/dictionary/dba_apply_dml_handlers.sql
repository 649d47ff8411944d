-- DBA_APPLY_DML_HANDLERS: the DML and error handlers of each apply process's destination
-- tables. A procedure handler is a Python callable (USER_PROCEDURE, package.module:function), a
-- statement handler a Spark SQL query over the LCRs (HANDLER_NAME, its text in STATEMENT). An
-- error handler (ERROR_HANDLER = Y) is always a procedure handler.
with

dml_handlers as (

    select * from {{ ref('stg_lakeapply__dml_handlers') }}

),

error_handlers as (

    select * from {{ ref('stg_lakeapply__error_handlers') }}

),

handlers as (

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        operation_name,
        handler_type,
        user_procedure,
        handler_name,
        statement,
        'N' as error_handler

    from dml_handlers

    union all

    select
        apply_name,
        source_database,
        object_owner,
        object_name,
        operation_name,
        'PROCEDURE HANDLER' as handler_type,
        user_procedure,
        cast(null as string) as handler_name,
        cast(null as string) as statement,
        'Y' as error_handler

    from error_handlers

),

final as (

    select
        object_owner as OBJECT_OWNER,
        object_name as OBJECT_NAME,
        operation_name as OPERATION_NAME,
        user_procedure as USER_PROCEDURE,
        handler_type as HANDLER_TYPE,
        error_handler as ERROR_HANDLER,
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
