/*
 * se_threads: one big kernel call split over threads, shared by the PostgreSQL and the
 * DuckDB extension. A plan that holds a whole matrix in one tuple makes one call, which
 * the engine runs on one of its threads (PostgreSQL: its only one); a call of more than
 * 2 x SE_WORK_PER_THREAD multiply-adds is cut into parts that one thread per core
 * computes at once, each writing its own part of the result. The threads run C loops and
 * BLAS on one thread only (no engine function, no allocation through the engine) with
 * every signal blocked, so that the engine's signal handlers run on its own thread.
 */
#include "se_kernel.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SE_WORK_PER_THREAD (1 << 21)
#define SE_MAX_THREADS 8

/* The cores online (at most SE_MAX_THREADS), asked once: sysconf reads a file each time. */
static int
online_cpus(void)
{
	static int	cpus = 0;		/* a race writes the same value */

	if (cpus == 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		cpus = n < 1 ? 1 : n > SE_MAX_THREADS ? SE_MAX_THREADS : (int) n;
	}
	return cpus;
}

/* How many threads `work` multiply-adds are worth, at most `parts` (1: the caller alone). */
static int
threads_for(double work, int64_t parts)
{
	int			count = online_cpus();

	if (work < 2.0 * SE_WORK_PER_THREAD)
		return 1;
	if (work / SE_WORK_PER_THREAD < count)
		count = (int) (work / SE_WORK_PER_THREAD);
	return parts < count ? (int) parts : count;
}

/* fn on each of parts[0..count) (`size` bytes each): parts 1.. on threads of their own
 * (started with every signal blocked; in the caller where a thread does not start), part
 * 0 in the caller. */
static void
run_parallel(void *(*fn) (void *), char *parts, size_t size, int count)
{
	pthread_t	ids[SE_MAX_THREADS];
	bool		started[SE_MAX_THREADS] = {false};
	sigset_t	all, before;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &before);
	for (int t = 1; t < count; t++)
		started[t] = pthread_create(&ids[t], NULL, fn, parts + t * size) == 0;
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	fn(parts);
	for (int t = 1; t < count; t++)
	{
		if (started[t])
			pthread_join(ids[t], NULL);
		else
			fn(parts + t * size);
	}
}

/* ---------------------------------------------------------------- matrix products */

typedef struct gemm_part
{
	se_gemm		g;
	const double *a, *b;
	double	   *c;
	bool		blas;
} gemm_part;

static void
gemm_one(const se_gemm *g, const double *a, const double *b, double *c, bool blas)
{
	if (!blas || se_blas_name == NULL || !se_gemm_blas(g, a, b, c))
		se_gemm_run(g, a, b, c);
}

static void *
gemm_part_run(void *arg)
{
	gemm_part  *p = (gemm_part *) arg;

	gemm_one(&p->g, p->a, p->b, p->c, p->blas);
	return NULL;
}

void
se_gemm_threaded(const se_gemm *g, const double *a, const double *b, double *c, bool blas)
{
	gemm_part	parts[SE_MAX_THREADS];
	const bool	by_rows = g->m >= g->n;		/* blocks of rows, or of columns when more */
	const int64_t along = by_rows ? g->m : g->n;
	const int	count = threads_for((double) g->batch * g->m * g->n * g->k, along);

	if (count < 2)
	{
		gemm_one(g, a, b, c, blas);
		return;
	}
	for (int t = 0; t < count; t++)
	{
		const int64_t lo = along * t / count, hi = along * (t + 1) / count;

		parts[t] = (gemm_part) {*g, a, b, c, blas};
		if (by_rows)
		{
			parts[t].g.m = hi - lo;
			parts[t].a += lo * g->a_m;
			parts[t].c += lo * g->c_m;
		}
		else
		{
			parts[t].g.n = hi - lo;
			parts[t].b += lo * g->b_n;
			parts[t].c += lo * g->c_n;
		}
	}
	run_parallel(gemm_part_run, (char *) parts, sizeof(gemm_part), count);
}

/* ---------------------------------------------------------------- packed x dense */

typedef struct sparse_part
{
	const se_sparse *sk;
	const double *packed, *dense;
	int64_t		nnz, from, to;
	double	   *out;
	bool		ok;
	char		err[SE_ERRLEN];
} sparse_part;

static void *
sparse_part_run(void *arg)
{
	sparse_part *p = (sparse_part *) arg;

	p->ok = se_sparse_add(p->sk, p->packed, p->nnz, p->from, p->to, p->dense, p->out, p->err);
	return NULL;
}

/* The packed input's element e's index on its outermost dim (-1 when out of range). */
static int64_t
outer_index(const se_sparse *sk, const double *packed, int64_t e)
{
	return packed[e] >= 0 && packed[e] < (double) sk->size ? (int64_t) packed[e] / sk->k_st[0] : -1;
}

static bool
sparse_run_threaded(const se_sparse *sk, const double *packed, int64_t n, const double *dense,
					double *out, char *err)
{
	const int64_t nnz = n / 2;
	double		work = (double) nnz;
	sparse_part parts[SE_MAX_THREADS];
	int			count;

	for (int f = 0; f < sk->nf; f++)
		work *= (double) sk->f_dim[f];
	count = threads_for(work, nnz);
	if (n % 2 || count < 2 || sk->empty || !se_sparse_rows_disjoint(sk))
		return se_sparse_run(sk, packed, n, dense, out, err);
	se_sparse_init(sk, out);
	/* ranges cut where the outermost index changes (positions ascend: one range each) */
	for (int t = 0; t < count; t++)
	{
		int64_t		from = t ? parts[t - 1].to : 0,
					to = t == count - 1 ? nnz : nnz * (t + 1) / count;

		if (to < from)
			to = from;
		while (to > from && to < nnz && outer_index(sk, packed, to) >= 0 &&
			   outer_index(sk, packed, to) == outer_index(sk, packed, to - 1))
			to++;
		parts[t] = (sparse_part) {sk, packed, dense, nnz, from, to, out, true, ""};
	}
	run_parallel(sparse_part_run, (char *) parts, sizeof(sparse_part), count);
	for (int t = 0; t < count; t++)
		if (!parts[t].ok)
		{
			memcpy(err, parts[t].err, SE_ERRLEN);
			return false;
		}
	return true;
}

bool
se_sparse_run_threaded(const se_sparse *sk, const double *packed, int64_t n, const double *dense,
					   double *out, char *err)
{
	se_sparse	by_result,
				laid;
	double	   *rows = se_sparse_result_relayout(sk, n / 2, &by_result),
			   *copy = se_sparse_relayout(&by_result, n / 2, dense, &laid);
	bool		ok = sparse_run_threaded(&laid, packed, n, copy ? copy : dense,
										 rows ? rows : out, err);

	if (rows != NULL && ok)
		se_sparse_result_restore(sk, rows, out);
	free(rows);
	free(copy);
	return ok;
}
