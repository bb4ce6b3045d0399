/*
 * sparse_einsum_kernels: dense kernels on float8[] for sparse_einsum.
 *
 * se_kernel1/se_kernel2 interpret a KernelSpec text (sparse_einsum/kernels/spec.py):
 *     OP;AGG;N_OUT;D0,D1,...;[~]SA0,SA1,...[;[~]SB0,SB1,...]
 * and se_value1/se_value2 return the one element of a scalar result. The window function
 * se_kernel2_rows(spec, a, b) OVER () is se_kernel2 row by row, but runs the rows that share
 * one b (a weight matrix joined to every row) as one matrix product, chunk by chunk. A spec that is a
 * matrix product runs as BLAS (../common/se_blas.c: OpenBLAS, one thread per backend);
 * the rest runs the strided loop of ../common/se_kernel.c, shared with the DuckDB extension. An input
 * marked ~ is a packed sparse payload: a product-sum with one runs over its non-zeros
 * (densified instead where the dense input holds inf or NaN), other kernels densify it.
 * se_densify/se_sparsify convert payloads between the two forms.
 * se_take/se_stack move sub-tensors described by a GatherSpec text:
 *     SIZE;DN0,...;SN0,...;DS0,...;SS0,...
 * se_vsum/se_vmax/se_vmin are element-wise aggregates and se_wsum(w, v) the sum of
 * w * v (float8_accum pattern, parallel safe).
 * se_rows/se_raw move whole relations in and out as raw native-endian bytes (bytea), so
 * that loads and fetches cost a memcpy per row instead of a send/recv call per element.
 */
#include "postgres.h"

#include <math.h>
#include <sys/mman.h>

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"
#include "windowapi.h"

#include "se_kernel.h"

PG_MODULE_MAGIC;

#define SE_KERNELS_VERSION "1.4"
#define SE_MAXELEMS ((int64) ((MaxAllocSize - ARR_OVERHEAD_NONULLS(1)) / sizeof(double)))

void		_PG_init(void);

/* sparse_einsum_kernels.cache_broadcast: keep a detoasted copy of an argument repeated row after row */
static bool se_cache_broadcast = true;

/* sparse_einsum_kernels.blas: run matrix products with BLAS (off: the C loops) */
static bool se_blas = true;

/* sparse_einsum_kernels.blas_library (read only): the BLAS of this build */
static char *se_blas_library = NULL;

void
_PG_init(void)
{
	/* a backend is one process among many: BLAS threads would only compete with them */
	se_blas_threads(1);
	/* the library of another version, loaded earlier in this session (ALTER EXTENSION
	 * UPDATE after a call), owns the settings: this one keeps their defaults */
	if (GetConfigOption("sparse_einsum_kernels.blas", true, false) != NULL)
		return;
	DefineCustomBoolVariable("sparse_einsum_kernels.cache_broadcast",
							 "Keep a detoasted copy of a kernel argument that repeats from row to row.",
							 NULL, &se_cache_broadcast, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("sparse_einsum_kernels.blas",
							 "Run kernels that are matrix products with BLAS.",
							 NULL, &se_blas, true, PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomStringVariable("sparse_einsum_kernels.blas_library",
							   "The BLAS the kernels were built with (empty: C loops).",
							   NULL, &se_blas_library, se_blas_name ? se_blas_name : "",
							   PGC_INTERNAL, GUC_NOT_IN_SAMPLE | GUC_DISALLOW_IN_FILE,
							   NULL, NULL, NULL);
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

/*
 * n bytes from `mcxt`. An allocation of many megabytes is asked for transparent huge pages
 * (where the system gives them on request) before its first write: in 4 kB pages every
 * first write is a page fault (17% of the samples of a 51 MB SpMM statement).
 */
static void *
alloc_pages(MemoryContext mcxt, Size n)
{
	void	   *p = MemoryContextAlloc(mcxt, n);
#ifdef MADV_HUGEPAGE
	const uintptr_t huge = (uintptr_t) 2 << 20;
	uintptr_t	lo = ((uintptr_t) p + huge - 1) & ~(huge - 1),
				hi = ((uintptr_t) p + n) & ~(huge - 1);

	if (n >= 4 * huge && hi > lo)
		(void) madvise((void *) lo, hi - lo, MADV_HUGEPAGE);
#endif
	return p;
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
	r = (ArrayType *) alloc_pages(CurrentMemoryContext, nbytes);
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
	int			nonfinite;		/* the inf and NaN arr holds (se_nonfinite): -1 not known yet */
} ArgCache;

static ArrayType *
get_array_arg(Datum arg, MemoryContext mcxt, ArgCache *ac)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(arg);
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
	ac->arr = (ArrayType *) alloc_pages(mcxt, VARSIZE(tmp));
	memcpy(ac->arr, tmp, VARSIZE(tmp));
	if (!ext)
	{
		ac->raw = MemoryContextAlloc(mcxt, ac->len);
		memcpy(ac->raw, v, ac->len);
	}
	ac->state = 2;
	ac->nonfinite = -1;
	pfree(tmp);
	return ac->arr;
}

/* ---------------------------------------------------------------- kernels */

typedef struct KernelCache
{
	char	   *spec;			/* NUL-terminated spec text */
	int			speclen;
	se_kspec	ks;
	bool		is_gemm;
	se_gemm		gemm;
	bool		is_sparse;		/* driven by the non-zeros of its packed input */
	se_sparse	sparse;
	ArgCache	arg[2];
} KernelCache;

/* The parsed spec, cached in *slot (allocated in mcxt). */
static KernelCache *
kernel_cache(KernelCache **slot, MemoryContext mcxt, text *spec)
{
	KernelCache *kc = *slot;
	const char *s = VARDATA_ANY(spec);
	int			len = VARSIZE_ANY_EXHDR(spec);
	se_kspec	ks;
	char	   *cs;
	char		err[SE_ERRLEN];

	if (kc && kc->speclen == len && memcmp(kc->spec, s, len) == 0)
		return kc;
	cs = text_to_cstring(spec);
	if (!se_parse_kspec(cs, strlen(cs), &ks, err))
		SPEC_ERROR("kernel", cs, "%s", err);
	if (ks.out_size > SE_MAXELEMS)
		SPEC_ERROR("kernel", cs, "loop space too large");
	if (kc == NULL)
	{
		kc = MemoryContextAllocZero(mcxt, sizeof(KernelCache));
		*slot = kc;
	}
	else
		pfree(kc->spec);
	kc->spec = MemoryContextStrdup(mcxt, cs);
	kc->speclen = len;
	kc->ks = ks;
	kc->is_gemm = se_kspec_gemm(&kc->ks, &kc->gemm);
	kc->is_sparse = se_kspec_sparse(&kc->ks, &kc->sparse);
	pfree(cs);
	return kc;
}

/* The inf and NaN that x (the array arr of argument cache ac) holds (se_nonfinite);
 * remembered for a cached broadcast copy. */
static int
nonfinite(ArgCache *ac, const ArrayType *arr, const double *x, int n)
{
	if (ac->state != 2 || ac->arr != arr)
		return se_nonfinite(x, n);
	if (ac->nonfinite < 0)
		ac->nonfinite = se_nonfinite(x, n);
	return ac->nonfinite;
}

/* The dense form of packed input k (n doubles) of fname's spec. */
static const double *
unpack_input(const KernelCache *kc, int k, const double *packed, int n, const char *fname)
{
	double	   *dense = palloc(sizeof(double) * Max(kc->ks.need[k], 1));
	char		err[SE_ERRLEN];

	if (kc->ks.need[k] > 0 && !se_unpack(packed, n, kc->ks.need[k], kc->ks.fill[k], dense, err))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s: input %s of spec \"%s\": %s", fname, k ? "b" : "a", kc->spec, err)));
	return dense;
}

/* The kernel of kc's spec on the arrays args (arity of them, not NULL), into *out_scalar
 * or a new *out_array; mcxt holds the argument caches. */
static void
kernel_run(KernelCache *kc, MemoryContext mcxt, const Datum *args, int arity,
		   const char *fname, double *out_scalar, ArrayType **out_array)
{
	const se_kspec *ks = &kc->ks;
	const double *in[2] = {NULL, NULL};
	ArrayType  *arr[2] = {NULL, NULL};
	int			len[2] = {0, 0};
	double	   *od = out_scalar;

	if (ks->arity != arity)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s: spec \"%s\" is for %d input(s), %s takes %d",
							   fname, kc->spec, ks->arity, fname, arity)));
	if (out_scalar && ks->out_size != 1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("%s: spec \"%s\" has " INT64_FORMAT " outputs; %s returns one",
							   fname, kc->spec, ks->out_size, fname)));
	for (int k = 0; k < arity; k++)
	{
		arr[k] = get_array_arg(args[k], mcxt, &kc->arg[k]);
		in[k] = f8_data(arr[k], &len[k], fname, k ? "b" : "a");
		if (!ks->packed[k] && len[k] < ks->need[k])
			ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("%s: input %s has %d elements but spec \"%s\" reads " INT64_FORMAT,
								   fname, k ? "b" : "a", len[k], kc->spec, ks->need[k])));
	}
	if (out_array)
		*out_array = new_f8_array(ks->out_size, &od);
	if (kc->is_sparse)
	{
		int			s = kc->sparse.s;
		char		err[SE_ERRLEN];

		if (se_sparse_skips(&kc->sparse, nonfinite(&kc->arg[1 - s], arr[1 - s], in[1 - s], len[1 - s])))
		{
			if (!se_sparse_run_threaded(&kc->sparse, in[s], len[s], in[1 - s], od, err))
				ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
								errmsg("%s: input %s of spec \"%s\": %s", fname, s ? "b" : "a",
									   kc->spec, err)));
			return;
		}
	}
	for (int k = 0; k < arity; k++)
		if (ks->packed[k])
			in[k] = unpack_input(kc, k, in[k], len[k], fname);
	if (!kc->is_gemm)
		se_run_kernel(ks, in[0], in[1], od);
	else
		se_gemm_threaded(&kc->gemm, in[0], in[1], od, se_blas);
}

/* kernel_run on the arguments of a call se_kernelN/se_valueN(spec, a[, b]). */
static void
kernel_call(FunctionCallInfo fcinfo, int arity, const char *fname, double *out_scalar,
			ArrayType **out_array)
{
	KernelCache *kc = kernel_cache((KernelCache **) &fcinfo->flinfo->fn_extra,
								   fcinfo->flinfo->fn_mcxt, PG_GETARG_TEXT_PP(0));
	Datum		args[2] = {PG_GETARG_DATUM(1), arity > 1 ? PG_GETARG_DATUM(2) : (Datum) 0};

	kernel_run(kc, fcinfo->flinfo->fn_mcxt, args, arity, fname, out_scalar, out_array);
}

#define KERNEL_FUNCS(arity) \
PG_FUNCTION_INFO_V1(se_kernel##arity); \
Datum \
se_kernel##arity(PG_FUNCTION_ARGS) \
{ \
	ArrayType  *out; \
	kernel_call(fcinfo, arity, "se_kernel" #arity, NULL, &out); \
	PG_RETURN_ARRAYTYPE_P(out); \
} \
PG_FUNCTION_INFO_V1(se_value##arity); \
Datum \
se_value##arity(PG_FUNCTION_ARGS) \
{ \
	double		out; \
	kernel_call(fcinfo, arity, "se_value" #arity, &out, NULL); \
	PG_RETURN_FLOAT8(out); \
}
KERNEL_FUNCS(1)
KERNEL_FUNCS(2)

/* ---------------------------------------------------------------- batched rows */

/* rows of a chunk: at most SE_CHUNK_ROWS and SE_CHUNK_BYTES of stacked inputs a */
#define SE_CHUNK_ROWS 1024
#define SE_CHUNK_BYTES ((Size) 8 << 20)

/* se_kernel2_rows state of the whole call: the spec, and the chunk's inputs and results */
typedef struct RowsCache
{
	KernelCache *kc;
	int64		capacity;		/* rows the buffers hold */
	double	   *a;				/* the chunk's inputs a, m x k each, row-major */
	double	   *c;				/* their results, m x n each, row-major */
	bool	   *isnull;			/* rows whose a or b is NULL */
} RowsCache;

/* ... and of the window partition: which rows the results are of */
typedef struct RowsChunk
{
	int64		start;			/* partition position of the chunk's first row */
	int64		rows;			/* 0: none computed yet */
} RowsChunk;

/* Whether two datums of b are the same value: one toast pointer, or equal inline bytes. */
static bool
same_datum(Datum x, Datum y)
{
	struct varlena *u = (struct varlena *) DatumGetPointer(x);
	struct varlena *v = (struct varlena *) DatumGetPointer(y);

	if (u == v)
		return true;
	if (VARATT_IS_EXTERNAL_ONDISK(u) && VARATT_IS_EXTERNAL_ONDISK(v))
	{
		struct varatt_external eu, ev;

		VARATT_EXTERNAL_GET_POINTER(eu, u);
		VARATT_EXTERNAL_GET_POINTER(ev, v);
		return eu.va_valueid == ev.va_valueid && eu.va_toastrelid == ev.va_toastrelid;
	}
	return !VARATT_IS_EXTERNAL(u) && !VARATT_IS_EXTERNAL(v) &&
		VARSIZE_ANY(u) == VARSIZE_ANY(v) && memcmp(u, v, VARSIZE_ANY(u)) == 0;
}

/*
 * Compute the chunk of rows from the current one on: the following rows with the same
 * spec and the same b (up to the chunk limits), their inputs a stacked into one matrix
 * and multiplied by b in one product.
 */
static void
rows_chunk(FunctionCallInfo fcinfo, WindowObject win, RowsCache *rc, RowsChunk *ch)
{
	MemoryContext mcxt = fcinfo->flinfo->fn_mcxt;
	KernelCache *kc = rc->kc;
	const se_gemm *g = &kc->gemm;
	int64		la = g->m * g->k, lc = g->m * g->n;
	int64		limit = Max(1, Min(SE_CHUNK_ROWS, (int64) (SE_CHUNK_BYTES / sizeof(double)) / Max(la, 1)));
	bool		isnull, isout;
	Datum		b0 = WinGetFuncArgInPartition(win, 2, 0, WINDOW_SEEK_CURRENT, true, &isnull, &isout);
	bool		bnull = isnull;
	const double *b = NULL;
	int64		rows = 0;
	se_gemm		big;

	if (!bnull)
	{
		ArrayType  *arr;
		int			n;

		b0 = datumCopy(b0, false, -1);	/* the fetches of the other rows reuse its slot */
		arr = get_array_arg(b0, mcxt, &kc->arg[1]);
		b = f8_data(arr, &n, "se_kernel2_rows", "b");
		if (n < kc->ks.need[1])
			ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("se_kernel2_rows: input b has %d elements but spec \"%s\" reads " INT64_FORMAT,
								   n, kc->spec, kc->ks.need[1])));
	}
	if (rc->capacity < limit)
	{
		if (rc->a)
		{
			pfree(rc->a);
			pfree(rc->c);
			pfree(rc->isnull);
		}
		rc->a = MemoryContextAlloc(mcxt, sizeof(double) * Max(limit * la, 1));
		rc->c = MemoryContextAlloc(mcxt, sizeof(double) * Max(limit * lc, 1));
		rc->isnull = MemoryContextAlloc(mcxt, limit);
		rc->capacity = limit;
	}
	for (; rows < limit; rows++)
	{
		Datum		d;
		const double *x;
		double	   *row = rc->a + rows * la;
		int			n;

		if (rows > 0)
		{
			text	   *spec;

			d = WinGetFuncArgInPartition(win, 0, (int) rows, WINDOW_SEEK_CURRENT, false, &isnull, &isout);
			if (isout)
				break;
			spec = DatumGetTextPP(d);
			if (isnull || VARSIZE_ANY_EXHDR(spec) != kc->speclen ||
				memcmp(VARDATA_ANY(spec), kc->spec, kc->speclen) != 0)
				break;
			d = WinGetFuncArgInPartition(win, 2, (int) rows, WINDOW_SEEK_CURRENT, false, &isnull, &isout);
			if (isnull != bnull || (!bnull && !same_datum(d, b0)))
				break;
		}
		d = WinGetFuncArgInPartition(win, 1, (int) rows, WINDOW_SEEK_CURRENT, false, &isnull, &isout);
		rc->isnull[rows] = isnull || bnull;
		if (rc->isnull[rows])
		{
			memset(row, 0, sizeof(double) * la);
			continue;
		}
		x = f8_data(DatumGetArrayTypeP(d), &n, "se_kernel2_rows", "a");
		if (n < kc->ks.need[0])
			ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
							errmsg("se_kernel2_rows: input a has %d elements but spec \"%s\" reads " INT64_FORMAT,
								   n, kc->spec, kc->ks.need[0])));
		if (g->m == 1 && g->a_k == 1)
			memcpy(row, x, sizeof(double) * la);
		else
			for (int64 i = 0; i < g->m; i++)
				for (int64 k = 0; k < g->k; k++)
					row[i * g->k + k] = x[i * g->a_m + k * g->a_k];
		CHECK_FOR_INTERRUPTS();
	}
	ch->rows = rows;
	if (bnull)
		return;
	/* the rows as one product: (rows m) x k times b, into (rows m) x n */
	big = (se_gemm) {.batch = 1, .m = rows * g->m, .n = g->n, .k = g->k, .a_m = g->k, .a_k = 1,
		.b_k = g->b_k, .b_n = g->b_n, .c_m = g->n, .c_n = 1};
	se_gemm_threaded(&big, rc->a, b, rc->c, se_blas);
}

/*
 * se_kernel2_rows(spec text, a float8[], b float8[]) OVER (): se_kernel2(spec, a, b) of
 * each row. Where the spec is one matrix product on dense payloads, rows that share b
 * are computed chunk by chunk as one product (BLAS reads b once a chunk, not once a row);
 * other specs run row by row.
 */
PG_FUNCTION_INFO_V1(se_kernel2_rows);
Datum
se_kernel2_rows(PG_FUNCTION_ARGS)
{
	WindowObject win = PG_WINDOW_OBJECT();
	RowsCache  *rc = (RowsCache *) fcinfo->flinfo->fn_extra;
	RowsChunk  *ch = (RowsChunk *) WinGetPartitionLocalMemory(win, sizeof(RowsChunk));
	int64		pos = WinGetCurrentPosition(win);
	bool		isnull;
	Datum		spec = WinGetFuncArgCurrent(win, 0, &isnull);
	const se_gemm *g;
	int64		r;
	double	   *od;
	ArrayType  *out;

	if (isnull)
		PG_RETURN_NULL();
	if (rc == NULL)
		rc = fcinfo->flinfo->fn_extra = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
															   sizeof(RowsCache));
	kernel_cache(&rc->kc, fcinfo->flinfo->fn_mcxt, DatumGetTextPP(spec));
	if (rc->kc->ks.arity != 2)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_kernel2_rows: spec \"%s\" is for %d input(s), se_kernel2_rows takes 2",
							   rc->kc->spec, rc->kc->ks.arity)));
	if (!rc->kc->is_gemm || rc->kc->gemm.batch != 1 || rc->kc->ks.packed[0] || rc->kc->ks.packed[1])
	{
		Datum		args[2];

		args[0] = WinGetFuncArgCurrent(win, 1, &isnull);
		if (isnull)
			PG_RETURN_NULL();
		args[1] = WinGetFuncArgCurrent(win, 2, &isnull);
		if (isnull)
			PG_RETURN_NULL();
		kernel_run(rc->kc, fcinfo->flinfo->fn_mcxt, args, 2, "se_kernel2_rows", NULL, &out);
		PG_RETURN_ARRAYTYPE_P(out);
	}
	if (ch->rows == 0 || pos < ch->start || pos >= ch->start + ch->rows)
	{
		ch->start = pos;
		rows_chunk(fcinfo, win, rc, ch);
	}
	r = pos - ch->start;
	if (rc->isnull[r])
		PG_RETURN_NULL();
	g = &rc->kc->gemm;
	out = new_f8_array(rc->kc->ks.out_size, &od);
	if (od && (g->m == 1 || g->c_m == g->n) && (g->n == 1 || g->c_n == 1))
		memcpy(od, rc->c + r * g->m * g->n, sizeof(double) * g->m * g->n);
	else if (od)
		for (int64 i = 0; i < g->m; i++)
			for (int64 j = 0; j < g->n; j++)
				od[i * g->c_m + j * g->c_n] = rc->c[(r * g->m + i) * g->n + j];
	PG_RETURN_ARRAYTYPE_P(out);
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

/* kinds are the aggregates of se_kernel.h (SE_AGG_SUM, _MAX, _MIN), then se_wsum */
#define V_WSUM 3
static const char *const vagg_names[] = {"se_vsum", "se_vmax", "se_vmin", "se_wsum"};

#define vagg_update(acc, x, n, kind) se_vagg_update((kind) == V_WSUM ? SE_AGG_SUM : (kind), acc, x, n)

/* A state holding x, or w * x when w is given. */
static VState *
vstate_new(MemoryContext ctx, const double *x, int n, const double *w)
{
	VState	   *st = MemoryContextAlloc(ctx, offsetof(VState, v) + sizeof(double) * (Size) n);

	st->len = n;
	if (w)
		for (int i = 0; i < n; i++)
			st->v[i] = *w * x[i];
	else
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

/* Transition: column 1 is the array (se_wsum: column 1 the weight, 2 the array). */
static Datum
vagg_trans(FunctionCallInfo fcinfo, int kind)
{
	MemoryContext aggctx;
	VState	   *st = PG_ARGISNULL(0) ? NULL : (VState *) PG_GETARG_POINTER(0);
	int			col = kind == V_WSUM ? 2 : 1;
	double		w;
	const double *x;
	int			n;

	if (!AggCheckCallContext(fcinfo, &aggctx))
		elog(ERROR, "%s called in non-aggregate context", vagg_names[kind]);
	if (PG_ARGISNULL(col) || (kind == V_WSUM && PG_ARGISNULL(1)))
	{
		if (st == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(st);
	}
	x = f8_data(PG_GETARG_ARRAYTYPE_P(col), &n, vagg_names[kind], "the input");
	w = kind == V_WSUM ? PG_GETARG_FLOAT8(1) : 1.0;
	if (st == NULL)
		PG_RETURN_POINTER(vstate_new(aggctx, x, n, kind == V_WSUM ? &w : NULL));
	vcheck_len(kind, st->len, n);
	if (kind == V_WSUM)
		se_axpy(n, w, x, st->v);
	else
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
		PG_RETURN_POINTER(vstate_new(aggctx, s2->v, s2->len, NULL));
	vcheck_len(kind, s1->len, s2->len);
	vagg_update(s1->v, s2->v, s1->len, kind);
	PG_RETURN_POINTER(s1);
}

#define VAGG_FUNCS(name, kind) \
PG_FUNCTION_INFO_V1(name##_trans); \
Datum name##_trans(PG_FUNCTION_ARGS) { return vagg_trans(fcinfo, kind); } \
PG_FUNCTION_INFO_V1(name##_combine); \
Datum name##_combine(PG_FUNCTION_ARGS) { return vagg_combine(fcinfo, kind); }
VAGG_FUNCS(se_vsum, SE_AGG_SUM)
VAGG_FUNCS(se_vmax, SE_AGG_MAX)
VAGG_FUNCS(se_vmin, SE_AGG_MIN)
VAGG_FUNCS(se_wsum, V_WSUM)

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
	se_gspec	s;
	int64	   *suboff;			/* flat offset of each sub-tensor element */
} GSpec;

/* Parse a gather spec; suboff is allocated in the current memory context. */
static void
parse_gspec(const char *spec, GSpec *g)
{
	char		err[SE_ERRLEN];

	if (!se_parse_gspec(spec, strlen(spec), &g->s, err))
		SPEC_ERROR("gather", spec, "%s", err);
	if (g->s.size > SE_MAXELEMS || g->s.sub_size > SE_MAXELEMS || g->s.positions > MaxAllocSize)
		SPEC_ERROR("gather", spec, "sizes too large");
	g->suboff = palloc(sizeof(int64) * Max(g->s.sub_size, 1));
	se_gspec_suboffsets(&g->s, g->suboff);
}

/* Flat offset of the sub-tensor at position pos (row-major over NEW_DIMS). */
static int64
gspec_base(const GSpec *g, int64 pos, const char *fname, const char *spec)
{
	if (pos < 0 || pos >= g->s.positions)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("%s: position " INT64_FORMAT " out of range 0.." INT64_FORMAT " of spec \"%s\"",
							   fname, pos, g->s.positions - 1, spec)));
	return se_gspec_base(&g->s, pos);
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
	if (n != gc->g.s.size)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("se_take: a has %d elements but spec \"%s\" has SIZE " INT64_FORMAT,
							   n, gc->spec, gc->g.s.size)));
	base = gspec_base(&gc->g, PG_GETARG_INT64(2), "se_take", gc->spec);
	out = new_f8_array(gc->g.s.sub_size, &od);
	for (int64 e = 0; e < gc->g.s.sub_size; e++)
	{
		od[e] = x[base + gc->g.suboff[e]];
		nonzero |= se_differs(od[e], gc->g.s.fill);
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
	Size		nbytes;

	st->spec = pnstrdup(spec, speclen);
	st->speclen = speclen;
	parse_gspec(st->spec, &st->g);
	st->written = palloc0(Max(st->g.s.positions, 1));
	nbytes = sizeof(double) * Max(st->g.s.size, 1);
	st->data = alloc_pages(ctx, nbytes);
	memset(st->data, 0, nbytes);
	for (int64 e = 0; st->g.s.fill != 0.0 && e < st->g.s.size; e++)
		st->data[e] = st->g.s.fill;
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
	if (n != st->g.s.sub_size)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("se_stack: val has %d elements but spec \"%s\" has sub-tensors of " INT64_FORMAT,
							   n, st->spec, st->g.s.sub_size)));
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
	for (int64 p = 0; p < s2->g.s.positions; p++)
	{
		int64		base;

		if (!s2->written[p])
			continue;
		base = gspec_base(&s2->g, p, "se_stack", s2->spec);
		for (int64 e = 0; e < s2->g.s.sub_size; e++)
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
	ArrayType  *out = new_f8_array(st->g.s.size, &od);

	if (st->g.s.size > 0)
		memcpy(od, st->data, sizeof(double) * (Size) st->g.s.size);
	PG_RETURN_ARRAYTYPE_P(out);
}

/* Serialized: int32 speclen, spec, written flags (positions bytes), data (size doubles). */
PG_FUNCTION_INFO_V1(se_stack_serial);
Datum
se_stack_serial(PG_FUNCTION_ARGS)
{
	StackState *st = (StackState *) PG_GETARG_POINTER(0);
	Size		np = (Size) st->g.s.positions, nd = sizeof(double) * (Size) st->g.s.size;
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
	if (n != sizeof(int32) + len + (Size) st->g.s.positions + sizeof(double) * (Size) st->g.s.size)
		elog(ERROR, "se_stack_deserial: corrupt state");
	memcpy(st->written, p, st->g.s.positions);
	memcpy(st->data, p + st->g.s.positions, sizeof(double) * (Size) st->g.s.size);
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
	double	   *out;
	ArrayType  *r = new_f8_array(size, &out);
	char		err[SE_ERRLEN];

	if (!se_unpack(p, n, size, 0.0, out, err))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("se_densify: %s", err)));
	PG_RETURN_ARRAYTYPE_P(r);
}

PG_FUNCTION_INFO_V1(se_sparsify);
Datum
se_sparsify(PG_FUNCTION_ARGS)
{
	int			n;
	const double *d = f8_data(PG_GETARG_ARRAYTYPE_P(0), &n, "se_sparsify", "dense");
	int64		nnz = se_count_nonzero(d, n);
	double	   *out;
	ArrayType  *r = new_f8_array(2 * nnz, &out);

	se_pack(d, n, nnz, out);
	PG_RETURN_ARRAYTYPE_P(r);
}

/* ---------------------------------------------------------------- raw transfer */

/*
 * se_rows(keys bytea, vals bytea, bounds bytea) RETURNS SETOF record, called with a
 * column definition list (k1 bigint, ..., kK bigint, val float8[]): row r has the keys
 * keys[j * n + r] (K columns of n int64 each, one after the other) and the payload
 * vals[bounds[r] .. bounds[r + 1]) (doubles); bounds holds n + 1 int64 offsets from 0
 * to the number of values. All native-endian.
 */
PG_FUNCTION_INFO_V1(se_rows);
Datum
se_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bytea	   *kb = PG_GETARG_BYTEA_PP(0);
	bytea	   *vb = PG_GETARG_BYTEA_PP(1);
	bytea	   *bb = PG_GETARG_BYTEA_PP(2);
	Size		klen = VARSIZE_ANY_EXHDR(kb), vlen = VARSIZE_ANY_EXHDR(vb), blen = VARSIZE_ANY_EXHDR(bb);
	TupleDesc	desc;
	Tuplestorestate *store;
	MemoryContext old;
	int			nkeys;
	int64		n;
	const char *keys, *vals;
	int64	   *bounds;
	Datum	   *values;
	bool	   *nulls;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize) || rsinfo->expectedDesc == NULL)
		ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						errmsg("se_rows must be called in FROM with a column definition list")));
	desc = rsinfo->expectedDesc;
	nkeys = desc->natts - 1;
	for (int j = 0; j < desc->natts; j++)
		if (TupleDescAttr(desc, j)->atttypid != (j < nkeys ? INT8OID : FLOAT8ARRAYOID))
			ereport(ERROR, (errcode(ERRCODE_DATATYPE_MISMATCH),
							errmsg("se_rows: columns must be bigint keys and then one float8[]")));
	if (blen % sizeof(int64) != 0 || blen < sizeof(int64) || vlen % sizeof(double) != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_rows: bounds and values must be whole int64 and float8 arrays")));
	n = blen / sizeof(int64) - 1;
	if (klen != sizeof(int64) * (Size) n * nkeys)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_rows: %zu key bytes for " INT64_FORMAT " rows of %d keys", klen, n, nkeys)));
	/* bytea data need not be aligned for int64 and double: read through memcpy */
	keys = (const char *) VARDATA_ANY(kb);
	vals = (const char *) VARDATA_ANY(vb);
	bounds = palloc(blen);
	memcpy(bounds, VARDATA_ANY(bb), blen);
	if (bounds[0] != 0 || bounds[n] != (int64) (vlen / sizeof(double)))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("se_rows: bounds must run from 0 to the number of values")));
	for (int64 r = 0; r < n; r++)
		if (bounds[r + 1] < bounds[r])
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("se_rows: bounds must not decrease")));

	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	store = tuplestore_begin_heap(true, false, work_mem);
	desc = CreateTupleDescCopy(desc);
	MemoryContextSwitchTo(old);
	values = palloc(sizeof(Datum) * desc->natts);
	nulls = palloc0(sizeof(bool) * desc->natts);
	for (int64 r = 0; r < n; r++)
	{
		double	   *od;
		ArrayType  *arr = new_f8_array(bounds[r + 1] - bounds[r], &od);

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nkeys; j++)
		{
			int64		k;

			memcpy(&k, keys + sizeof(int64) * (j * n + r), sizeof(int64));
			values[j] = Int64GetDatum(k);
		}
		if (od)
			memcpy(od, vals + sizeof(double) * bounds[r],
				   sizeof(double) * (Size) (bounds[r + 1] - bounds[r]));
		values[nkeys] = PointerGetDatum(arr);
		tuplestore_putvalues(store, desc, values, nulls);
		pfree(arr);
	}
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = desc;
	return (Datum) 0;
}

/* se_raw(a float8[], width int): the elements of a as native-endian bytes; a must have
 * exactly width elements. */
PG_FUNCTION_INFO_V1(se_raw);
Datum
se_raw(PG_FUNCTION_ARGS)
{
	int			n;
	const double *x = f8_data(PG_GETARG_ARRAYTYPE_P(0), &n, "se_raw", "the array");
	int32		width = PG_GETARG_INT32(1);
	Size		nbytes = sizeof(double) * (Size) n;
	bytea	   *r;

	if (n != width)
		ereport(ERROR, (errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
						errmsg("se_raw: an array of %d elements where %d were expected", n, width)));
	r = (bytea *) alloc_pages(CurrentMemoryContext, VARHDRSZ + nbytes);
	SET_VARSIZE(r, VARHDRSZ + nbytes);
	memcpy(VARDATA(r), x, nbytes);
	PG_RETURN_BYTEA_P(r);
}
