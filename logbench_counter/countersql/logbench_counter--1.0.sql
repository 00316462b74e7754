/* logbench_counter--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION logbench_counter" to load this file. \quit

CREATE FUNCTION records(
    OUT application_name text,
    OUT level text,
    OUT records bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'logbench_counter_records'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION records() IS
'records sent to the server log since counting_since(), by application_name and level; '''' holds processes with no application_name, NULL the names beyond logbench_counter.max_application_names';

-- Application names are what pg_stat_activity shows to the roles that may read
-- every session's statistics.
REVOKE ALL ON FUNCTION records() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION records() TO pg_read_all_stats;

CREATE FUNCTION counting_since()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'logbench_counter_counting_since'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION counting_since() IS
'when the counts of records() started: the server''s start, or its reinitialization after a crash; differences of records() hold between reads with the same counting_since()';
