/*
 * se_kernel: spec parsing and the loops of the kernels (see se_kernel.h).
 */
#include "se_kernel.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SE_OPS: the operations of sparse_einsum/program/ops.py (binary ones first) */
#include "se_ops.h"

#define X_ENUM(name, expr) OP_##name,
enum
{
	SE_OPS(X_ENUM) N_OPS
};

#define X_NAME(name, expr) #name,
static const char *const op_names[N_OPS] = {SE_OPS(X_NAME)};
static const char *const agg_names[] = {"sum", "max", "min"};

#define SPEC_MAXLEN 4096

/* ---------------------------------------------------------------- operation loops */

typedef double (*reduce_fn) (const double *a, int64_t sa, const double *b, int64_t sb, int64_t n,
							 double acc, double c);
typedef void (*map_fn) (double *out, const double *a, int64_t sa, const double *b, int64_t sb,
						int64_t n, double c);

/* max and min keep four partial extremes, as sum keeps four partial sums, so that the
 * comparisons pipeline; NaN propagates through each (SE_STEP_MAX) and then into the result */
#define X_RED_EXTREME(agg, name, expr, STEP) \
static double \
red_##agg##_##name(const double *a, int64_t sa, const double *b, int64_t sb, int64_t n, double acc, double c) \
{ \
	double		m0 = acc, m1 = acc, m2 = acc, m3 = acc; \
	int64_t		i = 0; \
	(void) c; \
	for (; i + 4 <= n; i += 4, a += 4 * sa, b += 4 * sb) \
	{ \
		{ const double x = a[0], y = b[0]; const double v = (expr); (void) y; STEP(m0, v); } \
		{ const double x = a[sa], y = b[sb]; const double v = (expr); (void) y; STEP(m1, v); } \
		{ const double x = a[2 * sa], y = b[2 * sb]; const double v = (expr); (void) y; STEP(m2, v); } \
		{ const double x = a[3 * sa], y = b[3 * sb]; const double v = (expr); (void) y; STEP(m3, v); } \
	} \
	for (; i < n; i++, a += sa, b += sb) \
	{ const double x = *a, y = *b; const double v = (expr); (void) y; STEP(m0, v); } \
	STEP(m0, m1); \
	STEP(m0, m2); \
	STEP(m0, m3); \
	return m0; \
}

/* sum uses four partial sums so the adds pipeline */
#define X_REDUCE(name, expr) \
static double \
red_sum_##name(const double *a, int64_t sa, const double *b, int64_t sb, int64_t n, double acc, double c) \
{ \
	double		s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0; \
	int64_t		i = 0; \
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
X_RED_EXTREME(max, name, expr, SE_STEP_MAX) \
X_RED_EXTREME(min, name, expr, SE_STEP_MIN) \
static void \
map_##name(double *out, const double *a, int64_t sa, const double *b, int64_t sb, int64_t n, double c) \
{ \
	(void) c; \
	for (int64_t i = 0; i < n; i++, a += sa, b += sb) \
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

/* ---------------------------------------------------------------- parsing */

static bool fail(char *err, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static bool
fail(char *err, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err, SE_ERRLEN, fmt, ap);
	va_end(ap);
	return false;
}

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

/* Parse "1,2,3" (non-negative integers; "" is the empty list); returns the count or -1. */
static int
parse_ints(const char *field, int64_t *out, const char *what, char *err)
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
			return fail(err, "%s has more than %d entries", what, SE_MAXDIMS), -1;
		if (*p < '0' || *p > '9')
			return fail(err, "%s must be non-negative integers separated by commas", what), -1;
		errno = 0;
		v = strtoll(p, &end, 10);
		if (errno != 0 || v > (long long) INT32_MAX * 1024)
			return fail(err, "%s has an integer out of range", what), -1;
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return fail(err, "%s must be non-negative integers separated by commas", what), -1;
		p = end + 1;
	}
}

/* Product of dims (1 for none); false on overflow. */
static bool
dims_product(const int64_t *dims, int n, int64_t *p)
{
	*p = 1;
	for (int t = 0; t < n; t++)
		if (__builtin_mul_overflow(*p, dims[t], p))
			return false;
	return true;
}

/* One past the largest flat index reached by dims/strides (0 when some dim is 0). */
static bool
max_reach(const int64_t *dims, const int64_t *strides, int n, int64_t *r)
{
	*r = 0;
	for (int t = 0; t < n; t++)
	{
		int64_t		step;

		if (dims[t] == 0)
		{
			*r = 0;
			return true;
		}
		if (__builtin_mul_overflow(dims[t] - 1, strides[t], &step) ||
			__builtin_add_overflow(*r, step, r))
			return false;
	}
	*r += 1;
	return true;
}

static bool
copy_spec(const char *spec, size_t len, char *buf, char *err)
{
	if (len >= SPEC_MAXLEN)
		return fail(err, "longer than %d bytes", SPEC_MAXLEN - 1);
	memcpy(buf, spec, len);
	buf[len] = '\0';
	return true;
}

bool
se_parse_kspec(const char *spec, size_t len, se_kspec *ks, char *err)
{
	char		buf[SPEC_MAXLEN];
	char	   *f[7];
	char	   *colon;
	int64_t		n_out[SE_MAXDIMS];
	int			nf;

	memset(ks, 0, sizeof(*ks));
	err[0] = '\0';
	if (!copy_spec(spec, len, buf, err))
		return false;
	nf = split_fields(buf, f, 6);
	if (nf < 5 || nf > 6)
		return fail(err, "expected OP;AGG;N_OUT;DIMS;[~]STRIDES_A[;[~]STRIDES_B]");
	ks->arity = nf - 4;

	colon = strchr(f[0], ':');
	if (colon)
		*colon = '\0';
	ks->op = -1;
	for (int i = 0; i < N_OPS; i++)
		if (strcmp(f[0], op_names[i]) == 0)
			ks->op = i;
	if (ks->op < 0)
		return fail(err, "unknown operator \"%s\"", f[0]);
	if ((ks->op >= SE_FIRST_CONST) != (colon != NULL))
		return colon ? fail(err, "\"%s\" takes no constant", f[0])
			: fail(err, "\"%s\" needs a constant (%s:C)", f[0], f[0]);
	if (colon)
	{
		char	   *end;

		ks->c = strtod(colon + 1, &end);
		if (end == colon + 1 || *end != '\0')
			return fail(err, "bad constant \"%s\"", colon + 1);
	}
	if ((ks->op < SE_N_BINARY) != (ks->arity == 2))
		return fail(err, "\"%s\" takes %d input(s) but the spec has %d stride list(s)",
					op_names[ks->op], ks->op < SE_N_BINARY ? 2 : 1, ks->arity);

	ks->agg = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(f[1], agg_names[i]) == 0)
			ks->agg = i;
	if (ks->agg < 0)
		return fail(err, "unknown aggregate \"%s\" (sum, max or min)", f[1]);

	if (parse_ints(f[2], n_out, "N_OUT", err) != 1)
		return err[0] ? false : fail(err, "N_OUT must be one integer");
	ks->ndims = parse_ints(f[3], ks->dims, "DIMS", err);
	if (ks->ndims < 0)
		return false;
	if (n_out[0] > ks->ndims)
		return fail(err, "N_OUT %d exceeds the %d loop dims", (int) n_out[0], ks->ndims);
	ks->n_out = (int) n_out[0];
	for (int k = 0; k < ks->arity; k++)
	{
		const char *field = f[4 + k];
		int			n;

		ks->packed[k] = *field == '~';
		field += ks->packed[k];
		if (ks->packed[k] && strchr(field, ':'))
		{
			char	   *end;

			ks->fill[k] = strtod(field, &end);
			if (end == field || *end != ':')
				return fail(err, "bad default of packed input %d", k + 1);
			field = end + 1;
		}
		n = parse_ints(field, ks->st[k], "STRIDES", err);

		if (n < 0)
			return false;
		if (n != ks->ndims)
			return fail(err, "input %d needs one stride per loop dim (%d)", k + 1, ks->ndims);
		if (!max_reach(ks->dims, ks->st[k], ks->ndims, &ks->need[k]))
			return fail(err, "strides overflow");
	}
	if (!dims_product(ks->dims, ks->n_out, &ks->out_size) ||
		!dims_product(ks->dims + ks->n_out, ks->ndims - ks->n_out, &ks->red_size) ||
		(ks->out_size > 0 && ks->red_size > INT64_MAX / ks->out_size))
		return fail(err, "loop space too large");
	return true;
}

bool
se_parse_gspec(const char *spec, size_t len, se_gspec *g, char *err)
{
	char		buf[SPEC_MAXLEN];
	char	   *f[7];
	int64_t		size[SE_MAXDIMS], reach, sub_reach;
	int			nf;

	memset(g, 0, sizeof(*g));
	err[0] = '\0';
	if (!copy_spec(spec, len, buf, err))
		return false;
	nf = split_fields(buf, f, 6);
	if (nf != 5 && nf != 6)
		return fail(err, "expected SIZE;NEW_DIMS;NEW_STRIDES;SUB_DIMS;SUB_STRIDES[;FILL]");
	if (nf == 6)
	{
		char	   *end;

		g->fill = strtod(f[5], &end);
		if (end == f[5] || *end != '\0')
			return fail(err, "bad FILL \"%s\"", f[5]);
	}
	if (parse_ints(f[0], size, "SIZE", err) != 1)
		return err[0] ? false : fail(err, "SIZE must be one integer");
	g->size = size[0];
	g->nn = parse_ints(f[1], g->dn, "NEW_DIMS", err);
	g->ns = parse_ints(f[3], g->ds, "SUB_DIMS", err);
	if (g->nn < 0 || g->ns < 0)
		return false;
	{
		int			nsn = parse_ints(f[2], g->sn, "NEW_STRIDES", err);
		int			nss = parse_ints(f[4], g->ss, "SUB_STRIDES", err);

		if (nsn < 0 || nss < 0)
			return false;
		if (nsn != g->nn || nss != g->ns)
			return fail(err, "each dims list needs one stride per dim");
	}
	if (!dims_product(g->dn, g->nn, &g->positions) || !dims_product(g->ds, g->ns, &g->sub_size))
		return fail(err, "sizes too large");
	if (!max_reach(g->dn, g->sn, g->nn, &reach) || !max_reach(g->ds, g->ss, g->ns, &sub_reach))
		return fail(err, "strides overflow");
	if (reach > 0 && g->sub_size > 0 && reach + sub_reach - 1 > g->size)
		return fail(err, "sub-tensors reach index %lld beyond SIZE %lld",
					(long long) (reach + sub_reach - 2), (long long) g->size);
	return true;
}

void
se_gspec_suboffsets(const se_gspec *g, int64_t *out)
{
	int64_t		idx[SE_MAXDIMS] = {0}, off = 0;

	for (int64_t e = 0; e < g->sub_size; e++)
	{
		out[e] = off;
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
}

int64_t
se_gspec_base(const se_gspec *g, int64_t pos)
{
	int64_t		base = 0;

	for (int t = g->nn - 1; t >= 0; t--)
	{
		base += (pos % g->dn[t]) * g->sn[t];
		pos /= g->dn[t];
	}
	return base;
}

/* ---------------------------------------------------------------- the generic loop */

/* Step an odometer over dims[lo..hi]; keeps offsets oa/ob in step. */
static inline void
odometer_step(const se_kspec *ks, int64_t *idx, int lo, int hi, int64_t *oa, int64_t *ob)
{
	const int64_t *sa = ks->st[0], *sb = ks->st[1];

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
void
se_run_kernel(const se_kspec *ks, const double *a, const double *b, double *out)
{
	int			nd = ks->ndims, no = ks->n_out, last = nd - 1;
	int64_t		idx[SE_MAXDIMS] = {0};
	int64_t		oa = 0, ob = 0;
	int64_t		n_in = nd > 0 ? ks->dims[last] : 1;
	int64_t		sa_in = nd > 0 ? ks->st[0][last] : 0;
	int64_t		sb_in = nd > 0 ? ks->st[1][last] : 0;

	if (b == NULL)
		b = a;					/* unary: strides of b are all zero */
	if (ks->out_size == 0)
		return;
	if (nd == no)
	{
		map_fn		f = map_tab[ks->op];

		for (int64_t o = 0; o < ks->out_size; o += n_in)
		{
			f(out + o, a + oa, sa_in, b + ob, sb_in, n_in, ks->c);
			odometer_step(ks, idx, 0, last - 1, &oa, &ob);
		}
	}
	else
	{
		reduce_fn	f = reduce_tab[ks->agg][ks->op];
		double		init = ks->agg == SE_AGG_SUM ? 0.0 : ks->agg == SE_AGG_MAX ? -INFINITY : INFINITY;
		int64_t		red_outer = n_in == 0 ? 0 : ks->red_size / n_in;

		for (int64_t o = 0; o < ks->out_size; o++)
		{
			double		acc = init;
			int64_t		ra = oa, rb = ob;

			for (int64_t r = 0; r < red_outer; r++)
			{
				acc = f(a + ra, sa_in, b + rb, sb_in, n_in, acc, ks->c);
				odometer_step(ks, idx, no, last - 1, &ra, &rb);
			}
			out[o] = acc;
			odometer_step(ks, idx, 0, no - 1, &oa, &ob);
		}
	}
}

/* ---------------------------------------------------------------- matrix products */

enum
{
	G_B, G_M, G_N, G_K, N_GROUPS
};

/* Collapse the loop dims of one group into one axis of size *size; per operand the dims
 * must nest row-major in loop order. stride[x] gets operand x's stride (0 if size 1). */
static bool
collapse(const int64_t *dims, const int *tt, int nt, const int64_t *const *st, int nops,
		 int64_t *size, int64_t *stride)
{
	*size = 1;
	for (int x = 0; x < nops; x++)
		stride[x] = 0;
	for (int j = 0; j < nt; j++)
	{
		int			t = tt[j];

		for (int x = 0; x < nops; x++)
		{
			if (j > 0 && st[x][tt[j - 1]] != st[x][t] * dims[t])
				return false;
			stride[x] = st[x][t];
		}
		*size *= dims[t];
	}
	return true;
}

bool
se_kspec_product_sum(const se_kspec *ks)
{
	return ks->op == OP_mul && ks->agg == SE_AGG_SUM && ks->arity == 2;
}

bool
se_kspec_gemm(const se_kspec *ks, se_gemm *g)
{
	int			tt[N_GROUPS][SE_MAXDIMS], nt[N_GROUPS] = {0};
	int64_t		oc[SE_MAXDIMS], step = 1;
	const int64_t *ops[3] = {ks->st[0], ks->st[1], oc};
	int64_t		s[3];

	if (!se_kspec_product_sum(ks) || ks->out_size == 0)
		return false;
	for (int t = ks->n_out - 1; t >= 0; t--)
	{
		oc[t] = step;
		step *= ks->dims[t];
	}
	for (int t = ks->n_out; t < ks->ndims; t++)
		oc[t] = 0;
	for (int t = 0; t < ks->ndims; t++)
	{
		bool		in_a = ks->st[0][t] != 0, in_b = ks->st[1][t] != 0;
		int			grp;

		if (ks->dims[t] == 0)
			return false;
		if (ks->dims[t] == 1)
			continue;
		if (t < ks->n_out)
			grp = in_a && in_b ? G_B : in_a ? G_M : in_b ? G_N : -1;
		else
			grp = in_a && in_b ? G_K : -1;
		if (grp < 0)
			return false;		/* a broadcast output or a one-sided reduction */
		tt[grp][nt[grp]++] = t;
	}
	memset(g, 0, sizeof(*g));
	if (!collapse(ks->dims, tt[G_B], nt[G_B], ops, 3, &g->batch, s))
		return false;
	g->a_b = s[0], g->b_b = s[1], g->c_b = s[2];
	if (!collapse(ks->dims, tt[G_M], nt[G_M], (const int64_t *const[]) {ops[0], ops[2]}, 2, &g->m, s))
		return false;
	g->a_m = s[0], g->c_m = s[1];
	if (!collapse(ks->dims, tt[G_N], nt[G_N], (const int64_t *const[]) {ops[1], ops[2]}, 2, &g->n, s))
		return false;
	g->b_n = s[0], g->c_n = s[1];
	if (!collapse(ks->dims, tt[G_K], nt[G_K], ops, 2, &g->k, s))
		return false;
	g->a_k = s[0], g->b_k = s[1];
	/* an element-wise product is a batch of 1 x 1 x 1 products: the map loop, not a call
	 * (of BLAS or of dot) per element */
	return g->m > 1 || g->n > 1 || g->k > 1;
}

SE_VECTORIZED void
se_axpy(int64_t n, double x, const double *w, double *y)
{
	for (int64_t i = 0; i < n; i++)
		y[i] += x * w[i];
}

SE_VECTORIZED static double
dot(int64_t n, const double *a, int64_t sa, const double *b, int64_t sb)
{
	double		s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
	int64_t		i = 0;

	if (sa == 1 && sb == 1)
	{
		for (; i + 4 <= n; i += 4)
		{
			s0 += a[i] * b[i];
			s1 += a[i + 1] * b[i + 1];
			s2 += a[i + 2] * b[i + 2];
			s3 += a[i + 3] * b[i + 3];
		}
		for (; i < n; i++)
			s0 += a[i] * b[i];
		return (s0 + s1) + (s2 + s3);
	}
	for (; i < n; i++)
		s0 += a[i * sa] * b[i * sb];
	return s0;
}

void
se_gemm_run(const se_gemm *g, const double *a, const double *b, double *c)
{
	for (int64_t p = 0; p < g->batch; p++)
	{
		const double *ap = a + p * g->a_b, *bp = b + p * g->b_b;
		double	   *cp = c + p * g->c_b;

		if (g->c_n == 1 && g->b_n == 1 && g->n > 1)
		{
			/* rows of the output are sums of contiguous rows of b */
			for (int64_t i = 0; i < g->m; i++)
			{
				double	   *row = cp + i * g->c_m;

				memset(row, 0, sizeof(double) * g->n);
				for (int64_t k = 0; k < g->k; k++)
					se_axpy(g->n, ap[i * g->a_m + k * g->a_k], bp + k * g->b_k, row);
			}
		}
		else
		{
			for (int64_t i = 0; i < g->m; i++)
				for (int64_t j = 0; j < g->n; j++)
					cp[i * g->c_m + j * g->c_n] = dot(g->k, ap + i * g->a_m, g->a_k,
													  bp + j * g->b_n, g->b_k);
		}
	}
}

/* ---------------------------------------------------------------- element-wise aggregates */

SE_VECTORIZED void
se_vagg_update(int agg, double *acc, const double *x, int64_t n)
{
	if (agg == SE_AGG_SUM)
		for (int64_t i = 0; i < n; i++)
			acc[i] += x[i];
	else if (agg == SE_AGG_MAX)
		for (int64_t i = 0; i < n; i++)
			SE_STEP_MAX(acc[i], x[i]);
	else
		for (int64_t i = 0; i < n; i++)
			SE_STEP_MIN(acc[i], x[i]);
}

/* ---------------------------------------------------------------- packed sparse payloads */

/* Row-major output offset step of each loop dim (0 for reduced dims). */
static void
out_strides(const se_kspec *ks, int64_t *oc)
{
	int64_t		step = 1;

	for (int t = ks->ndims - 1; t >= 0; t--)
	{
		oc[t] = t < ks->n_out ? step : 0;
		if (t < ks->n_out)
			step *= ks->dims[t];
	}
}

bool
se_kspec_sparse(const se_kspec *ks, se_sparse *sk)
{
	int64_t		oc[SE_MAXDIMS];
	int			s, d;

	if (ks->arity != 2 || ks->packed[0] == ks->packed[1])
		return false;
	s = ks->packed[0] ? 0 : 1;
	d = 1 - s;
	/* the absent entries' terms must be the aggregate's identity */
#define X_DRIVEN(name, agg_, fill_) || (ks->op == OP_##name && ks->agg == agg_ && ks->fill[s] == fill_)
	if (!(false SE_SPARSE_DRIVEN(X_DRIVEN)))
		return false;
#undef X_DRIVEN
	out_strides(ks, oc);
	memset(sk, 0, sizeof(*sk));
	sk->s = s;
	sk->agg = ks->agg;
	sk->init = ks->agg == SE_AGG_SUM ? 0.0 : ks->fill[s];
	sk->size = ks->need[s];
	sk->dense_size = ks->need[d];
	sk->out_size = ks->out_size;
	for (int t = 0; t < ks->ndims; t++)
	{
		sk->empty |= ks->dims[t] == 0;
		if (ks->dims[t] == 1)
			continue;			/* index 0 only: nothing to decode or loop over */
		if (ks->st[s][t] == 0)
		{
			sk->f_dim[sk->nf] = ks->dims[t];
			sk->f_dst[sk->nf] = ks->st[d][t];
			sk->f_ost[sk->nf++] = oc[t];
			continue;
		}
		/* insertion by decreasing stride */
		{
			int			j = sk->nk++;

			for (; j > 0 && sk->k_st[j - 1] < ks->st[s][t]; j--)
			{
				sk->k_dim[j] = sk->k_dim[j - 1];
				sk->k_st[j] = sk->k_st[j - 1];
				sk->k_dst[j] = sk->k_dst[j - 1];
				sk->k_ost[j] = sk->k_ost[j - 1];
			}
			sk->k_dim[j] = ks->dims[t];
			sk->k_st[j] = ks->st[s][t];
			sk->k_dst[j] = ks->st[d][t];
			sk->k_ost[j] = oc[t];
		}
	}
	/* offsets decode uniquely (greedily) when each stride exceeds the reach of the smaller */
	{
		int64_t		reach = 0;

		for (int j = sk->nk - 1; j >= 0; j--)
		{
			if (sk->k_st[j] <= reach)
				return false;
			reach += sk->k_st[j] * (sk->k_dim[j] - 1);
		}
	}
	return true;
}

/* o[i] = AGG(o[i], v + w[i]) for a min or max of sums (NaN propagating, as NumPy's). */
SE_VECTORIZED static void
sparse_add_agg(int agg, int64_t n, double v, const double *w, int64_t sw, double *o, int64_t so)
{
	if (agg == SE_AGG_MIN)
		for (int64_t i = 0; i < n; i++)
			SE_STEP_MIN(o[i * so], v + w[i * sw]);
	else
		for (int64_t i = 0; i < n; i++)
			SE_STEP_MAX(o[i * so], v + w[i * sw]);
}

/* out[o + i*so] (+)= v (*) w[i*sw] over the free dims from dim f on (the last one
 * innermost): a multiply-add, or for a min or max of sums an add-min or add-max. */
static void
sparse_free_loop(const se_sparse *sk, int f, double v, const double *w, double *o)
{
	const int64_t n = sk->f_dim[f], sw = sk->f_dst[f], so = sk->f_ost[f];

	if (f < sk->nf - 1)
	{
		for (int64_t i = 0; i < n; i++)
			sparse_free_loop(sk, f + 1, v, w + i * sw, o + i * so);
	}
	else if (sk->agg != SE_AGG_SUM)
		sparse_add_agg(sk->agg, n, v, w, sw, o, so);
	else if (sw == 1 && so == 1)
		se_axpy(n, v, w, o);
	else
		for (int64_t i = 0; i < n; i++)
			o[i * so] += v * w[i * sw];
}

void
se_sparse_init(const se_sparse *sk, double *out)
{
	for (int64_t o = 0; o < sk->out_size; o++)
		out[o] = sk->init;
}

bool
se_sparse_run(const se_sparse *sk, const double *packed, int64_t n, const double *dense,
			  double *out, char *err)
{
	if (n % 2)
		return fail(err, "a packed payload has an even length, not %lld", (long long) n);
	se_sparse_init(sk, out);
	return se_sparse_add(sk, packed, n / 2, 0, n / 2, dense, out, err);
}

bool
se_sparse_add(const se_sparse *sk, const double *packed, int64_t nnz, int64_t from, int64_t to,
			  const double *dense, double *out, char *err)
{
	/* the outermost index of the last entry and the offsets it spans: offsets ascend, so
	 * most entries share it and need no division for it */
	int64_t		outer = 0,
				outer_lo = 0,
				outer_hi = 0;

	if (sk->empty)
		return true;
	for (int64_t e = from; e < to; e++)
	{
		const double at = packed[e];
		int64_t		rest, od = 0, oo = 0;
		bool		reached = true;

		if (!(at >= 0 && at < (double) sk->size))
			return fail(err, "offset %g outside a payload of %lld elements", at, (long long) sk->size);
		rest = (int64_t) at;
		for (int j = 0; j < sk->nk && reached; j++)
		{
			int64_t		i;

			if (j > 0 || rest < outer_lo || rest >= outer_hi)
				i = sk->k_st[j] == 1 ? rest : rest / sk->k_st[j];
			else
				i = outer;
			if (j == 0)
			{
				outer = i;
				outer_lo = i * sk->k_st[0];
				outer_hi = outer_lo + sk->k_st[0];
			}

			reached = i < sk->k_dim[j];
			rest -= i * sk->k_st[j];
			od += i * sk->k_dst[j];
			oo += i * sk->k_ost[j];
		}
		if (!reached || rest != 0)
			continue;			/* an element the kernel does not read (off a diagonal) */
		if (sk->nf == 0 && sk->agg == SE_AGG_SUM)
			out[oo] += packed[nnz + e] * dense[od];
		else if (sk->nf == 0 && sk->agg == SE_AGG_MIN)
			SE_STEP_MIN(out[oo], packed[nnz + e] + dense[od]);
		else if (sk->nf == 0)
			SE_STEP_MAX(out[oo], packed[nnz + e] + dense[od]);
		else
			sparse_free_loop(sk, 0, packed[nnz + e], dense + od, out + oo);
	}
	return true;
}

/*
 * The loop dims of sk that step through the dense input (`result` false) or through the
 * result (true), with a stride not 0: the packed input's first, the free ones last. Their
 * sizes go to dims, their strides to st, and where `laid` holds them to to.
 */
static int
strided_dims(const se_sparse *sk, se_sparse *laid, bool result, int64_t *dims, int64_t *st,
			 int64_t **to)
{
	int			nd = 0;

	for (int t = 0; t < sk->nk + sk->nf; t++)
	{
		const bool	k = t < sk->nk;
		const int	i = k ? t : t - sk->nk;
		int64_t    *laid_st = result ? (k ? laid->k_ost : laid->f_ost)
			: (k ? laid->k_dst : laid->f_dst);
		const int64_t *sk_st = result ? (k ? sk->k_ost : sk->f_ost) : (k ? sk->k_dst : sk->f_dst);
		int64_t		s = sk_st[i];

		if (s != 0)
		{
			dims[nd] = k ? sk->k_dim[i] : sk->f_dim[i];
			st[nd] = s;
			to[nd++] = &laid_st[i];
		}
	}
	return nd;
}

/* rows[p] = strided[...] (gather) or strided[...] = rows[p] over dims, rows row-major. */
static void
permute(double *rows, double *strided, const int64_t *dims, const int64_t *st, int nd,
		bool gather)
{
	int64_t		at[2 * SE_MAXDIMS] = {0}, size = 1, src = 0;
	const int	last = nd - 1;

	for (int t = 0; t < nd; t++)
		size *= dims[t];
	for (int64_t done = 0; done < size; done += dims[last])
	{
		if (gather)
			for (int64_t i = 0; i < dims[last]; i++)
				rows[done + i] = strided[src + i * st[last]];
		else
			for (int64_t i = 0; i < dims[last]; i++)
				strided[src + i * st[last]] = rows[done + i];
		for (int t = last - 1; t >= 0; t--)		/* an odometer over the outer dims */
		{
			src += st[t];
			if (++at[t] < dims[t])
				break;
			src -= at[t] * st[t];
			at[t] = 0;
		}
	}
}

/*
 * A row-major copy of the dense input (`result` false) or of the result (true) for the
 * dims strided_dims lists, the innermost free dim contiguous, with *laid reading or
 * writing it; NULL where that dim is contiguous already (or the result empty), where
 * the dims do not cover the array's `size` elements once, where the product reads too
 * few elements to pay for the copy, or where the memory is missing.
 */
static double *
relaid(const se_sparse *sk, int64_t nnz, bool result, int64_t size, se_sparse *laid)
{
	int64_t		dims[2 * SE_MAXDIMS], st[2 * SE_MAXDIMS], step = 1, elements = 1,
				reads = nnz, inner;
	int64_t    *to[2 * SE_MAXDIMS];
	int			nd;

	if (sk->nf == 0 || sk->empty)
		return NULL;
	inner = result ? sk->f_ost[sk->nf - 1] : sk->f_dst[sk->nf - 1];
	if (inner == 0 || inner == 1)
		return NULL;
	nd = strided_dims(sk, laid, result, dims, st, to);
	for (int t = 0; t < nd; t++)
		elements *= dims[t];
	for (int f = 0; f < sk->nf; f++)
		reads *= sk->f_dim[f];
	if (elements != size || (double) reads < 4.0 * (double) size)
		return NULL;
	for (int t = nd - 1; t >= 0; t--)
	{
		*to[t] = step;
		step *= dims[t];
	}
	return (double *) malloc(sizeof(double) * (size_t) size);
}

double *
se_sparse_relayout(const se_sparse *sk, int64_t nnz, const double *dense, se_sparse *laid)
{
	int64_t		dims[2 * SE_MAXDIMS], st[2 * SE_MAXDIMS];
	int64_t    *to[2 * SE_MAXDIMS];
	double	   *copy;

	*laid = *sk;
	copy = relaid(sk, nnz, false, sk->dense_size, laid);
	if (copy == NULL)
		*laid = *sk;
	else
		permute(copy, (double *) dense, dims, st, strided_dims(sk, laid, false, dims, st, to),
				true);
	return copy;
}

double *
se_sparse_result_relayout(const se_sparse *sk, int64_t nnz, se_sparse *laid)
{
	double	   *copy;

	*laid = *sk;
	copy = relaid(sk, nnz, true, sk->out_size, laid);
	if (copy == NULL)
		*laid = *sk;
	return copy;
}

void
se_sparse_result_restore(const se_sparse *sk, const double *rows, double *out)
{
	int64_t		dims[2 * SE_MAXDIMS], st[2 * SE_MAXDIMS];
	int64_t    *to[2 * SE_MAXDIMS];
	se_sparse	unused = *sk;

	permute((double *) rows, out, dims, st, strided_dims(sk, &unused, true, dims, st, to), false);
}

bool
se_sparse_rows_disjoint(const se_sparse *sk)
{
	int64_t		reach = 0;

	if (sk->nk == 0 || sk->k_ost[0] <= 0)
		return false;
	for (int j = 1; j < sk->nk; j++)
		reach += (sk->k_dim[j] - 1) * (sk->k_ost[j] > 0 ? sk->k_ost[j] : -sk->k_ost[j]);
	for (int f = 0; f < sk->nf; f++)
		reach += (sk->f_dim[f] - 1) * (sk->f_ost[f] > 0 ? sk->f_ost[f] : -sk->f_ost[f]);
	return reach < sk->k_ost[0];
}

SE_VECTORIZED int
se_nonfinite(const double *x, int64_t n)
{
	int			any = 0,
				found = 0;

	for (int64_t i = 0; i < n; i++)
		any |= x[i] - x[i] != 0.0;	/* NaN exactly for inf and NaN */
	if (!any)
		return 0;
	for (int64_t i = 0; i < n; i++)
		found |= (x[i] != x[i] ? SE_HAS_NAN : 0) | (x[i] == INFINITY ? SE_HAS_INF : 0) |
			(x[i] == -INFINITY ? SE_HAS_NEG_INF : 0);
	return found;
}

bool
se_sparse_skips(const se_sparse *sk, int nonfinite)
{
	/* 0 * inf is NaN; inf + -inf is NaN; NaN + inf is NaN */
	if (sk->agg == SE_AGG_SUM)
		return nonfinite == 0;
	return !(nonfinite & (SE_HAS_NAN | (sk->init > 0 ? SE_HAS_NEG_INF : SE_HAS_INF)));
}

bool
se_unpack(const double *packed, int64_t n, int64_t size, double fill, double *out, char *err)
{
	const int64_t nnz = n / 2;

	if (n % 2)
		return fail(err, "a packed payload has an even length, not %lld", (long long) n);
	for (int64_t o = 0; o < size; o++)
		out[o] = fill;
	for (int64_t e = 0; e < nnz; e++)
	{
		const double at = packed[e];

		if (!(at >= 0 && at < (double) size))
			return fail(err, "offset %g outside a payload of %lld elements", at, (long long) size);
		out[(int64_t) at] = packed[nnz + e];
	}
	return true;
}

int64_t
se_count_nonzero(const double *x, int64_t n)
{
	int64_t		k = 0;

	for (int64_t i = 0; i < n; i++)
		k += se_stored(x[i]);
	return k;
}

void
se_pack(const double *x, int64_t n, int64_t nnz, double *out)
{
	for (int64_t i = 0, j = 0; i < n; i++)
		if (se_stored(x[i]))
		{
			out[j] = (double) i;
			out[nnz + j] = x[i];
			j++;
		}
}

/* ---------------------------------------------------------------- fused element-wise chains */

#define FUSED_CHUNK 128			/* elements of each intermediate held at once */

static const double fused_zero = 0.0;

/* The operation token `tok` (OP[:C]@R) into token t of fs. */
static bool
parse_fused_op(char *tok, se_fspec *fs, int t, char *err)
{
	char	   *at = strchr(tok, '@'), *colon;
	int			op = -1, arity;

	if (at == NULL)
		return fail(err, "operation \"%s\" has no @RULE", tok);
	*at++ = '\0';
	colon = strchr(tok, ':');
	if (colon)
		*colon = '\0';
	for (int i = 0; i < N_OPS; i++)
		if (strcmp(tok, op_names[i]) == 0)
			op = i;
	if (op < 0)
		return fail(err, "unknown operator \"%s\"", tok);
	if ((op >= SE_FIRST_CONST) != (colon != NULL))
		return colon ? fail(err, "\"%s\" takes no constant", tok)
			: fail(err, "\"%s\" needs a constant (%s:C)", tok, tok);
	if (colon)
	{
		char	   *end;

		fs->c[t] = strtod(colon + 1, &end);
		if (end == colon + 1 || *end != '\0')
			return fail(err, "bad constant \"%s\"", colon + 1);
	}
	fs->op[t] = op;
	arity = op < SE_N_BINARY ? 2 : 1;
	fs->rule[t] = at[0];
	if ((at[0] == 'j' || at[0] == 'f') && at[1] == '\0')
		return true;
	if (at[0] != 'u' || at[1] == '\0')
		return fail(err, "bad rule \"%s\" (j, f or u with operand positions)", at);
	for (const char *p = at + 1; *p; p++)
	{
		if (*p < '0' || *p >= '0' + arity)
			return fail(err, "bad rule \"%s\" for \"%s\" of %d operand(s)", at, tok, arity);
		fs->decides[t] |= (unsigned char) (1u << (*p - '0'));
	}
	return true;
}

bool
se_parse_fspec(const char *spec, size_t len, se_fspec *fs, char *err)
{
	char		buf[SPEC_MAXLEN];
	char	   *f[5], *tok;
	int64_t		n[SE_MAXDIMS];
	int			depth = 0;

	memset(fs, 0, sizeof(*fs));
	err[0] = '\0';
	if (!copy_spec(spec, len, buf, err))
		return false;
	if (split_fields(buf, f, 4) != 4 || strcmp(f[0], "fused") != 0)
		return fail(err, "expected fused;N;LEAF_SIZES;TOKENS");
	if (parse_ints(f[1], n, "N", err) != 1)
		return err[0] ? false : fail(err, "N must be one integer");
	fs->n = n[0];
	fs->nleaves = parse_ints(f[2], fs->leaf_size, "LEAF_SIZES", err);
	if (fs->nleaves < 0)
		return false;
	for (int k = 0; k < fs->nleaves; k++)
		if (fs->leaf_size[k] != fs->n && fs->leaf_size[k] != 1)
			return fail(err, "leaf %d has %lld elements, not N (%lld) or 1", k,
						(long long) fs->leaf_size[k], (long long) fs->n);
	for (tok = f[3]; tok != NULL;)
	{
		char	   *next = strchr(tok, ',');
		int			t = fs->ntok++;

		if (next)
			*next++ = '\0';
		if (t == SE_FUSED_MAX)
			return fail(err, "more than %d tokens", SE_FUSED_MAX);
		fs->leaf[t] = -1;
		if (tok[0] == '$')
		{
			char	   *end;
			long		k = strtol(tok + 1, &end, 10);

			if (end == tok + 1 || *end != '\0' || k < 0 || k >= fs->nleaves)
				return fail(err, "bad leaf \"%s\" (of %d)", tok, fs->nleaves);
			fs->leaf[t] = (int) k;
			if (++depth > fs->depth)
				fs->depth = depth;
		}
		else
		{
			int			arity;

			if (!parse_fused_op(tok, fs, t, err))
				return false;
			arity = fs->op[t] < SE_N_BINARY ? 2 : 1;
			if (depth < arity)
				return fail(err, "\"%s\" needs %d operand(s), the stack holds %d",
							op_names[fs->op[t]], arity, depth);
			depth -= arity - 1;
		}
		tok = next;
	}
	if (depth != 1 || fs->leaf[fs->ntok - 1] >= 0)
		return fail(err, "the tokens must end in an operation leaving one value (they leave %d)",
					depth);
	return true;
}

bool
se_run_fused(const se_fspec *fs, const double *const *leaves, double *out)
{
	bool		present[SE_FUSED_MAX], stack[SE_FUSED_MAX];
	double		buf[SE_FUSED_MAX][FUSED_CHUNK];
	int			sp = 0;

	/* which results are present: a missing one-tuple relation reads as zeros */
	for (int t = 0; t < fs->ntok; t++)
	{
		int			arity;

		if (fs->leaf[t] >= 0)
		{
			present[t] = stack[sp++] = leaves[fs->leaf[t]] != NULL;
			continue;
		}
		arity = fs->op[t] < SE_N_BINARY ? 2 : 1;
		sp -= arity;
		if (fs->rule[t] == 'f')
			present[t] = true;
		else if (fs->rule[t] == 'j')
			present[t] = stack[sp] && (arity == 1 || stack[sp + 1]);
		else
			present[t] = ((fs->decides[t] & 1) && stack[sp]) ||
				((fs->decides[t] & 2) && stack[sp + 1]);
		stack[sp++] = present[t];
	}
	if (!present[fs->ntok - 1])
		return false;
	for (int64_t lo = 0; lo < fs->n; lo += FUSED_CHUNK)
	{
		const int64_t m = fs->n - lo < FUSED_CHUNK ? fs->n - lo : FUSED_CHUNK;
		const double *ptr[SE_FUSED_MAX];
		int64_t		st[SE_FUSED_MAX];

		sp = 0;
		for (int t = 0; t < fs->ntok; t++)
		{
			const double *x;
			int			arity;

			if (fs->leaf[t] >= 0)
			{
				x = leaves[fs->leaf[t]];
				ptr[sp] = x == NULL ? &fused_zero : fs->leaf_size[fs->leaf[t]] == 1 ? x : x + lo;
				st[sp++] = x != NULL && fs->leaf_size[fs->leaf[t]] != 1;
				continue;
			}
			arity = fs->op[t] < SE_N_BINARY ? 2 : 1;
			sp -= arity;
			if (!present[t])
			{
				ptr[sp] = &fused_zero;
				st[sp++] = 0;
				continue;
			}
			{
				double	   *dst = t == fs->ntok - 1 ? out + lo : buf[sp];

				map_tab[fs->op[t]] (dst, ptr[sp], st[sp], arity == 2 ? ptr[sp + 1] : &fused_zero,
									arity == 2 ? st[sp + 1] : 0, m, fs->c[t]);
				ptr[sp] = dst;
				st[sp++] = 1;
			}
		}
	}
	return true;
}
