-- No silver table holds two rows with the same key (rule 5; the key is the substitute key, else
-- the primary key, else the smallest unique key with a NOT NULL column, else all non-LOB columns;
-- NULLs group together, as the apply matches keys NULL-safely). The tables and their keys are
-- read from the live destination tables (declared or made by CREATE TABLE, each keyed by its
-- current definition, int_destination_tables) when the test runs (macros/silver_keys.sql).
-- One row per duplicated key value.
{{ silver_duplicate_keys(ref('int_destination_tables')) }}
