-- sparse_einsum_kernels 1.0: dense kernels and element-wise aggregates on float8[]
\echo Use "CREATE EXTENSION sparse_einsum_kernels" to load this file. \quit

CREATE FUNCTION se_kernels_version() RETURNS text
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- out[o] = AGG_r OP(a[...], b[...]) as described by a KernelSpec text
CREATE FUNCTION se_kernel1(spec text, a float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION se_kernel2(spec text, a float8[], b float8[]) RETURNS float8[]
AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- element-wise SUM / MAX / MIN over float8[] of one length
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

CREATE AGGREGATE se_vsum(float8[]) (
    SFUNC = se_vsum_trans, STYPE = internal, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vsum_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);
CREATE AGGREGATE se_vmax(float8[]) (
    SFUNC = se_vmax_trans, STYPE = internal, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vmax_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);
CREATE AGGREGATE se_vmin(float8[]) (
    SFUNC = se_vmin_trans, STYPE = internal, FINALFUNC = se_vagg_final,
    COMBINEFUNC = se_vmin_combine, SERIALFUNC = se_vagg_serial,
    DESERIALFUNC = se_vagg_deserial, PARALLEL = SAFE);

-- repartitioning with a GatherSpec text: cut out / scatter sub-tensors
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

CREATE AGGREGATE se_stack(spec text, val float8[], pos bigint) (
    SFUNC = se_stack_trans, STYPE = internal, FINALFUNC = se_stack_final,
    COMBINEFUNC = se_stack_combine, SERIALFUNC = se_stack_serial,
    DESERIALFUNC = se_stack_deserial, PARALLEL = SAFE);
