-- sparse_einsum_kernels 1.3: dense kernels, element-wise aggregates and gathers on
-- float8[], sparse payloads, raw-byte loads and fetches, and rows x one matrix batched
\echo Use "CREATE EXTENSION sparse_einsum_kernels" to load this file. \quit

CREATE FUNCTION se_kernels_version() RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_kernel1(spec text, a float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_kernel2(spec text, a float8[], b float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_vsum_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vmax_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vmin_trans(internal, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vsum_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vmax_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vmin_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_vagg_final(internal) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_vagg_serial(internal) RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_vagg_deserial(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_take(spec text, a float8[], pos bigint) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_stack_trans(internal, text, float8[], bigint) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_stack_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_stack_final(internal) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_stack_serial(internal) RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_stack_deserial(bytea, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_value1(spec text, a float8[]) RETURNS float8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_value2(spec text, a float8[], b float8[]) RETURNS float8
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_wsum_trans(internal, float8, float8[]) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_wsum_combine(internal, internal) RETURNS internal
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE PARALLEL SAFE;
CREATE FUNCTION se_densify(packed float8[], size bigint) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_sparsify(dense float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

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
CREATE AGGREGATE se_wsum(float8, float8[]) (
    SFUNC = se_wsum_trans, STYPE = internal, SSPACE = 2048, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_wsum_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);
CREATE AGGREGATE se_stack(spec text, val float8[], pos bigint) (
    SFUNC = se_stack_trans, STYPE = internal, FINALFUNC = se_stack_final,
    COMBINEFUNC = se_stack_combine, SERIALFUNC = se_stack_serial,
    DESERIALFUNC = se_stack_deserial, PARALLEL = SAFE);

-- a relation's rows from raw bytes: keys (K columns of n int64, one column after the
-- other), the values (float8) and n + 1 int64 bounds of each row's values, native-endian;
-- called with a column definition list (k1 bigint, ..., kK bigint, val float8[])
CREATE FUNCTION se_rows(keys bytea, vals bytea, bounds bytea) RETURNS SETOF record
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- the elements of a float8[] of exactly width elements as native-endian bytes
CREATE FUNCTION se_raw(a float8[], width int) RETURNS bytea
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- rows x one matrix: se_kernel2(spec, a, b) of each row, the rows sharing b run as one
-- matrix product chunk by chunk; called as a window function over ()
CREATE FUNCTION se_kernel2_rows(spec text, a float8[], b float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C WINDOW IMMUTABLE PARALLEL SAFE;
