/*
 * Aggregates over DOUBLE[] values.
 *
 *   se_vsum(v), se_vmax(v), se_vmin(v)   element-wise SUM / MAX / MIN (NaN propagates)
 *   se_wsum(w, v)                        element-wise SUM of w * v, without forming w * v
 *   se_stack(gspec, val, pos)            scatters each sub-tensor val (DOUBLE[] or DOUBLE)
 *                                        to position pos of a zero tensor of SIZE elements
 *   se_stack_packed(pos, val)            packs scalars val at flat positions pos into a
 *                                        packed sparse payload (positions sorted, then values)
 *   se_ksum(spec, a, b)                  element-wise SUM of a product-sum kernel's results
 *                                        (se_kernel2(spec, a, b)), without forming them: a
 *                                        run of rows of one group that is a matrix product
 *                                        is one product over the rows stacked (a row of A^T
 *                                        B per row: the contraction over the group's rows)
 *
 * A group's state is one array allocated on its first row (never per row), outside
 * DuckDB's buffer manager: it cannot spill, so the planner bounds groups x state size.
 * Combine adds states, so parallel aggregation works. NULL values are skipped (a NULL
 * sub-tensor of se_stack is all zeros); an empty group gives NULL.
 */
#include "se_duckdb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vagg_info
{
	const char *name;
	int			agg;
	bool		weighted;		/* se_wsum: column 0 is the weight */
} vagg_info;

static const vagg_info VSUM = {"se_vsum", SE_AGG_SUM, false};
static const vagg_info VMAX = {"se_vmax", SE_AGG_MAX, false};
static const vagg_info VMIN = {"se_vmin", SE_AGG_MIN, false};
static const vagg_info WSUM = {"se_wsum", SE_AGG_SUM, true};
static const vagg_info KSUM = {"se_ksum", SE_AGG_SUM, false};	/* its combine */

/* Report an error through DuckDB (raised when the callback returns). */
static void
agg_error(duckdb_function_info info, const char *fmt,...)
{
	char		msg[SE_ERRLEN + 128];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	duckdb_aggregate_function_set_error(info, msg);
}

#define FAIL(...) do { agg_error(__VA_ARGS__); return; } while (0)

/* Append `count` arrays (NULL data: a NULL row) to a DOUBLE[] result from row offset on. */
static bool
write_lists(duckdb_function_info info, duckdb_vector result, idx_t count, idx_t offset,
			double *const *data, const int64_t *lens)
{
	idx_t		total = 0, base, pos;
	double	   *out;
	duckdb_list_entry *entries;

	for (idx_t i = 0; i < count; i++)
		total += data[i] ? (idx_t) lens[i] : 0;
	out = se_list_reserve(result, total, &base);
	if (out == NULL)
	{
		agg_error(info, "cannot allocate a result of %llu doubles", (unsigned long long) total);
		return false;
	}
	entries = (duckdb_list_entry *) duckdb_vector_get_data(result);
	pos = base;
	for (idx_t i = 0; i < count; i++)
	{
		entries[offset + i].offset = pos;
		entries[offset + i].length = data[i] ? (idx_t) lens[i] : 0;
		if (data[i] == NULL)
		{
			duckdb_vector_ensure_validity_writable(result);
			duckdb_validity_set_row_invalid(duckdb_vector_get_validity(result), offset + i);
			continue;
		}
		memcpy(out + (pos - base), data[i], sizeof(double) * (size_t) lens[i]);
		pos += (idx_t) lens[i];
	}
	se_list_done(result, pos);
	return true;
}

/* ---------------------------------------------------------------- se_vsum / se_vmax / se_vmin / se_wsum */

typedef struct vstate
{
	double	   *v;
	int64_t		len;
} vstate;

static idx_t
vstate_size(duckdb_function_info info)
{
	(void) info;
	return sizeof(vstate);
}

static void
vstate_init(duckdb_function_info info, duckdb_aggregate_state state)
{
	(void) info;
	memset(state, 0, sizeof(vstate));
}

static void
vstate_destroy(duckdb_aggregate_state *states, idx_t count)
{
	for (idx_t i = 0; i < count; i++)
	{
		vstate	   *st = (vstate *) states[i];

		free(st->v);
		st->v = NULL;
	}
}

/* A new state array holding x (or w * x); false when out of memory. */
static bool
vstate_start(vstate *st, const double *x, int64_t len, const double *w)
{
	st->v = (double *) malloc(sizeof(double) * (size_t) (len > 0 ? len : 1));
	if (st->v == NULL)
		return false;
	st->len = len;
	if (w)
		for (int64_t i = 0; i < len; i++)
			st->v[i] = *w * x[i];
	else
		memcpy(st->v, x, sizeof(double) * (size_t) len);
	return true;
}

static void
vagg_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states)
{
	const vagg_info *ai = (const vagg_info *) duckdb_aggregate_function_get_extra_info(info);
	idx_t		n = duckdb_data_chunk_get_size(input);
	se_arg		w, x;

	if (ai->weighted)
		se_arg_init(&w, input, 0, false);
	se_arg_init(&x, input, ai->weighted ? 1 : 0, true);
	for (idx_t row = 0; row < n; row++)
	{
		vstate	   *st = (vstate *) states[row];
		const double *xv, *wv = NULL;
		int64_t		len, one;
		bool		bad = false;

		if (!se_arg_row(&x, row, &xv, &len, &bad) || (ai->weighted && !se_arg_row(&w, row, &wv, &one, &bad)))
			continue;
		if (bad)
			FAIL(info, "%s: an array contains NULL elements", ai->name);
		if (st->v == NULL)
		{
			if (!vstate_start(st, xv, len, wv))
				FAIL(info, "%s: out of memory for a state of %lld doubles", ai->name, (long long) len);
			continue;
		}
		if (st->len != len)
			FAIL(info, "%s: arrays in one group must have the same length (%lld and %lld)",
							 ai->name, (long long) st->len, (long long) len);
		if (wv)
			se_axpy(len, *wv, xv, st->v);
		else
			se_vagg_update(ai->agg, st->v, xv, len);
	}
}

static void
vagg_combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
			 idx_t count)
{
	const vagg_info *ai = (const vagg_info *) duckdb_aggregate_function_get_extra_info(info);

	for (idx_t i = 0; i < count; i++)
	{
		vstate	   *s = (vstate *) source[i], *t = (vstate *) target[i];

		if (s->v == NULL)
			continue;
		if (t->v == NULL)
		{
			if (!vstate_start(t, s->v, s->len, NULL))
				FAIL(info, "%s: out of memory for a state of %lld doubles", ai->name, (long long) s->len);
			continue;
		}
		if (t->len != s->len)
			FAIL(info, "%s: arrays in one group must have the same length (%lld and %lld)",
							 ai->name, (long long) t->len, (long long) s->len);
		se_vagg_update(ai->agg, t->v, s->v, s->len);
	}
}

/* The arrays of the states (vstate, or a state that begins with one) as DOUBLE[] rows. */
static void
array_finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result,
			   idx_t count, idx_t offset)
{
	for (idx_t done = 0; done < count;)
	{
		double	   *data[64];
		int64_t		lens[64];
		idx_t		m = count - done < 64 ? count - done : 64;

		for (idx_t i = 0; i < m; i++)
		{
			data[i] = ((vstate *) source[done + i])->v;
			lens[i] = ((vstate *) source[done + i])->len;
		}
		if (!write_lists(info, result, m, offset + done, data, lens))
			return;
		done += m;
	}
}

/* ---------------------------------------------------------------- se_stack */

typedef struct sstate
{
	vstate		array;			/* SIZE elements (first: finalize reads states as vstate) */
	double		fill;			/* what no sub-tensor wrote holds (the spec's FILL) */
	char	   *spec;			/* the group's spec text, to check it does not change */
	uint32_t	spec_len;
} sstate;

static idx_t
sstate_size(duckdb_function_info info)
{
	(void) info;
	return sizeof(sstate);
}

static void
sstate_init(duckdb_function_info info, duckdb_aggregate_state state)
{
	(void) info;
	memset(state, 0, sizeof(sstate));
}

static void
sstate_destroy(duckdb_aggregate_state *states, idx_t count)
{
	for (idx_t i = 0; i < count; i++)
	{
		sstate	   *st = (sstate *) states[i];

		free(st->array.v);
		free(st->spec);
		st->array.v = NULL;
		st->spec = NULL;
	}
}

static bool
sstate_start(sstate *st, int64_t size, double fill, const char *spec, uint32_t spec_len)
{
	st->array.v = (double *) calloc((size_t) (size > 0 ? size : 1), sizeof(double));
	st->spec = (char *) malloc(spec_len + 1);
	if (st->array.v == NULL || st->spec == NULL)
		return false;
	for (int64_t e = 0; fill != 0.0 && e < size; e++)
		st->array.v[e] = fill;
	st->fill = fill;
	st->array.len = size;
	memcpy(st->spec, spec, spec_len);
	st->spec[spec_len] = '\0';
	st->spec_len = spec_len;
	return true;
}

static void
stack_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states)
{
	const bool *val_is_list = (const bool *) duckdb_aggregate_function_get_extra_info(info);
	idx_t		n = duckdb_data_chunk_get_size(input);
	se_arg		val;
	const int64_t *pos = (const int64_t *) duckdb_vector_get_data(duckdb_data_chunk_get_vector(input, 2));
	uint64_t   *pos_valid = duckdb_vector_get_validity(duckdb_data_chunk_get_vector(input, 2));
	uint64_t   *spec_valid = duckdb_vector_get_validity(duckdb_data_chunk_get_vector(input, 0));
	const char *spec = NULL;
	uint32_t	spec_len = 0;
	se_gspec	g;
	int64_t    *suboff = NULL;
	char		err[SE_ERRLEN];

	se_arg_init(&val, input, 1, *val_is_list);
	for (idx_t row = 0; row < n; row++)
	{
		sstate	   *st = (sstate *) states[row];
		const char *text;
		uint32_t	len;
		const double *x;
		int64_t		xlen, base;
		bool		bad = false;

		if (spec_valid && !duckdb_validity_row_is_valid(spec_valid, row))
			continue;
		se_text(input, 0, row, &text, &len);
		if (spec == NULL || len != spec_len || memcmp(text, spec, len) != 0)
		{
			free(suboff);
			suboff = NULL;
			if (!se_parse_gspec(text, len, &g, err))
				FAIL(info, "se_stack: invalid gather spec \"%.*s\": %s", (int) len, text, err);
			suboff = (int64_t *) malloc(sizeof(int64_t) * (size_t) (g.sub_size > 0 ? g.sub_size : 1));
			if (suboff == NULL)
				FAIL(info, "se_stack: out of memory");
			se_gspec_suboffsets(&g, suboff);
			spec = text;
			spec_len = len;
		}
		if (st->array.v == NULL && !sstate_start(st, g.size, g.fill, text, len))
		{
			free(suboff);
			FAIL(info, "se_stack: out of memory for a state of %lld doubles", (long long) g.size);
		}
		if (st->spec_len != len || memcmp(st->spec, text, len) != 0)
		{
			agg_error(info, "se_stack: the spec changes within a group (\"%s\" and \"%.*s\")", st->spec, (int) len, text);
			break;
		}
		if (!se_arg_row(&val, row, &x, &xlen, &bad))
			continue;			/* an all-zero sub-tensor */
		if (bad || (pos_valid && !duckdb_validity_row_is_valid(pos_valid, row)))
		{
			agg_error(info, "se_stack: %s is NULL", bad ? "an element of val" : "pos");
			break;
		}
		if (xlen != g.sub_size)
		{
			agg_error(info, "se_stack: val has %lld elements but spec \"%s\" has sub-tensors of %lld",
					  (long long) xlen, st->spec, (long long) g.sub_size);
			break;
		}
		if (pos[row] < 0 || pos[row] >= g.positions)
		{
			agg_error(info, "se_stack: position %lld out of range 0..%lld of spec \"%s\"",
					  (long long) pos[row], (long long) g.positions - 1, st->spec);
			break;
		}
		base = se_gspec_base(&g, pos[row]);
		for (int64_t e = 0; e < xlen; e++)
			st->array.v[base + suboff[e]] = x[e];
	}
	free(suboff);
}

static void
stack_combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
			  idx_t count)
{
	for (idx_t i = 0; i < count; i++)
	{
		sstate	   *s = (sstate *) source[i], *t = (sstate *) target[i];

		if (s->array.v == NULL)
			continue;
		if (t->array.v == NULL)
		{
			if (!sstate_start(t, s->array.len, s->fill, s->spec, s->spec_len))
				FAIL(info, "se_stack: out of memory for a state of %lld doubles", (long long) s->array.len);
			memcpy(t->array.v, s->array.v, sizeof(double) * (size_t) s->array.len);
			continue;
		}
		if (t->spec_len != s->spec_len || memcmp(t->spec, s->spec, s->spec_len) != 0)
			FAIL(info, "se_stack: the spec changes within a group (\"%s\" and \"%s\")", t->spec, s->spec);
		/* positions of one group are disjoint: each element was written by at most one
		 * state, and what a state did not write is the fill; so the other state's element
		 * is kept unless it is the fill (for fill 0, unless +0.0: a sum would turn a -0.0
		 * written by one state into +0.0) */
		for (int64_t e = 0; e < s->array.len; e++)
			if (se_differs(s->array.v[e], s->fill))
				t->array.v[e] = s->array.v[e];
	}
}

/* ---------------------------------------------------------------- se_stack_packed */

typedef struct pos_val
{
	int64_t		pos;
	double		val;
} pos_val;

/* The group's (position, value) pairs in arrival order; sorted at finalize. */
typedef struct pstate
{
	pos_val    *items;
	int64_t		n;
	int64_t		cap;
} pstate;

static idx_t
pstate_size(duckdb_function_info info)
{
	(void) info;
	return sizeof(pstate);
}

static void
pstate_init(duckdb_function_info info, duckdb_aggregate_state state)
{
	(void) info;
	memset(state, 0, sizeof(pstate));
}

static void
pstate_destroy(duckdb_aggregate_state *states, idx_t count)
{
	for (idx_t i = 0; i < count; i++)
	{
		pstate	   *st = (pstate *) states[i];

		free(st->items);
		st->items = NULL;
	}
}

/* Room for `more` pairs (the capacity doubles: amortised constant per row). */
static bool
pstate_reserve(pstate *st, int64_t more)
{
	int64_t		cap = st->cap > 0 ? st->cap : 1024;
	pos_val    *items;

	if (st->n + more <= st->cap)
		return true;
	while (cap < st->n + more)
		cap *= 2;
	items = (pos_val *) realloc(st->items, sizeof(pos_val) * (size_t) cap);
	if (items == NULL)
		return false;
	st->items = items;
	st->cap = cap;
	return true;
}

static void
packed_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states)
{
	idx_t		n = duckdb_data_chunk_get_size(input);
	duckdb_vector pos_vec = duckdb_data_chunk_get_vector(input, 0),
				val_vec = duckdb_data_chunk_get_vector(input, 1);
	const int64_t *pos = (const int64_t *) duckdb_vector_get_data(pos_vec);
	const double *val = (const double *) duckdb_vector_get_data(val_vec);
	uint64_t   *pos_valid = duckdb_vector_get_validity(pos_vec),
			   *val_valid = duckdb_vector_get_validity(val_vec);

	for (idx_t row = 0; row < n; row++)
	{
		pstate	   *st = (pstate *) states[row];

		if ((pos_valid && !duckdb_validity_row_is_valid(pos_valid, row)) ||
			(val_valid && !duckdb_validity_row_is_valid(val_valid, row)))
			FAIL(info, "se_stack_packed: %s is NULL",
				 pos_valid && !duckdb_validity_row_is_valid(pos_valid, row) ? "pos" : "val");
		if (pos[row] < 0)
			FAIL(info, "se_stack_packed: negative position %lld", (long long) pos[row]);
		if (!pstate_reserve(st, 1))
			FAIL(info, "se_stack_packed: out of memory for %lld values", (long long) st->n + 1);
		st->items[st->n].pos = pos[row];
		st->items[st->n].val = val[row];
		st->n++;
	}
}

static void
packed_combine(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_aggregate_state *target,
			   idx_t count)
{
	for (idx_t i = 0; i < count; i++)
	{
		pstate	   *s = (pstate *) source[i], *t = (pstate *) target[i];

		if (s->n == 0)
			continue;
		if (!pstate_reserve(t, s->n))
			FAIL(info, "se_stack_packed: out of memory for %lld values", (long long) (t->n + s->n));
		memcpy(t->items + t->n, s->items, sizeof(pos_val) * (size_t) s->n);
		t->n += s->n;
	}
}

/* Sort pairs by position: LSD radix sort over the bits the largest position uses (11 bits
 * a pass, stable), into and back out of `tmp` (n pairs). */
static void
sort_by_position(pos_val *items, pos_val *tmp, int64_t n)
{
	enum {BITS = 11, BUCKETS = 1 << BITS};
	int64_t		max = 0;
	pos_val    *from = items, *to = tmp;

	for (int64_t k = 0; k < n; k++)
		if (items[k].pos > max)
			max = items[k].pos;
	for (int shift = 0; shift < 64 && (max >> shift) > 0; shift += BITS)
	{
		int64_t		start[BUCKETS] = {0}, sum = 0;

		for (int64_t k = 0; k < n; k++)
			start[(from[k].pos >> shift) & (BUCKETS - 1)]++;
		for (int b = 0; b < BUCKETS; b++)
		{
			int64_t		c = start[b];

			start[b] = sum;
			sum += c;
		}
		for (int64_t k = 0; k < n; k++)
			to[start[(from[k].pos >> shift) & (BUCKETS - 1)]++] = from[k];
		from = to;
		to = from == items ? tmp : items;
	}
	if (from != items)
		memcpy(items, from, sizeof(pos_val) * (size_t) n);
}

static void
packed_finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result,
				idx_t count, idx_t offset)
{
	for (idx_t i = 0; i < count; i++)
	{
		pstate	   *st = (pstate *) source[i];
		double	   *out = NULL;
		int64_t		len = 2 * st->n;
		bool		sorted = true;

		for (int64_t k = 1; k < st->n && sorted; k++)
			sorted = st->items[k - 1].pos < st->items[k].pos;
		if (!sorted)
		{
			pos_val    *tmp = (pos_val *) malloc(sizeof(pos_val) * (size_t) st->n);

			if (tmp == NULL)
				FAIL(info, "se_stack_packed: out of memory to sort %lld values", (long long) st->n);
			sort_by_position(st->items, tmp, st->n);
			free(tmp);
		}
		for (int64_t k = 1; k < st->n; k++)
			if (st->items[k - 1].pos == st->items[k].pos)
				FAIL(info, "se_stack_packed: position %lld appears twice in one group",
					 (long long) st->items[k].pos);
		if (st->n > 0)
		{
			out = (double *) malloc(sizeof(double) * (size_t) len);
			if (out == NULL)
				FAIL(info, "se_stack_packed: out of memory for a payload of %lld doubles", (long long) len);
			for (int64_t k = 0; k < st->n; k++)
			{
				out[k] = (double) st->items[k].pos;
				out[st->n + k] = st->items[k].val;
			}
		}
		if (!write_lists(info, result, 1, offset + i, &out, &len))
		{
			free(out);
			return;
		}
		free(out);
	}
}

/* ---------------------------------------------------------------- se_ksum */

#define KSUM_BUFFER (1 << 20)	/* doubles of the stacked rows of one product (8 MiB) */

typedef struct ksum_row
{
	vstate	   *st;
	const double *a, *b;
} ksum_row;

static int
by_state(const void *x, const void *y)
{
	const vstate *s = ((const ksum_row *) x)->st, *t = ((const ksum_row *) y)->st;

	return s < t ? -1 : s > t;
}

/* The state of `st` started as out_size zeros; false when out of memory. */
static bool
kstate_start(vstate *st, int64_t out_size)
{
	st->v = (double *) calloc((size_t) (out_size > 0 ? out_size : 1), sizeof(double));
	st->len = out_size;
	return st->v != NULL;
}

/* Rows [lo, hi) of one state, a matrix product each: their a^T and b stacked along k into
 * at and bt (at most `cap` stacked rows at a time), each stack added in one product. */
static void
ksum_stacked(const se_gemm *g, const ksum_row *rows, idx_t lo, idx_t hi, double *at, double *bt,
			 int64_t cap)
{
	int64_t		used = 0;

	for (idx_t r = lo; r < hi; r++)
	{
		for (int64_t kk = 0; kk < g->k; kk++, used++)
		{
			for (int64_t i = 0; i < g->m; i++)
				at[used * g->m + i] = rows[r].a[i * g->a_m + kk * g->a_k];
			for (int64_t j = 0; j < g->n; j++)
				bt[used * g->n + j] = rows[r].b[kk * g->b_k + j * g->b_n];
		}
		if (used + g->k > cap || r + 1 == hi)
		{
			se_gemm_tn_add(g->m, g->n, used, at, bt, rows[lo].st->v, g->c_m, g->c_n);
			used = 0;
		}
	}
}

/* The chunk's rows sorted by state; each state's rows, where the kernel is a matrix
 * product, one product of the rows stacked (else the kernel per row, added). */
static void
ksum_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states)
{
	idx_t		n = duckdb_data_chunk_get_size(input), valid = 0;
	se_arg		args[2];
	se_kspec	ks;
	se_gemm		g;
	char		err[SE_ERRLEN];
	const char *text = NULL;
	uint32_t	len = 0;
	ksum_row   *rows = NULL;
	double	   *scratch = NULL, *at = NULL;
	int64_t		cap = 0;
	bool		stacked;

	if (n == 0)
		return;
	se_arg_init(&args[0], input, 1, true);
	se_arg_init(&args[1], input, 2, true);
	se_text(input, 0, 0, &text, &len);
	if (text == NULL)
		FAIL(info, "se_ksum: the spec is NULL");
	if (!se_parse_kspec(text, len, &ks, err))
		FAIL(info, "se_ksum: invalid kernel spec \"%.*s\": %s", (int) len, text, err);
	if (!se_kspec_product_sum(&ks) || ks.packed[0] || ks.packed[1])
		FAIL(info, "se_ksum: spec \"%.*s\" is not a product-sum of two dense arrays", (int) len, text);
	if ((rows = (ksum_row *) malloc(n * sizeof(ksum_row))) == NULL)
		FAIL(info, "se_ksum: out of memory");
	for (idx_t row = 0; row < n; row++)
	{
		const char *t;
		uint32_t	tl;
		const double *in[2];
		int64_t		nk[2];
		bool		bad = false;

		se_text(input, 0, row, &t, &tl);
		if (t == NULL || tl != len || memcmp(t, text, len) != 0)
		{
			agg_error(info, "se_ksum: the spec changes within a chunk (\"%.*s\")", (int) len, text);
			goto done;
		}
		if (!se_arg_row(&args[0], row, &in[0], &nk[0], &bad) || !se_arg_row(&args[1], row, &in[1], &nk[1], &bad))
			continue;			/* a NULL array adds nothing */
		if (bad)
		{
			agg_error(info, "se_ksum: an array contains NULL elements");
			goto done;
		}
		for (int k = 0; k < 2; k++)
			if (nk[k] < ks.need[k])
			{
				agg_error(info, "se_ksum: input %s has %lld elements but spec \"%.*s\" reads %lld",
						  k ? "b" : "a", (long long) nk[k], (int) len, text, (long long) ks.need[k]);
				goto done;
			}
		rows[valid].st = (vstate *) states[row];
		if (rows[valid].st->v == NULL && !kstate_start(rows[valid].st, ks.out_size))
		{
			agg_error(info, "se_ksum: out of memory for a state of %lld doubles", (long long) ks.out_size);
			goto done;
		}
		rows[valid].a = in[0];
		rows[valid++].b = in[1];
	}
	qsort(rows, valid, sizeof(ksum_row), by_state);
	stacked = se_kspec_gemm(&ks, &g) && g.batch == 1;
	if (stacked)
	{
		cap = KSUM_BUFFER / (g.m + g.n) > g.k ? KSUM_BUFFER / (g.m + g.n) : g.k;
		at = (double *) malloc(sizeof(double) * (size_t) (cap * (g.m + g.n)));
	}
	else
		scratch = (double *) malloc(sizeof(double) * (size_t) (ks.out_size > 0 ? ks.out_size : 1));
	if (at == NULL && scratch == NULL)
	{
		agg_error(info, "se_ksum: out of memory");
		goto done;
	}
	for (idx_t row = 0; row < valid;)
	{
		idx_t		end = row + 1;

		while (end < valid && rows[end].st == rows[row].st)
			end++;
		if (stacked)
			ksum_stacked(&g, rows, row, end, at, at + cap * g.m, cap);
		else
			for (idx_t r = row; r < end; r++)
			{
				se_run_kernel(&ks, rows[r].a, rows[r].b, scratch);
				se_vagg_update(SE_AGG_SUM, rows[r].st->v, scratch, ks.out_size);
			}
		row = end;
	}
done:
	free(rows);
	free(scratch);
	free(at);
}

/* ---------------------------------------------------------------- registration */

typedef struct agg_def
{
	duckdb_aggregate_state_size size;
	duckdb_aggregate_init_t init;
	duckdb_aggregate_update_t update;
	duckdb_aggregate_combine_t combine;
	duckdb_aggregate_finalize_t finalize;
	duckdb_aggregate_destroy_t destroy;
} agg_def;

static const agg_def VAGG = {vstate_size, vstate_init, vagg_update, vagg_combine, array_finalize, vstate_destroy};
static const agg_def STACK = {sstate_size, sstate_init, stack_update, stack_combine, array_finalize, sstate_destroy};
static const agg_def PACKED = {pstate_size, pstate_init, packed_update, packed_combine, packed_finalize, pstate_destroy};
static const agg_def KSUM_AGG = {vstate_size, vstate_init, ksum_update, vagg_combine, array_finalize, vstate_destroy};

/* One overload: parameters are DOUBLE (0), DOUBLE[] (1) or VARCHAR (2), BIGINT (3). */
static bool
add_overload(duckdb_aggregate_function_set set, const char *name, const agg_def *def,
			 const int *params, int nparams, const void *extra)
{
	duckdb_aggregate_function f = duckdb_create_aggregate_function();
	duckdb_logical_type ret = se_type(true);
	bool		ok;

	duckdb_aggregate_function_set_name(f, name);
	for (int k = 0; k < nparams; k++)
	{
		duckdb_logical_type t = params[k] < 2 ? se_type(params[k] == 1) :
			duckdb_create_logical_type(params[k] == 2 ? DUCKDB_TYPE_VARCHAR : DUCKDB_TYPE_BIGINT);

		duckdb_aggregate_function_add_parameter(f, t);
		duckdb_destroy_logical_type(&t);
	}
	duckdb_aggregate_function_set_return_type(f, ret);
	duckdb_aggregate_function_set_functions(f, def->size, def->init, def->update, def->combine, def->finalize);
	duckdb_aggregate_function_set_destructor(f, def->destroy);
	duckdb_aggregate_function_set_extra_info(f, (void *) extra, NULL);
	ok = duckdb_add_aggregate_function_to_set(set, f) == DuckDBSuccess;
	duckdb_destroy_logical_type(&ret);
	duckdb_destroy_aggregate_function(&f);
	return ok;
}

static const bool IS_LIST = true, IS_SCALAR = false;

bool
se_register_aggregates(duckdb_connection con)
{
	static const int vec[] = {1}, wvec[] = {0, 1}, stack_list[] = {2, 1, 3}, stack_scalar[] = {2, 0, 3},
				packed[] = {3, 0}, ksum[] = {2, 1, 1};
	const vagg_info *vaggs[] = {&VSUM, &VMAX, &VMIN, &WSUM};
	bool		ok = true;

	for (int i = 0; i < 4; i++)
	{
		duckdb_aggregate_function_set set = duckdb_create_aggregate_function_set(vaggs[i]->name);

		ok = ok && add_overload(set, vaggs[i]->name, &VAGG, vaggs[i]->weighted ? wvec : vec,
								vaggs[i]->weighted ? 2 : 1, vaggs[i]);
		ok = ok && duckdb_register_aggregate_function_set(con, set) == DuckDBSuccess;
		duckdb_destroy_aggregate_function_set(&set);
	}
	{
		duckdb_aggregate_function_set set = duckdb_create_aggregate_function_set("se_stack");

		ok = ok && add_overload(set, "se_stack", &STACK, stack_list, 3, &IS_LIST);
		ok = ok && add_overload(set, "se_stack", &STACK, stack_scalar, 3, &IS_SCALAR);
		ok = ok && duckdb_register_aggregate_function_set(con, set) == DuckDBSuccess;
		duckdb_destroy_aggregate_function_set(&set);
	}
	{
		duckdb_aggregate_function_set set = duckdb_create_aggregate_function_set("se_stack_packed");

		ok = ok && add_overload(set, "se_stack_packed", &PACKED, packed, 2, NULL);
		ok = ok && duckdb_register_aggregate_function_set(con, set) == DuckDBSuccess;
		duckdb_destroy_aggregate_function_set(&set);
	}
	{
		duckdb_aggregate_function_set set = duckdb_create_aggregate_function_set("se_ksum");

		ok = ok && add_overload(set, "se_ksum", &KSUM_AGG, ksum, 3, &KSUM);
		ok = ok && duckdb_register_aggregate_function_set(con, set) == DuckDBSuccess;
		duckdb_destroy_aggregate_function_set(&set);
	}
	return ok;
}
