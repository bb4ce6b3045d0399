/*
 * se_blas: matrix products (se_gemm) with BLAS, shared by the PostgreSQL and the DuckDB
 * extension. Built with SE_BLAS defined it calls OpenBLAS's cblas_ddot/dgemv/dgemm (with
 * SE_BLAS_SCIPY, PyPI's scipy-openblas32, whose symbols carry a scipy_ prefix; SE_BLAS_NAME
 * names the build); without, se_gemm_blas declines every product and the callers run
 * se_gemm_run (the C loops).
 */
#include "se_kernel.h"

/* c[i,j] += sum_r at[r,i] bt[r,j] with C loops: one axpy per (r, i) over a row of bt. */
static void
gemm_tn_add_loops(int64_t m, int64_t n, int64_t k, const double *at, const double *bt, double *c,
				  int64_t c_m, int64_t c_n)
{
	for (int64_t r = 0; r < k; r++)
		for (int64_t i = 0; i < m; i++)
		{
			const double x = at[r * m + i];

			if (c_n == 1 || n == 1)
				se_axpy(n, x, bt + r * n, c + i * c_m);
			else
				for (int64_t j = 0; j < n; j++)
					c[i * c_m + j * c_n] += x * bt[r * n + j];
		}
}

#ifdef SE_BLAS

#include <limits.h>

#ifdef SE_BLAS_SCIPY
#define cblas_ddot scipy_cblas_ddot
#define cblas_dgemv scipy_cblas_dgemv
#define cblas_dgemm scipy_cblas_dgemm
#define openblas_set_num_threads scipy_openblas_set_num_threads
#endif
#ifndef SE_BLAS_NAME
#define SE_BLAS_NAME "OpenBLAS"
#endif

#include <cblas.h>

extern void openblas_set_num_threads(int num_threads);

const char *const se_blas_name = SE_BLAS_NAME;

void
se_blas_threads(int n)
{
	openblas_set_num_threads(n);
}

/* Row-major BLAS view of a rows x cols matrix with strides (sr, sc): transposition and
 * leading dimension; false when neither stride is 1. */
static bool
blas_layout(int64_t rows, int64_t cols, int64_t sr, int64_t sc, enum CBLAS_TRANSPOSE *t, int *ld)
{
	if (cols == 1)
		sc = 1;					/* any stride does for one column ... */
	if (rows == 1)
		sr = sc == 1 ? cols : 1;	/* ... or for one row */
	if (sc == 1 && sr >= (cols > 1 ? cols : 1) && sr <= INT_MAX)
	{
		*t = CblasNoTrans;
		*ld = (int) sr;
		return true;
	}
	if (sr == 1 && sc >= (rows > 1 ? rows : 1) && sc <= INT_MAX)
	{
		*t = CblasTrans;
		*ld = (int) sc;
		return true;
	}
	return false;
}

/* One matrix product c = a b with BLAS; false when its strides do not suit BLAS. */
static bool
blas_product(int64_t m, int64_t n, int64_t k, const double *a, int64_t a_m, int64_t a_k,
			 const double *b, int64_t b_k, int64_t b_n, double *c, int64_t c_m, int64_t c_n)
{
	enum CBLAS_TRANSPOSE ta, tb, tc;
	int			lda, ldb, ldc;
	const int	inc_a = k > 1 ? (int) a_k : 1, inc_b = k > 1 ? (int) b_k : 1;

	if (m > INT_MAX || n > INT_MAX || k > INT_MAX || a_k > INT_MAX || b_k > INT_MAX ||
		c_m > INT_MAX || c_n > INT_MAX)
		return false;
	if (m == 1 && n == 1)
	{
		*c = cblas_ddot((int) k, a, inc_a, b, inc_b);
		return true;
	}
	if (m == 1)
	{							/* c = a b: b^T times the vector a */
		if (!blas_layout(k, n, b_k, b_n, &tb, &ldb))
			return false;
		for (int64_t j = 0; j < n; j++)
			c[j * c_n] = 0.0;	/* beta = 0 must not meet uninitialised memory */
		cblas_dgemv(CblasRowMajor, tb == CblasNoTrans ? CblasTrans : CblasNoTrans,
					tb == CblasNoTrans ? (int) k : (int) n, tb == CblasNoTrans ? (int) n : (int) k,
					1.0, b, ldb, a, inc_a, 0.0, c, (int) c_n);
		return true;
	}
	if (n == 1)
	{							/* c = a times the vector b */
		if (!blas_layout(m, k, a_m, a_k, &ta, &lda))
			return false;
		for (int64_t i = 0; i < m; i++)
			c[i * c_m] = 0.0;
		cblas_dgemv(CblasRowMajor, ta, ta == CblasNoTrans ? (int) m : (int) k,
					ta == CblasNoTrans ? (int) k : (int) m, 1.0, a, lda, b, inc_b, 0.0, c, (int) c_m);
		return true;
	}
	if (!blas_layout(m, n, c_m, c_n, &tc, &ldc))
		return false;
	if (tc == CblasTrans)		/* c^T = b^T a^T */
		return blas_product(n, m, k, b, b_n, b_k, a, a_k, a_m, c, c_n, c_m);
	if (!blas_layout(m, k, a_m, a_k, &ta, &lda) || !blas_layout(k, n, b_k, b_n, &tb, &ldb))
		return false;
	cblas_dgemm(CblasRowMajor, ta, tb, (int) m, (int) n, (int) k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
	return true;
}

bool
se_gemm_blas(const se_gemm *g, const double *a, const double *b, double *c)
{
	for (int64_t p = 0; p < g->batch; p++)
		if (!blas_product(g->m, g->n, g->k, a + p * g->a_b, g->a_m, g->a_k, b + p * g->b_b,
						  g->b_k, g->b_n, c + p * g->c_b, g->c_m, g->c_n))
			return false;		/* the layout is the same for every p: fails on the first */
	return true;
}

void
se_gemm_tn_add(int64_t m, int64_t n, int64_t k, const double *at, const double *bt, double *c,
			   int64_t c_m, int64_t c_n)
{
	if (m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && c_m <= INT_MAX && c_n <= INT_MAX &&
		(c_n == 1 || n == 1))
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int) m, (int) n, (int) k, 1.0,
					at, (int) m, bt, (int) n, 1.0, c, (int) (m > 1 && c_m > 1 ? c_m : n));
	else if (m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && c_n <= INT_MAX && c_m == 1)
		cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int) n, (int) m, (int) k, 1.0,
					bt, (int) n, at, (int) m, 1.0, c, (int) (n > 1 ? c_n : m));
	else
		gemm_tn_add_loops(m, n, k, at, bt, c, c_m, c_n);
}

#else							/* no BLAS in this build */

const char *const se_blas_name = NULL;

void
se_blas_threads(int n)
{
	(void) n;
}

bool
se_gemm_blas(const se_gemm *g, const double *a, const double *b, double *c)
{
	(void) g, (void) a, (void) b, (void) c;
	return false;
}

void
se_gemm_tn_add(int64_t m, int64_t n, int64_t k, const double *at, const double *bt, double *c,
			   int64_t c_m, int64_t c_n)
{
	gemm_tn_add_loops(m, n, k, at, bt, c, c_m, c_n);
}

#endif
