-- sparse_einsum_kernels 1.0 -> 1.1. The library is now sparse_einsum_kernels-1.1 (with
-- OpenBLAS for matrix products): every function of 1.0 is re-pointed to it, and the
-- element-wise aggregates declare their state size. New: se_value1/se_value2 (a
-- kernel's one result element as float8), se_wsum(w, v), and se_densify/se_sparsify for
-- sparse payloads (the flat offsets of the non-zeros, then their values).
\echo Use "ALTER EXTENSION sparse_einsum_kernels UPDATE TO '1.1'" to load this file. \quit

CREATE OR REPLACE FUNCTION se_kernels_version() RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_kernel1(spec text, a float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_kernel2(spec text, a float8[], b float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vsum_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vmax_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vmin_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vsum_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vmax_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vmin_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vagg_final(internal) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vagg_serial(internal) RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_vagg_deserial(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_take(spec text, a float8[], pos bigint) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_stack_trans(internal, text, float8[], bigint) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_stack_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_stack_final(internal) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_stack_serial(internal) RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_stack_deserial(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- element-wise aggregates declare the size of their state (an array of a few hundred
-- doubles), so that the planner estimates hash aggregation right instead of assuming
-- 8 kB per group and sorting wide rows
ALTER EXTENSION sparse_einsum_kernels DROP AGGREGATE se_vsum(float8[]);
ALTER EXTENSION sparse_einsum_kernels DROP AGGREGATE se_vmax(float8[]);
ALTER EXTENSION sparse_einsum_kernels DROP AGGREGATE se_vmin(float8[]);
DROP AGGREGATE se_vsum(float8[]);
DROP AGGREGATE se_vmax(float8[]);
DROP AGGREGATE se_vmin(float8[]);
CREATE AGGREGATE se_vsum(float8[]) (
    SFUNC = se_vsum_trans, STYPE = internal, SSPACE = 2048, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vsum_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);
CREATE AGGREGATE se_vmax(float8[]) (
    SFUNC = se_vmax_trans, STYPE = internal, SSPACE = 2048, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vmax_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);
CREATE AGGREGATE se_vmin(float8[]) (
    SFUNC = se_vmin_trans, STYPE = internal, SSPACE = 2048, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vmin_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);

-- the one element of a kernel's result, for specs whose output is a scalar
CREATE FUNCTION se_value1(spec text, a float8[]) RETURNS float8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_value2(spec text, a float8[], b float8[]) RETURNS float8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- element-wise SUM of w * v, without forming w * v
CREATE FUNCTION se_wsum_trans(internal, float8, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_wsum_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE AGGREGATE se_wsum(float8, float8[]) (
    SFUNC = se_wsum_trans, STYPE = internal, SSPACE = 2048, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_wsum_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);

CREATE OR REPLACE FUNCTION se_densify(packed float8[], size bigint) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION se_sparsify(dense float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
