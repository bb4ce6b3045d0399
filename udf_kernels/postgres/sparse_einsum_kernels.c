/*
 * sparse_einsum_kernels: dense kernels on float8[] for sparse_einsum.
 *
 * se_kernel1/se_kernel2 interpret a KernelSpec text (sparse_einsum/kernels/spec.py):
 *     OP;AGG;N_OUT;D0,D1,...;SA0,SA1,...[;SB0,SB1,...]
 * se_take/se_stack move sub-tensors described by a GatherSpec text:
 *     SIZE;DN0,...;SN0,...;DS0,...;SS0,...
 * se_vsum/se_vmax/se_vmin are element-wise aggregates (float8_accum pattern, parallel safe).
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

PG_MODULE_MAGIC;

#define SE_KERNELS_VERSION "1.0"
#define SE_MAXDIMS 32
#define SE_MAXELEMS ((int64) ((MaxAllocSize - ARR_OVERHEAD_NONULLS(1)) / sizeof(double)))

void		_PG_init(void);

/* sparse_einsum_kernels.cache_broadcast: keep a detoasted copy of an argument repeated row after row */
static bool se_cache_broadcast = true;

void
_PG_init(void)
{
	DefineCustomBoolVariable("sparse_einsum_kernels.cache_broadcast",
							 "Keep a detoasted copy of a kernel argument that repeats from row to row.",
							 NULL, &se_cache_broadcast, true, PGC_USERSET, 0, NULL, NULL, NULL);
#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("sparse_einsum_kernels");
#else
	EmitWarningsOnPlaceholders("sparse_einsum_kernels");
#endif
}

#define SPEC_ERROR(kind, spec, ...) \
	ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), \
					errmsg("invalid %s spec \"%s\"", kind, spec), errdetail(__VA_ARGS__)))

/* ---------------------------------------------------------------- arrays */

/* Elements of a 1-D float8[] without NULLs (an empty array has 0 elements). */
static const double *
f8_data(ArrayType *arr, int *n, const char *fname, const char *argname)
{
	if (ARR_ELEMTYPE(arr) != FLOAT8OID)
		ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
						errmsg("%s: %s must be float8[]", fname, argname)));
	if (ARR_NDIM(arr) > 1)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("%s: %s must be a 1-D array, got %d dimensions",
							   fname, argname, ARR_NDIM(arr))));
	if (ARR_HASNULL(arr) && array_contains_nulls(arr))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("%s: %s contains NULL elements", fname, argname)));
	*n = ARR_NDIM(arr) == 0 ? 0 : ARR_DIMS(arr)[0];
	return (const double *) ARR_DATA_PTR(arr);
}

/* A new 1-D float8[] of n elements (uninitialised) in the current context. */
static ArrayType *
new_f8_array(int64 n, double **data)
{
	Size		nbytes;
	ArrayType  *r;

	if (n <= 0)
	{
		*data = NULL;
		return construct_empty_array(FLOAT8OID);
	}
	if (n > SE_MAXELEMS)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("array of " INT64_FORMAT " float8 elements is too large", n)));
	nbytes = ARR_OVERHEAD_NONULLS(1) + sizeof(double) * (Size) n;
	r = (ArrayType *) palloc(nbytes);
	memset(r, 0, ARR_OVERHEAD_NONULLS(1));
	SET_VARSIZE(r, nbytes);
	r->ndim = 1;
	r->dataoffset = 0;
	r->elemtype = FLOAT8OID;
	ARR_DIMS(r)[0] = (int) n;
	ARR_LBOUND(r)[0] = 1;
	*data = (double *) ARR_DATA_PTR(r);
	return r;
}

/* ---------------------------------------------------------------- spec parsing */

/* Split s in place at ';'; returns the field count (maxf + 1 when there are more). */
static int
split_fields(char *s, char **fields, int maxf)
{
	int			n = 0;

	for (;;)
	{
		if (n == maxf)
			return maxf + 1;
		fields[n++] = s;
		s = strchr(s, ';');
		if (s == NULL)
			return n;
		*s++ = '\0';
	}
}

/* Parse "1,2,3" (non-negative integers; "" is the empty list) into out; returns the count. */
static int
parse_ints(const char *field, int64 *out, const char *kind, const char *spec, const char *what)
{
	const char *p = field;
	int			n = 0;

	if (*p == '\0')
		return 0;
	for (;;)
	{
		char	   *end;
		long long	v;

		if (n == SE_MAXDIMS)
			SPEC_ERROR(kind, spec, "%s has more than %d entries", what, SE_MAXDIMS);
		if (*p < '0' || *p > '9')
			SPEC_ERROR(kind, spec, "%s must be non-negative integers separated by commas", what);
		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno != 0 || v > PG_INT32_MAX * (long long) 1024)
			SPEC_ERROR(kind, spec, "%s has an integer out of range", what);
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			SPEC_ERROR(kind, spec, "%s must be non-negative integers separated by commas", what);
		p = end + 1;
	}
}

/* Product of dims (or of none: 1), erroring on overflow. */
static int64
dims_product(const int64 *dims, int n, const char *kind, const char *spec)
{
	int64		p = 1;

	for (int t = 0; t < n; t++)
		if (pg_mul_s64_overflow(p, dims[t], &p))
			SPEC_ERROR(kind, spec, "sizes overflow");
	return p;
}

/* One past the largest flat index reached by dims/strides (0 when some dim is 0). */
static int64
max_reach(const int64 *dims, const int64 *strides, int n, const char *kind, const char *spec)
{
	int64		r = 0;

	for (int t = 0; t < n; t++)
	{
		int64		step;

		if (dims[t] == 0)
			return 0;
		if (pg_mul_s64_overflow(dims[t] - 1, strides[t], &step) || pg_add_s64_overflow(r, step, &r))
			SPEC_ERROR(kind, spec, "strides overflow");
	}
	return r + 1;
}

/* ---------------------------------------------------------------- kernel ops */

/* SE_OPS: the operations of sparse_einsum/program/ops.py (binary ones first) */
#include "se_ops.h"

#define X_ENUM(name, expr) OP_##name,
enum
{
	SE_OPS(X_ENUM) N_OPS
};
#define N_BINARY SE_N_BINARY
#define FIRST_CONST SE_FIRST_CONST

#define X_NAME(name, expr) #name,
static const char *const op_names[N_OPS] = {SE_OPS(X_NAME)};

enum
{
	AGG_SUM, AGG_MAX, AGG_MIN
};
static const char *const agg_names[] = {"sum", "max", "min"};

typedef double (*reduce_fn) (const double *a, int64 sa, const double *b, int64 sb, int64 n,
							 double acc, double c);
typedef void (*map_fn) (double *out, const double *a, int64 sa, const double *b, int64 sb,
						int64 n, double c);

/* max/min propagate NaN like NumPy */
#define AGG_STEP_max(acc, v) do { if ((v) > (acc) || isnan(v)) (acc) = (v); } while (0)
#define AGG_STEP_min(acc, v) do { if ((v) < (acc) || isnan(v)) (acc) = (v); } while (0)

/* sum uses four partial sums so the adds pipeline (faster than a unit-stride special case) */
#define X_REDUCE(name, expr) \
static double \
red_sum_##name(const double *a, int64 sa, const double *b, int64 sb, int64 n, double acc, double c) \
{ \
	double		s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0; \
	int64		i = 0; \
	(void) c; \
	for (; i + 4 <= n; i += 4, a += 4 * sa, b += 4 * sb) \
	{ \
		{ const double x = a[0], y = b[0]; (void) y; s0 += (expr); } \
		{ const double x = a[sa], y = b[sb]; (void) y; s1 += (expr); } \
		{ const double x = a[2 * sa], y = b[2 * sb]; (void) y; s2 += (expr); } \
		{ const double x = a[3 * sa], y = b[3 * sb]; (void) y; s3 += (expr); } \
	} \
	for (; i < n; i++, a += sa, b += sb) \
	{ const double x = *a, y = *b; (void) y; s0 += (expr); } \
	return acc + ((s0 + s1) + (s2 + s3)); \
} \
static double \
red_max_##name(const double *a, int64 sa, const double *b, int64 sb, int64 n, double acc, double c) \
{ \
	(void) c; \
	for (int64 i = 0; i < n; i++, a += sa, b += sb) \
	{ const double x = *a, y = *b; const double v = (expr); (void) y; AGG_STEP_max(acc, v); } \
	return acc; \
} \
static double \
red_min_##name(const double *a, int64 sa, const double *b, int64 sb, int64 n, double acc, double c) \
{ \
	(void) c; \
	for (int64 i = 0; i < n; i++, a += sa, b += sb) \
	{ const double x = *a, y = *b; const double v = (expr); (void) y; AGG_STEP_min(acc, v); } \
	return acc; \
} \
static void \
map_##name(double *out, const double *a, int64 sa, const double *b, int64 sb, int64 n, double c) \
{ \
	(void) c; \
	for (int64 i = 0; i < n; i++, a += sa, b += sb) \
	{ const double x = *a, y = *b; (void) y; out[i] = (expr); } \
}
SE_OPS(X_REDUCE)

#define X_RED_SUM(name, expr) red_sum_##name,
#define X_RED_MAX(name, expr) red_max_##name,
#define X_RED_MIN(name, expr) red_min_##name,
#define X_MAP(name, expr) map_##name,
static const reduce_fn reduce_tab[3][N_OPS] = {
	{SE_OPS(X_RED_SUM)}, {SE_OPS(X_RED_MAX)}, {SE_OPS(X_RED_MIN)}
};
static const map_fn map_tab[N_OPS] = {SE_OPS(X_MAP)};

/* ---------------------------------------------------------------- kernel spec */

typedef struct KSpec
{
	int			op, agg, n_out, ndims, arity;
	double		c;
	int64		dims[SE_MAXDIMS];
	int64		st[2][SE_MAXDIMS];	/* strides per input (zeros for a missing b) */
	int64		out_size, red_size;
	int64		need[2];		/* minimal input lengths */
} KSpec;

static void
parse_kspec(const char *spec, KSpec *ks)
{
	char	   *buf = pstrdup(spec);
	char	   *f[7];
	char	   *colon;
	int64		n_out[SE_MAXDIMS];
	int			nf = split_fields(buf, f, 6);

	memset(ks, 0, sizeof(*ks));
	if (nf < 5 || nf > 6)
		SPEC_ERROR("kernel", spec, "expected OP;AGG;N_OUT;DIMS;STRIDES_A[;STRIDES_B]");
	ks->arity = nf - 4;

	colon = strchr(f[0], ':');
	if (colon)
		*colon = '\0';
	ks->op = -1;
	for (int i = 0; i < N_OPS; i++)
		if (strcmp(f[0], op_names[i]) == 0)
			ks->op = i;
	if (ks->op < 0)
		SPEC_ERROR("kernel", spec, "unknown operator \"%s\"", f[0]);
	if ((ks->op >= FIRST_CONST) != (colon != NULL))
		SPEC_ERROR("kernel", spec, colon ? "\"%s\" takes no constant" : "\"%s\" needs a constant (%s:C)",
				   f[0], f[0]);
	if (colon)
	{
		char	   *end;

		ks->c = strtod(colon + 1, &end);
		if (end == colon + 1 || *end != '\0')
			SPEC_ERROR("kernel", spec, "bad constant \"%s\"", colon + 1);
	}
	if ((ks->op < N_BINARY) != (ks->arity == 2))
		SPEC_ERROR("kernel", spec, "\"%s\" takes %d input(s) but the spec has %d stride list(s)",
				   op_names[ks->op], ks->op < N_BINARY ? 2 : 1, ks->arity);

	ks->agg = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(f[1], agg_names[i]) == 0)
			ks->agg = i;
	if (ks->agg < 0)
		SPEC_ERROR("kernel", spec, "unknown aggregate \"%s\" (sum, max or min)", f[1]);

	if (parse_ints(f[2], n_out, "kernel", spec, "N_OUT") != 1)
		SPEC_ERROR("kernel", spec, "N_OUT must be one integer");
	ks->ndims = parse_ints(f[3], ks->dims, "kernel", spec, "DIMS");
	if (n_out[0] > ks->ndims)
		SPEC_ERROR("kernel", spec, "N_OUT %d exceeds the %d loop dims", (int) n_out[0], ks->ndims);
	ks->n_out = (int) n_out[0];
	for (int k = 0; k < ks->arity; k++)
	{
		if (parse_ints(f[4 + k], ks->st[k], "kernel", spec, "STRIDES") != ks->ndims)
			SPEC_ERROR("kernel", spec, "input %d needs one stride per loop dim (%d)", k + 1, ks->ndims);
		ks->need[k] = max_reach(ks->dims, ks->st[k], ks->ndims, "kernel", spec);
	}
	ks->out_size = dims_product(ks->dims, ks->n_out, "kernel", spec);
	ks->red_size = dims_product(ks->dims + ks->n_out, ks->ndims - ks->n_out, "kernel", spec);
	if (ks->out_size > SE_MAXELEMS || ks->red_size > PG_INT64_MAX / Max(ks->out_size, 1))
		SPEC_ERROR("kernel", spec, "loop space too large");
	pfree(buf);
}

/* Step an odometer over dims[lo..hi]; keeps offsets oa/ob in step. */
static inline void
odometer_step(const KSpec *ks, int64 *idx, int lo, int hi, int64 *oa, int64 *ob)
{
	const int64 *sa = ks->st[0], *sb = ks->st[1];

	for (int t = hi; t >= lo; t--)
	{
		if (++idx[t] < ks->dims[t])
		{
			*oa += sa[t];
			*ob += sb[t];
			return;
		}
		idx[t] = 0;
		*oa -= sa[t] * (ks->dims[t] - 1);
		*ob -= sb[t] * (ks->dims[t] - 1);
	}
}

/* out[o] = AGG_r OP(a[..], b[..]); the last loop dim runs in a tight inner loop. */
static void
run_kernel(const KSpec *ks, const double *a, const double *b, double *out)
{
	int			nd = ks->ndims, no = ks->n_out, last = nd - 1;
	int64		idx[SE_MAXDIMS] = {0};
	int64		oa = 0, ob = 0;
	int64		n_in = nd > 0 ? ks->dims[last] : 1;
	int64		sa_in = nd > 0 ? ks->st[0][last] : 0;
	int64		sb_in = nd > 0 ? ks->st[1][last] : 0;

	if (b == NULL)
		b = a;					/* unary: strides of b are all zero */
	if (ks->out_size == 0)
		return;
	if (nd == no)
	{
		map_fn		f = map_tab[ks->op];

		for (int64 o = 0; o < ks->out_size; o += n_in)
		{
			f(out + o, a + oa, sa_in, b + ob, sb_in, n_in, ks->c);
			odometer_step(ks, idx, 0, last - 1, &oa, &ob);
		}
	}
	else
	{
		reduce_fn	f = reduce_tab[ks->agg][ks->op];
		double		init = ks->agg == AGG_SUM ? 0.0 : ks->agg == AGG_MAX ? -INFINITY : INFINITY;
		int64		red_outer = n_in == 0 ? 0 : ks->red_size / n_in;

		for (int64 o = 0; o < ks->out_size; o++)
		{
			double		acc = init;
			int64		ra = oa, rb = ob;

			for (int64 r = 0; r < red_outer; r++)
			{
				acc = f(a + ra, sa_in, b + rb, sb_in, n_in, acc, ks->c);
				odometer_step(ks, idx, no, last - 1, &ra, &rb);
			}
			out[o] = acc;
			odometer_step(ks, idx, 0, no - 1, &oa, &ob);
		}
	}
}

/* ---------------------------------------------------------------- argument cache */

/*
 * A broadcast constant (say a weight matrix from a one-row table) arrives as the
 * same toasted datum on every row. Once a datum is seen twice in a row, keep its
 * detoasted copy: on-disk values are keyed by their toast pointer, inline
 * compressed ones by address and length, checked against a copy of the bytes.
 */
typedef struct ArgCache
{
	int			state;			/* 0 empty, 1 key seen once, 2 copy cached */
	bool		external;
	struct varatt_external ext;
	const void *ptr;
	Size		len;
	char	   *raw;			/* compressed bytes (inline values, state 2) */
	ArrayType  *arr;			/* detoasted copy (state 2) */
} ArgCache;

static ArrayType *
get_array_arg(FunctionCallInfo fcinfo, int argno, ArgCache *ac)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	bool		ext = VARATT_IS_EXTERNAL_ONDISK(v);
	bool		same;
	ArrayType  *tmp;

	if (!se_cache_broadcast || !(ext || VARATT_IS_COMPRESSED(v)))
		return DatumGetArrayTypeP(PointerGetDatum(v));
	if (ext)
	{
		struct varatt_external e;

		VARATT_EXTERNAL_GET_POINTER(e, v);
		same = ac->state > 0 && ac->external && e.va_valueid == ac->ext.va_valueid &&
			e.va_toastrelid == ac->ext.va_toastrelid;
		ac->ext = e;
	}
	else
	{
		Size		len = VARSIZE(v);

		same = ac->state > 0 && !ac->external && ac->ptr == v && ac->len == len &&
			(ac->state == 1 || memcmp(ac->raw, v, len) == 0);
		ac->ptr = v;
		ac->len = len;
	}
	if (same && ac->state == 2)
		return ac->arr;
	if (ac->state == 2)
	{
		pfree(ac->arr);
		if (ac->raw)
			pfree(ac->raw);
		ac->arr = NULL;
		ac->raw = NULL;
	}
	ac->external = ext;
	ac->state = 1;
	tmp = DatumGetArrayTypeP(PointerGetDatum(v));
	if (!same)
		return tmp;
	/* second sighting in a row: keep a copy */
	ac->arr = (ArrayType *) MemoryContextAlloc(mcxt, VARSIZE(tmp));
	memcpy(ac->arr, tmp, VARSIZE(tmp));
	if (!ext)
	{
		ac->raw = MemoryContextAlloc(mcxt, ac->len);
		memcpy(ac->raw, v, ac->len);
	}
	ac->state = 2;
	pfree(tmp);
	return ac->arr;
}

/* ---------------------------------------------------------------- kernels */

typedef struct KernelCache
{
	char	   *spec;			/* NUL-terminated spec text */
	int			speclen;
	KSpec		ks;
	ArgCache	arg[2];
} KernelCache;

static KernelCache *
kernel_cache(FunctionCallInfo fcinfo, text *spec)
{
	KernelCache *kc = (KernelCache *) fcinfo->flinfo->fn_extra;
	const char *s = VARDATA_ANY(spec);
	int			len = VARSIZE_ANY_EXHDR(spec);
	KSpec		ks;
	char	   *cs;

	if (kc && kc->speclen == len && memcmp(kc->spec, s, len) == 0)
		return kc;
	cs = text_to_cstring(spec);
	parse_kspec(cs, &ks);
	if (kc == NULL)
	{
		kc = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KernelCache));
		fcinfo->flinfo->fn_extra = kc;
	}
	else
		pfree(kc->spec);
	kc->spec = MemoryContextStrdup(fcinfo->flinfo->fn_mcxt, cs);
	kc->speclen = len;
	kc->ks = ks;
	pfree(cs);
	return kc;
}

static Datum
kernel_call(FunctionCallInfo fcinfo, int arity, const char *fname)
{
	KernelCache *kc = kernel_cache(fcinfo, PG_GETARG_TEXT_PP(0));
	const KSpec *ks = &kc->ks;
	const double *in[2] = {NULL, NULL};
	double	   *od;
	ArrayType  *out;

	if (ks->arity != arity)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s: spec \"%s\" is for %d input(s), %s takes %d",
							   fname, kc->spec, ks->arity, fname, arity)));
	for (int k = 0; k < arity; k++)
	{
		int			n;

		in[k] = f8_data(get_array_arg(fcinfo, k + 1, &kc->arg[k]), &n, fname, k ? "b" : "a");
		if (n < ks->need[k])
			ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("%s: input %s has %d elements but spec \"%s\" reads " INT64_FORMAT,
								   fname, k ? "b" : "a", n, kc->spec, ks->need[k])));
	}
	out = new_f8_array(ks->out_size, &od);
	run_kernel(ks, in[0], in[1], od);
	PG_RETURN_ARRAYTYPE_P(out);
}

PG_FUNCTION_INFO_V1(se_kernel1);
Datum
se_kernel1(PG_FUNCTION_ARGS)
{
	return kernel_call(fcinfo, 1, "se_kernel1");
}

PG_FUNCTION_INFO_V1(se_kernel2);
Datum
se_kernel2(PG_FUNCTION_ARGS)
{
	return kernel_call(fcinfo, 2, "se_kernel2");
}

PG_FUNCTION_INFO_V1(se_kernels_version);
Datum
se_kernels_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(SE_KERNELS_VERSION));
}

/* ---------------------------------------------------------------- element-wise aggregates */

typedef struct VState
{
	int32		len;
	double		v[FLEXIBLE_ARRAY_MEMBER];
} VState;

enum
{
	V_SUM, V_MAX, V_MIN
};
static const char *const vagg_names[] = {"se_vsum", "se_vmax", "se_vmin"};

static inline void
vagg_update(double *acc, const double *x, int n, int kind)
{
	if (kind == V_SUM)
		for (int i = 0; i < n; i++)
			acc[i] += x[i];
	else if (kind == V_MAX)
		for (int i = 0; i < n; i++)
			AGG_STEP_max(acc[i], x[i]);
	else
		for (int i = 0; i < n; i++)
			AGG_STEP_min(acc[i], x[i]);
}

static VState *
vstate_new(MemoryContext ctx, const double *x, int n)
{
	VState	   *st = MemoryContextAlloc(ctx, offsetof(VState, v) + sizeof(double) * (Size) n);

	st->len = n;
	memcpy(st->v, x, sizeof(double) * (Size) n);
	return st;
}

static void
vcheck_len(int kind, int have, int got)
{
	if (have != got)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("%s: arrays in one group must have the same length (%d and %d)",
							   vagg_names[kind], have, got)));
}

static Datum
vagg_trans(FunctionCallInfo fcinfo, int kind)
{
	MemoryContext aggctx;
	VState	   *st = PG_ARGISNULL(0) ? NULL : (VState *) PG_GETARG_POINTER(0);
	const double *x;
	int			n;

	if (!AggCheckCallContext(fcinfo, &aggctx))
		elog(ERROR, "%s called in non-aggregate context", vagg_names[kind]);
	if (PG_ARGISNULL(1))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	x = f8_data(PG_GETARG_ARRAYTYPE_P(1), &n, vagg_names[kind], "the input");
	if (st == NULL)
		PG_RETURN_POINTER(vstate_new(aggctx, x, n));
	vcheck_len(kind, st->len, n);
	vagg_update(st->v, x, n, kind);
	PG_RETURN_POINTER(st);
}

static Datum
vagg_combine(FunctionCallInfo fcinfo, int kind)
{
	MemoryContext aggctx;
	VState	   *s1 = PG_ARGISNULL(0) ? NULL : (VState *) PG_GETARG_POINTER(0);
	VState	   *s2 = PG_ARGISNULL(1) ? NULL : (VState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggctx))
		elog(ERROR, "%s combine called in non-aggregate context", vagg_names[kind]);
	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
		PG_RETURN_POINTER(vstate_new(aggctx, s2->v, s2->len));
	vcheck_len(kind, s1->len, s2->len);
	vagg_update(s1->v, s2->v, s1->len, kind);
	PG_RETURN_POINTER(s1);
}

#define VAGG_FUNCS(name, kind) \
PG_FUNCTION_INFO_V1(name##_trans); \
Datum name##_trans(PG_FUNCTION_ARGS) { return vagg_trans(fcinfo, kind); } \
PG_FUNCTION_INFO_V1(name##_combine); \
Datum name##_combine(PG_FUNCTION_ARGS) { return vagg_combine(fcinfo, kind); }
VAGG_FUNCS(se_vsum, V_SUM)
VAGG_FUNCS(se_vmax, V_MAX)
VAGG_FUNCS(se_vmin, V_MIN)

PG_FUNCTION_INFO_V1(se_vagg_final);
Datum
se_vagg_final(PG_FUNCTION_ARGS)
{
	VState	   *st = (VState *) PG_GETARG_POINTER(0);
	double	   *od;
	ArrayType  *out = new_f8_array(st->len, &od);

	if (st->len > 0)
		memcpy(od, st->v, sizeof(double) * (Size) st->len);
	PG_RETURN_ARRAYTYPE_P(out);
}

PG_FUNCTION_INFO_V1(se_vagg_serial);
Datum
se_vagg_serial(PG_FUNCTION_ARGS)
{
	VState	   *st = (VState *) PG_GETARG_POINTER(0);
	Size		n = offsetof(VState, v) + sizeof(double) * (Size) st->len;
	bytea	   *r = (bytea *) palloc(VARHDRSZ + n);

	SET_VARSIZE(r, VARHDRSZ + n);
	memcpy(VARDATA(r), st, n);
	PG_RETURN_BYTEA_P(r);
}

PG_FUNCTION_INFO_V1(se_vagg_deserial);
Datum
se_vagg_deserial(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	Size		n = VARSIZE_ANY_EXHDR(b);
	VState	   *st = palloc(Max(n, sizeof(VState)));

	memcpy(st, VARDATA_ANY(b), n);
	if (n < offsetof(VState, v) || n != offsetof(VState, v) + sizeof(double) * (Size) st->len)
		elog(ERROR, "se_vagg_deserial: corrupt state");
	PG_RETURN_POINTER(st);
}

/* ---------------------------------------------------------------- gather specs */

typedef struct GSpec
{
	int64		size, positions, sub_size;
	int			nn, ns;
	int64		dn[SE_MAXDIMS], sn[SE_MAXDIMS], ds[SE_MAXDIMS], ss[SE_MAXDIMS];
	int64	   *suboff;			/* flat offset of each sub-tensor element */
} GSpec;

/* Parse a gather spec; suboff is allocated in the current memory context. */
static void
parse_gspec(const char *spec, GSpec *g)
{
	char	   *buf = pstrdup(spec);
	char	   *f[6];
	int64		size[SE_MAXDIMS], idx[SE_MAXDIMS] = {0}, off = 0, reach;

	memset(g, 0, sizeof(*g));
	if (split_fields(buf, f, 5) != 5)
		SPEC_ERROR("gather", spec, "expected SIZE;NEW_DIMS;NEW_STRIDES;SUB_DIMS;SUB_STRIDES");
	if (parse_ints(f[0], size, "gather", spec, "SIZE") != 1)
		SPEC_ERROR("gather", spec, "SIZE must be one integer");
	g->size = size[0];
	g->nn = parse_ints(f[1], g->dn, "gather", spec, "NEW_DIMS");
	g->ns = parse_ints(f[3], g->ds, "gather", spec, "SUB_DIMS");
	if (parse_ints(f[2], g->sn, "gather", spec, "NEW_STRIDES") != g->nn ||
		parse_ints(f[4], g->ss, "gather", spec, "SUB_STRIDES") != g->ns)
		SPEC_ERROR("gather", spec, "each dims list needs one stride per dim");
	g->positions = dims_product(g->dn, g->nn, "gather", spec);
	g->sub_size = dims_product(g->ds, g->ns, "gather", spec);
	if (g->size > SE_MAXELEMS || g->sub_size > SE_MAXELEMS || g->positions > MaxAllocSize)
		SPEC_ERROR("gather", spec, "sizes too large");
	reach = max_reach(g->dn, g->sn, g->nn, "gather", spec);
	if (reach > 0 && g->sub_size > 0)
	{
		reach += max_reach(g->ds, g->ss, g->ns, "gather", spec) - 1;
		if (reach > g->size)
			SPEC_ERROR("gather", spec, "sub-tensors reach index " INT64_FORMAT " beyond SIZE " INT64_FORMAT,
					   reach - 1, g->size);
	}
	g->suboff = palloc(sizeof(int64) * Max(g->sub_size, 1));
	for (int64 e = 0; e < g->sub_size; e++)
	{
		g->suboff[e] = off;
		for (int t = g->ns - 1; t >= 0; t--)
		{
			if (++idx[t] < g->ds[t])
			{
				off += g->ss[t];
				break;
			}
			idx[t] = 0;
			off -= g->ss[t] * (g->ds[t] - 1);
		}
	}
	pfree(buf);
}

/* Flat offset of the sub-tensor at position pos (row-major over NEW_DIMS). */
static int64
gspec_base(const GSpec *g, int64 pos, const char *fname, const char *spec)
{
	int64		base = 0;

	if (pos < 0 || pos >= g->positions)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("%s: position " INT64_FORMAT " out of range 0.." INT64_FORMAT " of spec \"%s\"",
							   fname, pos, g->positions - 1, spec)));
	for (int t = g->nn - 1; t >= 0; t--)
	{
		base += (pos % g->dn[t]) * g->sn[t];
		pos /= g->dn[t];
	}
	return base;
}

typedef struct GatherCache
{
	char	   *spec;
	int			speclen;
	GSpec		g;
} GatherCache;

PG_FUNCTION_INFO_V1(se_take);
Datum
se_take(PG_FUNCTION_ARGS)
{
	text	   *spec = PG_GETARG_TEXT_PP(0);
	GatherCache *gc = (GatherCache *) fcinfo->flinfo->fn_extra;
	const char *s = VARDATA_ANY(spec);
	int			len = VARSIZE_ANY_EXHDR(spec);
	const double *x;
	double	   *od;
	int			n;
	int64		base;
	bool		nonzero = false;
	ArrayType  *out;

	if (gc == NULL || gc->speclen != len || memcmp(gc->spec, s, len) != 0)
	{
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
		char	   *cs = text_to_cstring(spec);
		GSpec		g;

		parse_gspec(cs, &g);
		if (gc == NULL)
			gc = fcinfo->flinfo->fn_extra = palloc0(sizeof(GatherCache));
		else
		{
			pfree(gc->spec);
			pfree(gc->g.suboff);
		}
		gc->spec = cs;
		gc->speclen = len;
		gc->g = g;
		MemoryContextSwitchTo(old);
	}
	x = f8_data(PG_GETARG_ARRAYTYPE_P(1), &n, "se_take", "a");
	if (n != gc->g.size)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("se_take: a has %d elements but spec \"%s\" has SIZE " INT64_FORMAT,
							   n, gc->spec, gc->g.size)));
	base = gspec_base(&gc->g, PG_GETARG_INT64(2), "se_take", gc->spec);
	out = new_f8_array(gc->g.sub_size, &od);
	for (int64 e = 0; e < gc->g.sub_size; e++)
	{
		od[e] = x[base + gc->g.suboff[e]];
		nonzero |= od[e] != 0.0;
	}
	if (!nonzero)
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(out);
}

/* se_stack state: the big tensor, zero-filled, and which positions were written. */
typedef struct StackState
{
	char	   *spec;
	int			speclen;
	GSpec		g;
	bool	   *written;
	double	   *data;
} StackState;

static StackState *
stack_new(MemoryContext ctx, const char *spec, int speclen)
{
	MemoryContext old = MemoryContextSwitchTo(ctx);
	StackState *st = palloc0(sizeof(StackState));

	st->spec = pnstrdup(spec, speclen);
	st->speclen = speclen;
	parse_gspec(st->spec, &st->g);
	st->written = palloc0(Max(st->g.positions, 1));
	st->data = palloc0(sizeof(double) * Max(st->g.size, 1));
	MemoryContextSwitchTo(old);
	return st;
}

static void
stack_check_spec(const StackState *st, const char *spec, int len)
{
	if (st->speclen != len || memcmp(st->spec, spec, len) != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_stack: the spec changes within a group (\"%s\" and \"%.*s\")",
							   st->spec, len, spec)));
}

PG_FUNCTION_INFO_V1(se_stack_trans);
Datum
se_stack_trans(PG_FUNCTION_ARGS)
{
	MemoryContext aggctx;
	StackState *st = PG_ARGISNULL(0) ? NULL : (StackState *) PG_GETARG_POINTER(0);
	text	   *spec;
	const double *x;
	int			n;
	int64		base;

	if (!AggCheckCallContext(fcinfo, &aggctx))
		elog(ERROR, "se_stack called in non-aggregate context");
	if (PG_ARGISNULL(1))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	spec = PG_GETARG_TEXT_PP(1);
	if (st == NULL)
		st = stack_new(aggctx, VARDATA_ANY(spec), VARSIZE_ANY_EXHDR(spec));
	else
		stack_check_spec(st, VARDATA_ANY(spec), VARSIZE_ANY_EXHDR(spec));
	if (PG_ARGISNULL(2))		/* an all-zero sub-tensor (se_take gives NULL) */
		PG_RETURN_POINTER(st);
	if (PG_ARGISNULL(3))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("se_stack: pos is NULL")));
	x = f8_data(PG_GETARG_ARRAYTYPE_P(2), &n, "se_stack", "val");
	if (n != st->g.sub_size)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("se_stack: val has %d elements but spec \"%s\" has sub-tensors of " INT64_FORMAT,
							   n, st->spec, st->g.sub_size)));
	base = gspec_base(&st->g, PG_GETARG_INT64(3), "se_stack", st->spec);
	for (int64 e = 0; e < n; e++)
		st->data[base + st->g.suboff[e]] = x[e];
	st->written[PG_GETARG_INT64(3)] = true;
	PG_RETURN_POINTER(st);
}

PG_FUNCTION_INFO_V1(se_stack_combine);
Datum
se_stack_combine(PG_FUNCTION_ARGS)
{
	MemoryContext aggctx;
	StackState *s1 = PG_ARGISNULL(0) ? NULL : (StackState *) PG_GETARG_POINTER(0);
	StackState *s2 = PG_ARGISNULL(1) ? NULL : (StackState *) PG_GETARG_POINTER(1);

	if (!AggCheckCallContext(fcinfo, &aggctx))
		elog(ERROR, "se_stack combine called in non-aggregate context");
	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
		s1 = stack_new(aggctx, s2->spec, s2->speclen);
	else
		stack_check_spec(s1, s2->spec, s2->speclen);
	for (int64 p = 0; p < s2->g.positions; p++)
	{
		int64		base;

		if (!s2->written[p])
			continue;
		base = gspec_base(&s2->g, p, "se_stack", s2->spec);
		for (int64 e = 0; e < s2->g.sub_size; e++)
			s1->data[base + s2->g.suboff[e]] = s2->data[base + s2->g.suboff[e]];
		s1->written[p] = true;
	}
	PG_RETURN_POINTER(s1);
}

PG_FUNCTION_INFO_V1(se_stack_final);
Datum
se_stack_final(PG_FUNCTION_ARGS)
{
	StackState *st = (StackState *) PG_GETARG_POINTER(0);
	double	   *od;
	ArrayType  *out = new_f8_array(st->g.size, &od);

	if (st->g.size > 0)
		memcpy(od, st->data, sizeof(double) * (Size) st->g.size);
	PG_RETURN_ARRAYTYPE_P(out);
}

/* Serialized: int32 speclen, spec, written flags (positions bytes), data (size doubles). */
PG_FUNCTION_INFO_V1(se_stack_serial);
Datum
se_stack_serial(PG_FUNCTION_ARGS)
{
	StackState *st = (StackState *) PG_GETARG_POINTER(0);
	Size		np = (Size) st->g.positions, nd = sizeof(double) * (Size) st->g.size;
	Size		n = sizeof(int32) + st->speclen + np + nd;
	bytea	   *r = (bytea *) palloc(VARHDRSZ + n);
	char	   *p = VARDATA(r);
	int32		len = st->speclen;

	SET_VARSIZE(r, VARHDRSZ + n);
	memcpy(p, &len, sizeof(int32));
	p += sizeof(int32);
	memcpy(p, st->spec, len);
	p += len;
	memcpy(p, st->written, np);
	p += np;
	memcpy(p, st->data, nd);
	PG_RETURN_BYTEA_P(r);
}

PG_FUNCTION_INFO_V1(se_stack_deserial);
Datum
se_stack_deserial(PG_FUNCTION_ARGS)
{
	bytea	   *b = PG_GETARG_BYTEA_PP(0);
	const char *p = VARDATA_ANY(b);
	Size		n = VARSIZE_ANY_EXHDR(b);
	int32		len;
	StackState *st;

	if (n < sizeof(int32))
		elog(ERROR, "se_stack_deserial: corrupt state");
	memcpy(&len, p, sizeof(int32));
	if (len < 0 || n < sizeof(int32) + (Size) len)
		elog(ERROR, "se_stack_deserial: corrupt state");
	st = stack_new(CurrentMemoryContext, p + sizeof(int32), len);
	p += sizeof(int32) + len;
	if (n != sizeof(int32) + len + (Size) st->g.positions + sizeof(double) * (Size) st->g.size)
		elog(ERROR, "se_stack_deserial: corrupt state");
	memcpy(st->written, p, st->g.positions);
	memcpy(st->data, p + st->g.positions, sizeof(double) * (Size) st->g.size);
	PG_RETURN_POINTER(st);
}

/* ---------------------------------------------------------------- sparse payloads */

/*
 * A sparse payload packs the non-zeros of a dense payload of `size` elements into one
 * float8[]: their flat offsets (ascending), then their values.
 */
PG_FUNCTION_INFO_V1(se_densify);
Datum
se_densify(PG_FUNCTION_ARGS)
{
	int			n;
	const double *p = f8_data(PG_GETARG_ARRAYTYPE_P(0), &n, "se_densify", "packed");
	int64		size = PG_GETARG_INT64(1);
	int			k = n / 2;
	double	   *out;
	ArrayType  *r;

	if (n % 2)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_densify: a packed payload has an even length, not %d", n)));
	r = new_f8_array(size, &out);
	if (size > 0)
		memset(out, 0, sizeof(double) * (Size) size);
	for (int i = 0; i < k; i++)
	{
		double		at = p[i];

		if (!(at >= 0 && at < (double) size))
			ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("se_densify: offset %g outside a payload of " INT64_FORMAT
								   " elements", at, size)));
		out[(int64) at] = p[k + i];
	}
	PG_RETURN_ARRAYTYPE_P(r);
}

PG_FUNCTION_INFO_V1(se_sparsify);
Datum
se_sparsify(PG_FUNCTION_ARGS)
{
	int			n;
	const double *d = f8_data(PG_GETARG_ARRAYTYPE_P(0), &n, "se_sparsify", "dense");
	int			k = 0;
	double	   *out;
	ArrayType  *r;

	for (int i = 0; i < n; i++)
		k += d[i] != 0.0;
	r = new_f8_array(2 * (int64) k, &out);
	for (int i = 0, j = 0; i < n; i++)
		if (d[i] != 0.0)
		{
			out[j] = (double) i;
			out[k + j] = d[i];
			j++;
		}
	PG_RETURN_ARRAYTYPE_P(r);
}
