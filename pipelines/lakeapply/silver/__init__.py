"""Silver: the apply process that maintains destination tables from bronze LCRs.

Where each rule of ../shared/spec/apply-semantics.md lives, in the order a cycle meets them
(``engine.py`` runs the steps; docs/silver-design.md says how):

1. plan, status, exactly-once restart (rules 9, 11): ``plan.py``, ``cycle_state.py``
2. assemble transactions, copies (rules 1, 11): ``transactions.py``; late and redelivered
   input (rule 11): ``late.py``
3. route: rule sets, subset rules, transformations (rules 2, 3, 6): ``rules.py``, ``subset.py``,
   ``transformations.py``, called from ``assemble.py``; DML handlers (rule 7):
   ``dml_handlers.py``
4. instantiation SCN, keys, conversion, static errors (rules 3, 5, 6): ``stage.py``, ``keys.py``
5. conflicts, handlers, error passes (rules 4, 7, 8): ``fold_passes.py``, ``fold.py``,
   ``rowops.py``, ``components.py``, ``error_handlers.py``; LOB pieces (rule 12): ``lob.py``;
   DEPENDENT_TRANSACTIONS hold-back (rule 9): ``dependent.py``, ``virtual_dependencies.py``
6. write: MERGE, outcomes, error queue, spill (rules 8, 11): ``write.py``; destination file
   layout: ``layout.py``
7. progress: watermarks, counters, the cycle's commit (rule 9): ``progress.py``

DDL barriers and DDL transactions (rules 9, 10): ``ddl_apply.py``, ``ddl.py``. The error queue's
EXECUTE_ERROR and DELETE_ERROR (rule 8): ``engine.py``, ``error_queue.py``. Settings:
``settings.py`` (typed), ``validation.py`` (the one validator), ``config.py`` (the YAML file),
``admin.py`` (the DBMS_APPLY_ADM-like API), ``dictionary.py`` (the dictionary's tables).
"""
