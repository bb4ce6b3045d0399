/*
 * The sparse_einsum DuckDB extension: what its modules share.
 *
 * Written against DuckDB's stable C extension API, targeting the V1 API of v1.2.0 so
 * that one binary loads into every DuckDB from 1.2 on (the Python package and the
 * command-line shell). Each module registers its functions with se_register_<module>;
 * extension.c lists the modules.
 */
#ifndef SE_DUCKDB_H
#define SE_DUCKDB_H

#define DUCKDB_EXTENSION_API_VERSION_MAJOR 1
#define DUCKDB_EXTENSION_API_VERSION_MINOR 2
#define DUCKDB_EXTENSION_API_VERSION_PATCH 0
#include "duckdb_extension.h"

#include "se_kernel.h"

DUCKDB_EXTENSION_EXTERN

/* One argument column of a chunk: DOUBLE or DOUBLE[] (flat: the C API flattens inputs). */
typedef struct se_arg
{
	bool		is_list;
	const double *data;			/* the DOUBLE values, or the list child's values */
	const duckdb_list_entry *entries;
	uint64_t   *validity;		/* NULL when every row is valid */
	uint64_t   *child_validity; /* NULL when no list element is NULL */
} se_arg;

/* Read column `col` of a chunk; is_list says which overload was bound. */
void		se_arg_init(se_arg *arg, duckdb_data_chunk chunk, idx_t col, bool is_list);

/* Row `row` of an argument: false for NULL; *bad set when the list holds a NULL element. */
bool		se_arg_row(const se_arg *arg, idx_t row, const double **values, int64_t *len, bool *bad);

/* A VARCHAR argument's text at `row`. */
void		se_text(duckdb_data_chunk chunk, idx_t col, idx_t row, const char **text, uint32_t *len);

/* Room for `total` more elements in a DOUBLE[] result: returns where they start, which
 * is element *base of the list child. Call se_list_done(result, *base + written). */
double	   *se_list_reserve(duckdb_vector result, idx_t total, idx_t *base);
void		se_list_done(duckdb_vector result, idx_t size);

/* The DuckDB type DOUBLE or DOUBLE[]; the caller destroys it. */
duckdb_logical_type se_type(bool is_list);

bool		se_register_aggregates(duckdb_connection con);
bool		se_register_kernels(duckdb_connection con);

#endif
