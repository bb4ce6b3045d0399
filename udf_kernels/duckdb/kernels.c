/*
 * Per-tuple kernels (KernelSpec, sparse_einsum/kernels/spec.py) and se_split (GatherSpec).
 *
 *   se_kernel1(spec, a), se_kernel2(spec, a, b)   DOUBLE[] result
 *   se_value1(spec, a),  se_value2(spec, a, b)    the one element of the result, as DOUBLE
 *   se_split(gspec, a)                            every sub-tensor, in position order, as
 *                                                 DOUBLE[][] (NULL pieces when all +0.0)
 *   se_densify(packed, size), se_sparsify(v)      a packed sparse payload as a dense one
 *                                                 of size elements, and back
 *   se_fused(fspec, a, b, ...)                    a chain of element-wise operations over
 *                                                 DOUBLE[] and DOUBLE leaves, in one pass
 *                                                 (NULL when the chain's result is absent)
 *
 * a and b are DOUBLE[] or DOUBLE (a one-element input). The spec is parsed once per
 * chunk. A matrix product runs with BLAS where the build links it (../common/se_blas.c),
 * else with the C loops; when the matrix is the same value for a run of rows, as a
 * one-tuple table joined to every row is, the rows are one BLAS product against it (or,
 * without BLAS, four rows at a time, skipping rows of it that only meet zeros); other
 * specs run the strided loop. An input marked ~ in the spec is a packed sparse payload:
 * a product-sum with one runs over its non-zeros (densified where the dense input holds
 * inf or NaN), other kernels densify it. A big product (one tuple of a whole matrix is
 * one call) runs on one thread per core (../common/se_threads.c). A NULL array argument
 * is all zeros (a tuple missing from an outer join: cheaper than COALESCE, which copies
 * big lists slowly); a NULL scalar argument or spec gives NULL.
 */
#include "se_duckdb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kernel_info
{
	const char *name;
	int			arity;
	bool		lists[2];		/* which arguments are DOUBLE[] */
	bool		value;			/* DOUBLE result (se_value*) */
} kernel_info;

static void
fn_error(duckdb_function_info info, const char *fmt,...)
{
	char		msg[2 * SE_ERRLEN];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	duckdb_scalar_function_set_error(info, msg);
}

#define FAIL(...) do { fn_error(__VA_ARGS__); return; } while (0)

static void
set_null(duckdb_vector output, idx_t row)
{
	duckdb_vector_ensure_validity_writable(output);
	duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
}

/* The run of rows from `row` whose spec text (column 0) is the same non-NULL text. */
static idx_t
spec_run(duckdb_data_chunk input, idx_t row, idx_t n, const char **text, uint32_t *len)
{
	uint64_t   *valid = duckdb_vector_get_validity(duckdb_data_chunk_get_vector(input, 0));
	idx_t		end = row + 1;

	if (valid && !duckdb_validity_row_is_valid(valid, row))
	{
		*text = NULL;
		return end;
	}
	se_text(input, 0, row, text, len);
	for (; end < n; end++)
	{
		const char *t;
		uint32_t	l;

		if (valid && !duckdb_validity_row_is_valid(valid, end))
			break;
		se_text(input, 0, end, &t, &l);
		if (l != *len || memcmp(t, *text, l) != 0)
			break;
	}
	return end;
}

/* ---------------------------------------------------------------- vector x shared matrix */

typedef double v4d __attribute__((vector_size(32)));

/* unaligned loads and stores of four doubles (macros: no vector-typed calls) */
#define load4(p) ({ v4d v_; memcpy(&v_, (p), sizeof(v_)); v_; })
#define store4(p, v) do { v4d v_ = (v); memcpy((p), &v_, sizeof(v_)); } while (0)

/*
 * y_r[j] = sum_k x_r[k * sx] * w[k * sw + j] for four rows r at once: eight columns at a
 * time held in registers, each element of w loaded once for the four rows. A row k of w
 * is skipped where the four x are zero and finite[k] says it holds no inf or NaN (0 * inf
 * is NaN, as in NumPy).
 */
SE_VECTORIZED static void
vecmat4(int64_t nk, int64_t nj, const double *const *x, int64_t sx, const double *w, int64_t sw,
		const bool *finite, double *const *y)
{
	const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
	int64_t		j = 0;

	for (; j + 8 <= nj; j += 8)
	{
		v4d			a0 = {0}, b0 = {0}, a1 = {0}, b1 = {0}, a2 = {0}, b2 = {0}, a3 = {0}, b3 = {0};

		for (int64_t k = 0; k < nk; k++)
		{
			const double c0 = x0[k * sx], c1 = x1[k * sx], c2 = x2[k * sx], c3 = x3[k * sx];
			v4d			w0, w1;

			if (c0 == 0.0 && c1 == 0.0 && c2 == 0.0 && c3 == 0.0 && finite[k])
				continue;
			w0 = load4(w + k * sw + j);
			w1 = load4(w + k * sw + j + 4);
			a0 += c0 * w0;
			b0 += c0 * w1;
			a1 += c1 * w0;
			b1 += c1 * w1;
			a2 += c2 * w0;
			b2 += c2 * w1;
			a3 += c3 * w0;
			b3 += c3 * w1;
		}
		store4(y[0] + j, a0);
		store4(y[0] + j + 4, b0);
		store4(y[1] + j, a1);
		store4(y[1] + j + 4, b1);
		store4(y[2] + j, a2);
		store4(y[2] + j + 4, b2);
		store4(y[3] + j, a3);
		store4(y[3] + j + 4, b3);
	}
	for (; j < nj; j++)
	{
		double		s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;

		for (int64_t k = 0; k < nk; k++)
		{
			const double wk = w[k * sw + j];

			s0 += x0[k * sx] * wk;
			s1 += x1[k * sx] * wk;
			s2 += x2[k * sx] * wk;
			s3 += x3[k * sx] * wk;
		}
		y[0][j] = s0;
		y[1][j] = s1;
		y[2][j] = s2;
		y[3][j] = s3;
	}
}

static void
vecmat1(int64_t nk, int64_t nj, const double *x, int64_t sx, const double *w, int64_t sw,
		const bool *finite, double *y)
{
	memset(y, 0, sizeof(double) * nj);
	for (int64_t k = 0; k < nk; k++)
		if (x[k * sx] != 0.0 || !finite[k])
			se_axpy(nj, x[k * sx], w + k * sw, y);
}

/*
 * Rows [lo, hi) whose b is one matrix, as one BLAS product: the vectors a_r gathered into
 * the rows of a matrix times b, into out[lo] on (rows out_step apart). False without BLAS
 * or memory.
 */
static bool
rows_blas(const se_gemm *g, const double *const *a, const double *b, double *const *out,
		  idx_t lo, idx_t hi, int64_t out_step)
{
	const int64_t rows = (int64_t) (hi - lo);
	double	   *x;
	se_gemm		big = {.batch = 1, .m = rows, .n = g->n, .k = g->k, .a_m = g->k, .a_k = 1,
		.b_k = g->b_k, .b_n = g->b_n, .c_m = out_step, .c_n = g->c_n};
	bool		ok;

	if (se_blas_name == NULL || (x = (double *) malloc(sizeof(double) * (size_t) (rows * g->k + 1))) == NULL)
		return false;
	for (int64_t r = 0; r < rows; r++)
		for (int64_t k = 0; k < g->k; k++)
			x[r * g->k + k] = a[lo + r][k * g->a_k];
	ok = se_gemm_blas(&big, x, b, out[lo]);
	free(x);
	return ok;
}

/*
 * Rows [lo, hi) whose b is one matrix: out = a_r (a vector) x b, the kernel being
 * se_gemm g with batch 1, m 1 and unit n strides.
 */
static bool
vecmat_rows(const se_gemm *g, const double *const *a, const double *b, double *const *out,
			idx_t lo, idx_t hi)
{
	bool	   *finite = (bool *) malloc((size_t) (g->k > 0 ? g->k : 1));
	idx_t		r = lo;

	if (finite == NULL)
		return false;
	for (int64_t k = 0; k < g->k; k++)
	{
		const double *wk = b + k * g->b_k;
		double		s = 0.0;

		for (int64_t j = 0; j < g->n; j++)
			s += wk[j] * 0.0;	/* NaN exactly when the row holds inf or NaN */
		finite[k] = s == 0.0;
	}
	for (; r + 4 <= hi; r += 4)
		vecmat4(g->k, g->n, a + r, g->a_k, b, g->b_k, finite, out + r);
	for (; r < hi; r++)
		vecmat1(g->k, g->n, a[r], g->a_k, b, g->b_k, finite, out[r]);
	free(finite);
	return true;
}

/* ---------------------------------------------------------------- se_kernel / se_value */

/*
 * Rows [lo, hi) of a spec with a packed input (in[k][row], n_in[2 * row + k] doubles; in[0]
 * NULL for a NULL row): a product-sum runs over the non-zeros of its packed input where
 * the dense one is finite, the rest densified.
 */
static bool
packed_rows(duckdb_function_info info, const kernel_info *ki, const se_kspec *ks, const char *text,
			uint32_t len, const double *const *in[2], const int64_t *n_in, double *const *out,
			idx_t lo, idx_t hi)
{
	se_sparse	sk;
	se_gemm		g;
	bool		sparse = se_kspec_sparse(ks, &sk), gemm = se_kspec_gemm(ks, &g), ok = false;
	double	   *dense[2] = {NULL, NULL};
	const double *seen = NULL;		/* the last dense input looked at ... */
	int64_t		seen_len = 0;		/* ... its length */
	int			seen_nonfinite = 0;	/* ... and its inf and NaN (se_nonfinite) */
	char		err[SE_ERRLEN];

	for (idx_t row = lo; row < hi; row++)
	{
		const double *x[2] = {in[0][row], in[1][row]};
		const int64_t *n = n_in + 2 * row;

		if (x[0] == NULL)
			continue;
		if (sparse)
		{
			const int	s = sk.s, d = 1 - s;

			if (x[d] != seen || n[d] != seen_len)
			{
				seen = x[d];
				seen_len = n[d];
				seen_nonfinite = se_nonfinite(x[d], n[d]);
			}
			if (se_sparse_skips(&sk, seen_nonfinite))
			{
				if (!se_sparse_run_threaded(&sk, x[s], n[s], x[d], out[row], err))
				{
					fn_error(info, "%s: input %s of spec \"%.*s\": %s", ki->name, s ? "b" : "a",
							 (int) len, text, err);
					goto done;
				}
				continue;
			}
		}
		for (int k = 0; k < ki->arity; k++)
		{
			if (!ks->packed[k])
				continue;
			if (dense[k] == NULL &&		/* on first need: the dense form may be huge */
				(dense[k] = (double *) malloc(sizeof(double) * (size_t) (ks->need[k] > 0 ? ks->need[k] : 1))) == NULL)
			{
				fn_error(info, "%s: out of memory densifying input %s (%lld elements)", ki->name,
						 k ? "b" : "a", (long long) ks->need[k]);
				goto done;
			}
			if (ks->need[k] > 0 && !se_unpack(x[k], n[k], ks->need[k], ks->fill[k], dense[k], err))
			{
				fn_error(info, "%s: input %s of spec \"%.*s\": %s", ki->name, k ? "b" : "a",
						 (int) len, text, err);
				goto done;
			}
			x[k] = dense[k];
		}
		if (gemm)
			se_gemm_threaded(&g, x[0], x[1], out[row], true);
		else
			se_run_kernel(ks, x[0], x[1], out[row]);
	}
	ok = true;
done:
	free(dense[0]);
	free(dense[1]);
	return ok;
}

/* Rows [lo, hi) under one parsed spec: inputs checked, outputs computed. */
static bool
kernel_rows(duckdb_function_info info, const kernel_info *ki, const se_kspec *ks, const char *text,
			uint32_t len, const se_arg *args, duckdb_vector output, idx_t lo, idx_t hi)
{
	const double **a = (const double **) calloc(hi, sizeof(double *));
	const double **b = (const double **) calloc(hi, sizeof(double *));
	int64_t    *n_in = (int64_t *) calloc(2 * hi, sizeof(int64_t));
	double	  **out = (double **) calloc(hi, sizeof(double *));
	double	   *data;
	idx_t		base = 0;
	duckdb_list_entry *entries = NULL;
	se_gemm		g;
	bool		ok = false;
	double	   *zeros = NULL;	/* the payload of a NULL array argument */

	if (a == NULL || b == NULL || n_in == NULL || out == NULL)
	{
		fn_error(info, "%s: out of memory", ki->name);
		goto done;
	}
	if (ki->value)
		data = (double *) duckdb_vector_get_data(output);
	else
	{
		data = se_list_reserve(output, (hi - lo) * (idx_t) ks->out_size, &base);
		entries = (duckdb_list_entry *) duckdb_vector_get_data(output);
		if (data == NULL)
		{
			fn_error(info, "%s: cannot allocate %llu result elements", ki->name,
					 (unsigned long long) ((hi - lo) * (idx_t) ks->out_size));
			goto done;
		}
	}
	for (idx_t row = lo; row < hi; row++)
	{
		const double *in[2] = {NULL, NULL};
		bool		valid = true, bad = false;

		for (int k = 0; k < ki->arity; k++)
		{
			int64_t		n;

			if (!se_arg_row(&args[k], row, &in[k], &n, &bad))
			{
				if (!ki->lists[k])
				{
					valid = false;
					break;
				}
				/* a missing array (an outer join's) is all zeros */
				if (zeros == NULL &&
					(zeros = (double *) calloc((size_t) (ks->need[0] > ks->need[1] ? ks->need[0] : ks->need[1]) + 1,
											   sizeof(double))) == NULL)
				{
					fn_error(info, "%s: out of memory", ki->name);
					goto done;
				}
				in[k] = zeros;
				n = ks->packed[k] ? 0 : ks->need[k];
			}
			if (bad)
			{
				fn_error(info, "%s: input %s contains NULL elements", ki->name, k ? "b" : "a");
				goto done;
			}
			n_in[2 * row + k] = n;
			if (!ks->packed[k] && n < ks->need[k])
			{
				fn_error(info, "%s: input %s has %lld elements but spec \"%.*s\" reads %lld", ki->name,
						 k ? "b" : "a", (long long) n, (int) len, text, (long long) ks->need[k]);
				goto done;
			}
		}
		if (ki->value)
			out[row] = data + row;
		else
		{
			entries[row].offset = base + (row - lo) * (idx_t) ks->out_size;
			entries[row].length = valid ? (idx_t) ks->out_size : 0;
			out[row] = data + (row - lo) * ks->out_size;
		}
		if (!valid)
		{
			set_null(output, row);
			continue;
		}
		a[row] = in[0];
		b[row] = in[1];
	}
	if (ks->packed[0] || ks->packed[1])
	{
		if (!packed_rows(info, ki, ks, text, len, (const double *const *[2]) {a, b}, n_in, out, lo, hi))
			goto done;
	}
	else if (se_kspec_gemm(ks, &g) && g.batch == 1 && g.m == 1 && g.n > 1 && g.b_n == 1 && g.c_n == 1)
	{
		/* vector x matrix: a run of rows sharing the matrix is one BLAS product (measured
		 * faster than vecmat4, also on rows of 1% non-zeros); without BLAS, four at a time */
		for (idx_t row = lo; row < hi;)
		{
			idx_t		end = row + 1;

			if (a[row] == NULL)
			{
				row++;
				continue;
			}
			while (end < hi && a[end] != NULL && b[end] == b[row])
				end++;
			if (end - row < 4)
				for (idx_t r = row; r < end; r++)
					se_gemm_threaded(&g, a[r], b[r], out[r], true);
			else if (!rows_blas(&g, a, b[row], out, row, end, ks->out_size) &&
					 !vecmat_rows(&g, a, b[row], out, row, end))
			{
				fn_error(info, "%s: out of memory", ki->name);
				goto done;
			}
			row = end;
		}
	}
	else
	{
		bool		gemm = se_kspec_gemm(ks, &g);

		for (idx_t row = lo; row < hi; row++)
			if (a[row] != NULL)
			{
				if (gemm)
					se_gemm_threaded(&g, a[row], b[row], out[row], true);
				else
					se_run_kernel(ks, a[row], b[row], out[row]);
			}
	}
	if (!ki->value)
		se_list_done(output, base + (hi - lo) * (idx_t) ks->out_size);
	ok = true;
done:
	free(a);
	free(b);
	free(n_in);
	free(out);
	free(zeros);
	return ok;
}

static void
kernel_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	const kernel_info *ki = (const kernel_info *) duckdb_scalar_function_get_extra_info(info);
	idx_t		n = duckdb_data_chunk_get_size(input);
	se_arg		args[2];
	se_kspec	ks;
	char		err[SE_ERRLEN];

	for (int k = 0; k < ki->arity; k++)
		se_arg_init(&args[k], input, 1 + k, ki->lists[k]);
	for (idx_t row = 0; row < n;)
	{
		const char *text;
		uint32_t	len;
		idx_t		end = spec_run(input, row, n, &text, &len);

		if (text == NULL)
		{
			set_null(output, row);
			if (!ki->value)
				((duckdb_list_entry *) duckdb_vector_get_data(output))[row].length = 0;
			row = end;
			continue;
		}
		if (!se_parse_kspec(text, len, &ks, err))
			FAIL(info, "%s: invalid kernel spec \"%.*s\": %s", ki->name, (int) len, text, err);
		if (ks.arity != ki->arity)
			FAIL(info, "%s: spec \"%.*s\" is for %d input(s), %s takes %d", ki->name,
							(int) len, text, ks.arity, ki->name, ki->arity);
		if (ki->value && ks.out_size != 1)
			FAIL(info, "%s: spec \"%.*s\" has %lld outputs; %s returns one", ki->name,
							(int) len, text, (long long) ks.out_size, ki->name);
		if (!kernel_rows(info, ki, &ks, text, len, args, output, row, end))
			return;
		row = end;
	}
}

/* ---------------------------------------------------------------- se_split */

/*
 * Every sub-tensor of each array, in position order, as one DOUBLE[][] (an all +0.0 piece
 * is NULL): unnested with generate_subscripts, one array explodes into its pieces without
 * the copy of the array into every chunk that taking one piece a row of a cross join
 * with range() cost (2.2 s for one 169,343 x 40 array; 0.1-0.2 s this way).
 */
static void
split_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	idx_t		n = duckdb_data_chunk_get_size(input);
	duckdb_vector pieces = duckdb_list_vector_get_child(output);
	se_arg		a;
	char		err[SE_ERRLEN];

	se_arg_init(&a, input, 1, true);
	for (idx_t row = 0; row < n;)
	{
		const char *text;
		uint32_t	len;
		idx_t		end = spec_run(input, row, n, &text, &len);
		se_gspec	g;
		int64_t    *suboff;

		if (text == NULL)
		{
			set_null(output, row);
			((duckdb_list_entry *) duckdb_vector_get_data(output))[row].length = 0;
			row = end;
			continue;
		}
		if (!se_parse_gspec(text, len, &g, err))
			FAIL(info, "se_split: invalid gather spec \"%.*s\": %s", (int) len, text, err);
		suboff = (int64_t *) malloc(sizeof(int64_t) * (size_t) (g.sub_size > 0 ? g.sub_size : 1));
		if (suboff == NULL)
			FAIL(info, "se_split: out of memory");
		se_gspec_suboffsets(&g, suboff);
		for (idx_t r = row; r < end; r++)
		{
			duckdb_list_entry *entries = (duckdb_list_entry *) duckdb_vector_get_data(output);
			duckdb_list_entry *inner;
			const double *x;
			int64_t		xlen;
			bool		bad = false;
			idx_t		first = duckdb_list_vector_get_size(output), base, pos;
			double	   *data;

			entries[r].offset = first;
			entries[r].length = 0;
			if (!se_arg_row(&a, r, &x, &xlen, &bad))
			{
				set_null(output, r);
				continue;
			}
			if (bad || xlen != g.size)
			{
				free(suboff);
				if (bad)
					FAIL(info, "se_split: a contains NULL elements");
				FAIL(info, "se_split: a has %lld elements but spec \"%.*s\" has SIZE %lld",
								(long long) xlen, (int) len, text, (long long) g.size);
			}
			if (duckdb_list_vector_reserve(output, first + (idx_t) g.positions) == DuckDBError ||
				(data = se_list_reserve(pieces, (idx_t) g.size, &base)) == NULL)
			{
				free(suboff);
				FAIL(info, "se_split: out of memory for %lld pieces", (long long) g.positions);
			}
			inner = (duckdb_list_entry *) duckdb_vector_get_data(pieces);
			pos = base;
			for (int64_t p = 0; p < g.positions; p++)
			{
				const double *from = x + se_gspec_base(&g, p);
				double	   *o = data + (pos - base);
				bool		nonzero = false;

				for (int64_t e = 0; e < g.sub_size; e++)
				{
					o[e] = from[suboff[e]];
					nonzero |= se_differs(o[e], g.fill);
				}
				inner[first + p].offset = pos;
				inner[first + p].length = nonzero ? (idx_t) g.sub_size : 0;
				if (nonzero)
					pos += (idx_t) g.sub_size;
				else
					set_null(pieces, first + p);
			}
			se_list_done(pieces, pos);
			duckdb_list_vector_set_size(output, first + (idx_t) g.positions);
			entries[r].length = (idx_t) g.positions;
		}
		free(suboff);
		row = end;
	}
}

/* ---------------------------------------------------------------- se_densify / se_sparsify */

/* Row `row` of a DOUBLE[] argument: false for NULL (the output row set NULL); *bad when
 * the list holds a NULL element. */
static bool
list_row(const se_arg *arg, idx_t row, duckdb_vector output, const double **x, int64_t *n, bool *bad)
{
	duckdb_list_entry *entries = (duckdb_list_entry *) duckdb_vector_get_data(output);

	entries[row].offset = 0;
	entries[row].length = 0;
	if (se_arg_row(arg, row, x, n, bad))
		return true;
	set_null(output, row);
	return false;
}

static void
densify_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	idx_t		rows = duckdb_data_chunk_get_size(input), total = 0, base;
	duckdb_vector sizes = duckdb_data_chunk_get_vector(input, 1);
	const int64_t *size = (const int64_t *) duckdb_vector_get_data(sizes);
	uint64_t   *size_valid = duckdb_vector_get_validity(sizes);
	duckdb_list_entry *entries = (duckdb_list_entry *) duckdb_vector_get_data(output);
	se_arg		a;
	double	   *data;
	char		err[SE_ERRLEN];

	se_arg_init(&a, input, 0, true);
	for (idx_t row = 0; row < rows; row++)
	{
		if (size_valid && !duckdb_validity_row_is_valid(size_valid, row))
			continue;
		if (size[row] < 0)
			FAIL(info, "se_densify: size %lld is negative", (long long) size[row]);
		total += (idx_t) size[row];
	}
	data = se_list_reserve(output, total, &base);
	if (data == NULL)
		FAIL(info, "se_densify: cannot allocate %llu result elements", (unsigned long long) total);
	total = 0;
	for (idx_t row = 0; row < rows; row++)
	{
		const double *x;
		int64_t		n;
		bool		bad = false;

		if (!list_row(&a, row, output, &x, &n, &bad) ||
			(size_valid && !duckdb_validity_row_is_valid(size_valid, row)))
		{
			set_null(output, row);
			continue;
		}
		if (bad)
			FAIL(info, "se_densify: packed contains NULL elements");
		if (!se_unpack(x, n, size[row], 0.0, data + total, err))
			FAIL(info, "se_densify: %s", err);
		entries[row].offset = base + total;
		entries[row].length = (idx_t) size[row];
		total += (idx_t) size[row];
	}
	se_list_done(output, base + total);
}

static void
sparsify_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	idx_t		rows = duckdb_data_chunk_get_size(input), total = 0, base;
	duckdb_list_entry *entries = (duckdb_list_entry *) duckdb_vector_get_data(output);
	se_arg		v;
	double	   *data;

	se_arg_init(&v, input, 0, true);
	for (idx_t row = 0; row < rows; row++)
	{
		const double *x;
		int64_t		n;
		bool		bad = false;

		if (!list_row(&v, row, output, &x, &n, &bad))
			continue;
		if (bad)
			FAIL(info, "se_sparsify: the input contains NULL elements");
		entries[row].length = 2 * (idx_t) se_count_nonzero(x, n);
		total += entries[row].length;
	}
	data = se_list_reserve(output, total, &base);
	if (data == NULL)
		FAIL(info, "se_sparsify: cannot allocate %llu result elements", (unsigned long long) total);
	total = 0;
	for (idx_t row = 0; row < rows; row++)
	{
		const double *x;
		int64_t		n;
		bool		bad = false;

		if (!se_arg_row(&v, row, &x, &n, &bad))
			continue;
		se_pack(x, n, (int64_t) entries[row].length / 2, data + total);
		entries[row].offset = base + total;
		total += entries[row].length;
	}
	se_list_done(output, base + total);
}

/* ---------------------------------------------------------------- se_fused */

static void
fused_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	idx_t		n = duckdb_data_chunk_get_size(input),
				nargs = duckdb_data_chunk_get_column_count(input) - 1;
	duckdb_list_entry *entries = (duckdb_list_entry *) duckdb_vector_get_data(output);
	se_arg		args[SE_MAXDIMS];
	bool		untyped[SE_MAXDIMS];	/* a NULL literal: absent in every row */
	se_fspec	fs;
	char		err[SE_ERRLEN];

	if (nargs > SE_MAXDIMS)
		FAIL(info, "se_fused: %llu inputs, at most %d", (unsigned long long) nargs, SE_MAXDIMS);
	for (idx_t k = 0; k < nargs; k++)
	{
		duckdb_logical_type t = duckdb_vector_get_column_type(duckdb_data_chunk_get_vector(input, 1 + k));
		duckdb_type id = duckdb_get_type_id(t), elem = id;

		if (id == DUCKDB_TYPE_LIST)
		{
			duckdb_logical_type child = duckdb_list_type_child_type(t);

			elem = duckdb_get_type_id(child);
			duckdb_destroy_logical_type(&child);
		}
		duckdb_destroy_logical_type(&t);
		if (elem != DUCKDB_TYPE_DOUBLE && elem != DUCKDB_TYPE_SQLNULL)
			FAIL(info, "se_fused: input %llu is neither DOUBLE[] nor DOUBLE", (unsigned long long) k);
		if (!(untyped[k] = elem == DUCKDB_TYPE_SQLNULL))
			se_arg_init(&args[k], input, 1 + k, id == DUCKDB_TYPE_LIST);
	}
	for (idx_t row = 0; row < n; row++)
	{
		const double *leaves[SE_MAXDIMS];
		const char *text;
		uint32_t	len;
		idx_t		base;
		double	   *data;

		se_text(input, 0, row, &text, &len);
		entries[row].length = 0;
		if (text == NULL)
		{
			set_null(output, row);
			continue;
		}
		if (!se_parse_fspec(text, len, &fs, err))
			FAIL(info, "se_fused: invalid spec \"%.*s\": %s", (int) len, text, err);
		if ((idx_t) fs.nleaves != nargs)
			FAIL(info, "se_fused: spec \"%.*s\" reads %d inputs, given %llu", (int) len, text,
				 fs.nleaves, (unsigned long long) nargs);
		for (idx_t k = 0; k < nargs; k++)
		{
			int64_t		m;
			bool		bad = false;

			if (untyped[k] || !se_arg_row(&args[k], row, &leaves[k], &m, &bad))
				leaves[k] = NULL;	/* absent: zeros */
			else if (bad)
				FAIL(info, "se_fused: input %llu contains NULL elements", (unsigned long long) k);
			else if (m != fs.leaf_size[k])
				FAIL(info, "se_fused: input %llu has %lld elements but spec \"%.*s\" reads %lld",
					 (unsigned long long) k, (long long) m, (int) len, text,
					 (long long) fs.leaf_size[k]);
		}
		if ((data = se_list_reserve(output, (idx_t) fs.n, &base)) == NULL)
			FAIL(info, "se_fused: cannot allocate %lld result elements", (long long) fs.n);
		entries[row].offset = base;
		if (se_run_fused(&fs, leaves, data))
		{
			entries[row].length = (idx_t) fs.n;
			se_list_done(output, base + (idx_t) fs.n);
		}
		else
		{
			set_null(output, row);
			se_list_done(output, base);
		}
	}
}

/* ---------------------------------------------------------------- registration */

static const kernel_info KERNELS[] = {
	{"se_kernel1", 1, {true, false}, false}, {"se_kernel1", 1, {false, false}, false},
	{"se_kernel2", 2, {true, true}, false}, {"se_kernel2", 2, {true, false}, false},
	{"se_kernel2", 2, {false, true}, false}, {"se_kernel2", 2, {false, false}, false},
	{"se_value1", 1, {true, false}, true}, {"se_value1", 1, {false, false}, true},
	{"se_value2", 2, {true, true}, true}, {"se_value2", 2, {true, false}, true},
	{"se_value2", 2, {false, true}, true}, {"se_value2", 2, {false, false}, true},
};

static duckdb_scalar_function
new_function(const char *name, duckdb_type first, const bool *lists, int nlists, duckdb_type last,
			 bool returns_list, duckdb_scalar_function_t fn, const void *extra)
{
	duckdb_scalar_function f = duckdb_create_scalar_function();
	duckdb_logical_type t;

	duckdb_scalar_function_set_name(f, name);
	if (first != DUCKDB_TYPE_INVALID)
	{
		t = duckdb_create_logical_type(first);
		duckdb_scalar_function_add_parameter(f, t);
		duckdb_destroy_logical_type(&t);
	}
	for (int k = 0; k < nlists; k++)
	{
		t = se_type(lists[k]);
		duckdb_scalar_function_add_parameter(f, t);
		duckdb_destroy_logical_type(&t);
	}
	if (last != DUCKDB_TYPE_INVALID)
	{
		t = duckdb_create_logical_type(last);
		duckdb_scalar_function_add_parameter(f, t);
		duckdb_destroy_logical_type(&t);
	}
	t = se_type(returns_list);
	duckdb_scalar_function_set_return_type(f, t);
	duckdb_destroy_logical_type(&t);
	duckdb_scalar_function_set_function(f, fn);
	duckdb_scalar_function_set_extra_info(f, (void *) extra, NULL);
	return f;
}

bool
se_register_kernels(duckdb_connection con)
{
	const char *names[] = {"se_kernel1", "se_kernel2", "se_value1", "se_value2"};
	static const bool one_list[] = {true};
	bool		ok = true;

	for (int s = 0; s < 4; s++)
	{
		duckdb_scalar_function_set set = duckdb_create_scalar_function_set(names[s]);

		for (size_t i = 0; i < sizeof(KERNELS) / sizeof(KERNELS[0]); i++)
		{
			const kernel_info *ki = &KERNELS[i];
			duckdb_scalar_function f;

			if (strcmp(ki->name, names[s]) != 0)
				continue;
			f = new_function(ki->name, DUCKDB_TYPE_VARCHAR, ki->lists, ki->arity, DUCKDB_TYPE_INVALID,
							 !ki->value, kernel_function, ki);
			duckdb_scalar_function_set_special_handling(f);		/* it reads NULL arrays as zeros */
			ok = ok && duckdb_add_scalar_function_to_set(set, f) == DuckDBSuccess;
			duckdb_destroy_scalar_function(&f);
		}
		ok = ok && duckdb_register_scalar_function_set(con, set) == DuckDBSuccess;
		duckdb_destroy_scalar_function_set(&set);
	}
	{
		duckdb_scalar_function f[3] = {
			new_function("se_densify", DUCKDB_TYPE_INVALID, one_list, 1, DUCKDB_TYPE_BIGINT, true,
						 densify_function, NULL),
			new_function("se_sparsify", DUCKDB_TYPE_INVALID, one_list, 1, DUCKDB_TYPE_INVALID, true,
						 sparsify_function, NULL),
		};
		duckdb_logical_type piece = se_type(true), pieces = duckdb_create_list_type(piece);

		f[2] = new_function("se_split", DUCKDB_TYPE_VARCHAR, one_list, 1, DUCKDB_TYPE_INVALID, true,
							split_function, NULL);
		duckdb_scalar_function_set_return_type(f[2], pieces);	/* DOUBLE[][] */
		duckdb_destroy_logical_type(&piece);
		duckdb_destroy_logical_type(&pieces);

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		{
			ok = ok && duckdb_register_scalar_function(con, f[i]) == DuckDBSuccess;
			duckdb_destroy_scalar_function(&f[i]);
		}
	}
	{
		duckdb_scalar_function f = new_function("se_fused", DUCKDB_TYPE_VARCHAR, NULL, 0,
												DUCKDB_TYPE_INVALID, true, fused_function, NULL);
		duckdb_logical_type any = duckdb_create_logical_type(DUCKDB_TYPE_ANY);

		duckdb_scalar_function_set_varargs(f, any);
		duckdb_scalar_function_set_special_handling(f);		/* absent leaves are zeros */
		duckdb_destroy_logical_type(&any);
		ok = ok && duckdb_register_scalar_function(con, f) == DuckDBSuccess;
		duckdb_destroy_scalar_function(&f);
	}
	return ok;
}
