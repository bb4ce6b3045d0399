/*
 * se_kernel: the kernel and gather specs of sparse_einsum/kernels/spec.py and the loops
 * that run them, shared by the PostgreSQL and the DuckDB extension.
 *
 * Engine-neutral: nothing here allocates, and a parse error is returned as text for the
 * engine to raise through its own error API.
 *
 *   kernel spec  OP;AGG;N_OUT;D0,D1,...;[~]SA0,SA1,...[;[~]SB0,SB1,...]
 *   gather spec  SIZE;DN0,...;SN0,...;DS0,...;SS0,...
 *   fused spec   fused;N;L0,L1,...;TOKEN,TOKEN,...
 *
 * A stride list marked ~ is an input given as a packed sparse payload: the flat offsets
 * of its stored entries within the dense payload the strides describe (ascending), then
 * their values, in one array of 2 * nnz doubles. The entries it does not store hold 0, or
 * FILL where the mark is ~FILL: (the default of its tensor: inf in a min-plus product).
 * A gather spec may end in ;FILL: the value a stack leaves where nothing lands, and the
 * value of the pieces a take leaves out (0 when omitted).
 */
#ifndef SE_KERNEL_H
#define SE_KERNEL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SE_MAXDIMS 32
#define SE_ERRLEN 256

/* Hot loops get an AVX2/FMA clone next to the portable one; the loader picks by CPU. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define SE_VECTORIZED __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SE_VECTORIZED
#endif

enum
{
	SE_AGG_SUM, SE_AGG_MAX, SE_AGG_MIN
};

/* max/min propagate NaN like NumPy */
#define SE_STEP_MAX(acc, v) do { (acc) = ((v) > (acc)) | ((v) != (v)) ? (v) : (acc); } while (0)
#define SE_STEP_MIN(acc, v) do { (acc) = ((v) < (acc)) | ((v) != (v)) ? (v) : (acc); } while (0)

typedef struct se_kspec
{
	int			op, agg, n_out, ndims, arity;
	double		c;
	int64_t		dims[SE_MAXDIMS];
	int64_t		st[2][SE_MAXDIMS];	/* strides per input (zeros for a missing b) */
	int64_t		out_size, red_size;
	int64_t		need[2];		/* minimal input lengths (of the dense form, if packed) */
	bool		packed[2];		/* input k is a packed sparse payload */
	double		fill[2];		/* the value of a packed input's absent entries */
} se_kspec;

/*
 * A kernel driven by the stored entries of its one packed input s, whose absent entries
 * give the aggregate's identity whatever the dense input holds: a sum of products (absent
 * 0), a min of sums (absent inf) or a max of sums (absent -inf). Each entry's loop indices
 * are decoded from its offset (dims of s by decreasing stride), then the loop dims s does
 * not have (`free`) run against the dense input d.
 */
typedef struct se_sparse
{
	int			s;				/* the packed input; the dense one is 1 - s */
	int			agg;			/* SE_AGG_SUM over products, SE_AGG_MIN/MAX over sums */
	double		init;			/* the aggregate's identity: the result where s is absent */
	int			nk;				/* dims of s (size > 1), by decreasing stride */
	int64_t		k_dim[SE_MAXDIMS], k_st[SE_MAXDIMS], k_dst[SE_MAXDIMS], k_ost[SE_MAXDIMS];
	int			nf;				/* the other dims (size > 1), in loop order */
	int64_t		f_dim[SE_MAXDIMS], f_dst[SE_MAXDIMS], f_ost[SE_MAXDIMS];
	int64_t		size;			/* elements of the dense form of s */
	int64_t		dense_size;		/* elements of the dense input */
	int64_t		out_size;
	bool		empty;			/* some loop dim is 0: the result is all zeros */
} se_sparse;

/*
 * A kernel that is one (batched) matrix product: out[b,m,n] = sum_k a[b,m,k] * b[b,k,n],
 * each of b, m, n, k one strided axis per operand (strides 0 where a size is 1).
 */
typedef struct se_gemm
{
	int64_t		batch, m, n, k;
	int64_t		a_b, a_m, a_k;
	int64_t		b_b, b_k, b_n;
	int64_t		c_b, c_m, c_n;
} se_gemm;

typedef struct se_gspec
{
	int64_t		size, positions, sub_size;
	double		fill;			/* the big tensor's default */
	int			nn, ns;
	int64_t		dn[SE_MAXDIMS], sn[SE_MAXDIMS], ds[SE_MAXDIMS], ss[SE_MAXDIMS];
} se_gspec;

/*
 * A chain of element-wise operations over arrays of N elements, evaluated in one pass
 * (sparse_einsum/kernels/spec.py, FusedSpec). Leaf k holds L_k elements: N, or 1 for a
 * scalar broadcast to every element. The tokens are postfix: $k pushes leaf k, OP[:C]@R
 * applies an operation to the values on top (two for a binary one) and says when its
 * result is present: R is j (every operand present), f (always) or u followed by the
 * operand positions any one of which decides (u01, u0, u1). An absent leaf (a NULL
 * argument) or result is all zeros, as a missing one-tuple relation is.
 */
#define SE_FUSED_MAX 64

typedef struct se_fspec
{
	int64_t		n;
	int			nleaves, ntok, depth;
	int64_t		leaf_size[SE_MAXDIMS];
	int			leaf[SE_FUSED_MAX];	/* the leaf a token pushes, -1 for an operation */
	int			op[SE_FUSED_MAX];
	double		c[SE_FUSED_MAX];
	char		rule[SE_FUSED_MAX];	/* 'j', 'f' or 'u' */
	unsigned char decides[SE_FUSED_MAX];	/* under 'u': bit k for operand k */
} se_fspec;

bool		se_parse_fspec(const char *spec, size_t len, se_fspec *fs, char *err);

/* out = the chain over `leaves` (NULL: absent); false, out untouched, when the result is
 * absent. */
bool		se_run_fused(const se_fspec *fs, const double *const *leaves, double *out);

/* Parse a kernel spec of `len` bytes; false with a message in err on a bad spec. */
bool		se_parse_kspec(const char *spec, size_t len, se_kspec *ks, char *err);

/* out[o] = AGG_r OP(a[..], b[..]) for one tuple (b NULL for a unary spec). */
void		se_run_kernel(const se_kspec *ks, const double *a, const double *b, double *out);

/* Whether the kernel is a product of its two inputs, summed. */
bool		se_kspec_product_sum(const se_kspec *ks);

/* Whether the kernel is a matrix product; fills g. */
bool		se_kspec_gemm(const se_kspec *ks, se_gemm *g);

/* A matrix product without BLAS: axpy over contiguous rows of b where it can. */
void		se_gemm_run(const se_gemm *g, const double *a, const double *b, double *c);

/* se_blas.c: the BLAS this build links ("OpenBLAS"; NULL when built without SE_BLAS) */
extern const char *const se_blas_name;

/* A matrix product with BLAS; false (c untouched or partly written) when the build has no
 * BLAS or the strides do not suit it: run se_gemm_run then. */
bool		se_gemm_blas(const se_gemm *g, const double *a, const double *b, double *c);

/* c[i,j] += sum_r at[r,i] bt[r,j] (at: k x m, bt: k x n, both row-major; c strided), with
 * BLAS where the build has it and c's layout suits it, else C loops. */
void		se_gemm_tn_add(int64_t m, int64_t n, int64_t k, const double *at, const double *bt,
						   double *c, int64_t c_m, int64_t c_n);

/* ---------------------------------------------------------------- se_threads.c */

/* A matrix product with BLAS (where built with it, `blas` and the layout suits it) or the
 * C loops; a big one cut into blocks of rows or columns computed by one thread per core. */
void		se_gemm_threaded(const se_gemm *g, const double *a, const double *b, double *c,
							 bool blas);

/* se_sparse_run, a big product cut into ranges of the packed input's rows (where they
 * write disjoint parts of out: se_sparse_rows_disjoint) computed by one thread per core. */
bool		se_sparse_run_threaded(const se_sparse *sk, const double *packed, int64_t n,
								   const double *dense, double *out, char *err);

/* The threads BLAS may use per call (process-wide; nothing without BLAS). */
void		se_blas_threads(int n);

/* y[0..n) += x * w[0..n) */
void		se_axpy(int64_t n, double x, const double *w, double *y);

/* Element-wise acc[i] = AGG(acc[i], x[i]). */
void		se_vagg_update(int agg, double *acc, const double *x, int64_t n);

/* Parse a gather spec; false with a message in err. */
bool		se_parse_gspec(const char *spec, size_t len, se_gspec *g, char *err);

/* Flat offset of each element of a sub-tensor (sub_size entries). */
void		se_gspec_suboffsets(const se_gspec *g, int64_t *out);

/* Flat offset of the sub-tensor at position pos (0 <= pos < positions). */
int64_t		se_gspec_base(const se_gspec *g, int64_t pos);

/* ---------------------------------------------------------------- packed sparse payloads */

/* Whether the kernel runs driven by its one packed input (mul and sum over absent 0s, add
 * and min over absent infs, add and max over absent -infs; a packed input whose offsets
 * decode uniquely); fills sk. The dense input must also leave the absent entries' terms
 * what they are (se_sparse_skips): 0 * inf and inf + -inf are NaN, so a dense input
 * holding such values needs the densified kernel. */
bool		se_kspec_sparse(const se_kspec *ks, se_sparse *sk);

/* The inf and NaN that x[0..n) holds: SE_HAS_NAN | SE_HAS_INF | SE_HAS_NEG_INF. */
enum
{
	SE_HAS_NAN = 1, SE_HAS_INF = 2, SE_HAS_NEG_INF = 4
};
int			se_nonfinite(const double *x, int64_t n);

/* Whether sk may skip the absent entries of its packed input against a dense input holding
 * the non-finite values `nonfinite` (se_nonfinite). */
bool		se_sparse_skips(const se_sparse *sk, int nonfinite);

/* out = the kernel on packed (n doubles) and dense; false with a message in err on a bad
 * packed payload. Exactly nnz x (product of the free dims) multiply-adds (or add-mins). */
bool		se_sparse_run(const se_sparse *sk, const double *packed, int64_t n, const double *dense,
						  double *out, char *err);

/* out[0..out_size) = the result where the packed input is absent (sk->init). */
void		se_sparse_init(const se_sparse *sk, double *out);

/* Adds the products of the packed input's elements [from, to) (of nnz) into out (or for a
 * min or max of sums, folds their sums in). */
bool		se_sparse_add(const se_sparse *sk, const double *packed, int64_t nnz, int64_t from,
						  int64_t to, const double *dense, double *out, char *err);

/* Whether elements with different indices on the packed input's outermost dim write to
 * disjoint parts of out (each index its own block of k_ost[0] elements): ranges of the
 * packed input split there may then run at the same time. */
bool		se_sparse_rows_disjoint(const se_sparse *sk);

/* The dense input of sk copied so that the innermost free dim reads it contiguously
 * (*laid: sk reading the copy; free() the copy), or NULL (*laid = *sk) where it does
 * already, where the product reads too few of its elements to pay for the copy, or where
 * the memory is missing. */
double	   *se_sparse_relayout(const se_sparse *sk, int64_t nnz, const double *dense,
							   se_sparse *laid);

/* The same for the result: an array for *laid to write with the innermost free dim
 * contiguous (NULL where not worth it), which se_sparse_result_restore then copies into
 * the result as sk lays it out. */
double	   *se_sparse_result_relayout(const se_sparse *sk, int64_t nnz, se_sparse *laid);
void		se_sparse_result_restore(const se_sparse *sk, const double *rows, double *out);

/* out[0..size) = the dense form of a packed payload of n doubles whose absent entries are
 * `fill`; false with err. */
bool		se_unpack(const double *packed, int64_t n, int64_t size, double fill, double *out,
					  char *err);

/* Whether a relation stores x: anything but +0.0 (1 / -0.0 is -inf, as in NumPy). */
static inline bool
se_stored(double x)
{
	return x != 0.0 || signbit(x);
}

/* Whether a tensor of default `fill` stores x: x differs from it (se_stored for 0). */
static inline bool
se_differs(double x, double fill)
{
	return fill == 0.0 ? se_stored(x) : x != fill;
}

/* Stored values (se_stored) of x[0..n). */
int64_t		se_count_nonzero(const double *x, int64_t n);

/* out[0..2 nnz) = x[0..n) packed (nnz from se_count_nonzero). */
void		se_pack(const double *x, int64_t n, int64_t nnz, double *out);

#endif
