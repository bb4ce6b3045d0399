/*
 * Entry point of the sparse_einsum DuckDB extension and the helpers its modules share.
 *
 * LOAD registers, per module:
 *   aggregates.c  se_vsum / se_vmax / se_vmin (element-wise over DOUBLE[]), se_wsum
 *                 (sum of scalar * vector), se_stack (scatter sub-tensors, GatherSpec),
 *                 se_stack_packed (scalars at positions into a packed sparse payload)
 *   kernels.c     se_kernel1 / se_kernel2 (KernelSpec, DOUBLE[] result), se_value1 /
 *                 se_value2 (one-element result as DOUBLE), se_split (GatherSpec),
 *                 se_densify / se_sparsify (packed sparse payloads)
 * and se_extension_version() (the build key), se_extension_blas() (the BLAS that runs
 * matrix products, NULL when built without one: the C loops run them).
 */
#define DUCKDB_EXTENSION_NAME sparse_einsum
#include "se_duckdb.h"

#include <string.h>

#ifndef SE_EXTENSION_VERSION
#define SE_EXTENSION_VERSION "dev"
#endif

/* ---------------------------------------------------------------- shared helpers */

void
se_arg_init(se_arg *arg, duckdb_data_chunk chunk, idx_t col, bool is_list)
{
	duckdb_vector v = duckdb_data_chunk_get_vector(chunk, col);

	arg->is_list = is_list;
	arg->validity = duckdb_vector_get_validity(v);
	arg->entries = NULL;
	arg->child_validity = NULL;
	if (is_list)
	{
		duckdb_vector child = duckdb_list_vector_get_child(v);

		arg->entries = (const duckdb_list_entry *) duckdb_vector_get_data(v);
		arg->data = (const double *) duckdb_vector_get_data(child);
		arg->child_validity = duckdb_vector_get_validity(child);
	}
	else
		arg->data = (const double *) duckdb_vector_get_data(v);
}

static inline bool
bit_is_set(const uint64_t *mask, idx_t i)
{
	return (mask[i >> 6] >> (i & 63)) & 1;
}

bool
se_arg_row(const se_arg *arg, idx_t row, const double **values, int64_t *len, bool *bad)
{
	if (arg->validity && !bit_is_set(arg->validity, row))
		return false;
	if (!arg->is_list)
	{
		*values = arg->data + row;
		*len = 1;
		return true;
	}
	*values = arg->data + arg->entries[row].offset;
	*len = (int64_t) arg->entries[row].length;
	if (arg->child_validity)
		for (idx_t e = arg->entries[row].offset; e < arg->entries[row].offset + arg->entries[row].length; e++)
			if (!bit_is_set(arg->child_validity, e))
				*bad = true;
	return true;
}

void
se_text(duckdb_data_chunk chunk, idx_t col, idx_t row, const char **text, uint32_t *len)
{
	duckdb_string_t *s = (duckdb_string_t *) duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, col)) + row;

	*len = s->value.inlined.length;
	*text = *len <= sizeof(s->value.inlined.inlined) ? s->value.inlined.inlined : s->value.pointer.ptr;
}

double *
se_list_reserve(duckdb_vector result, idx_t total, idx_t *base)
{
	*base = duckdb_list_vector_get_size(result);
	if (duckdb_list_vector_reserve(result, *base + total) == DuckDBError)
		return NULL;
	return (double *) duckdb_vector_get_data(duckdb_list_vector_get_child(result)) + *base;
}

void
se_list_done(duckdb_vector result, idx_t size)
{
	duckdb_list_vector_set_size(result, size);
}

duckdb_logical_type
se_type(bool is_list)
{
	duckdb_logical_type dbl = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
	duckdb_logical_type list;

	if (!is_list)
		return dbl;
	list = duckdb_create_list_type(dbl);
	duckdb_destroy_logical_type(&dbl);
	return list;
}

/* ---------------------------------------------------------------- build facts */

/* A function of no arguments returning the text in its extra info (NULL for none). */
static void
text_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output)
{
	const char *text = (const char *) duckdb_scalar_function_get_extra_info(info);

	for (idx_t row = 0; row < duckdb_data_chunk_get_size(input); row++)
		if (text)
			duckdb_vector_assign_string_element(output, row, text);
		else
		{
			duckdb_vector_ensure_validity_writable(output);
			duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), row);
		}
}

static bool
register_text(duckdb_connection con, const char *name, const char *text)
{
	duckdb_scalar_function f = duckdb_create_scalar_function();
	duckdb_logical_type varchar = duckdb_create_logical_type(DUCKDB_TYPE_VARCHAR);
	duckdb_state ok;

	duckdb_scalar_function_set_name(f, name);
	duckdb_scalar_function_set_return_type(f, varchar);
	duckdb_scalar_function_set_function(f, text_function);
	duckdb_scalar_function_set_extra_info(f, (void *) text, NULL);
	ok = duckdb_register_scalar_function(con, f);
	duckdb_destroy_logical_type(&varchar);
	duckdb_destroy_scalar_function(&f);
	return ok == DuckDBSuccess;
}

/* ---------------------------------------------------------------- entry point */

DUCKDB_EXTENSION_ENTRYPOINT(duckdb_connection con, duckdb_extension_info info,
							struct duckdb_extension_access *access)
{
	/* DuckDB runs kernel calls on all its threads at once: BLAS threads would compete with
	 * them (and one big product measured no faster with more; see udf_kernels/duckdb/README.md) */
	se_blas_threads(1);
	if (!se_register_aggregates(con) || !se_register_kernels(con) || !register_text(con, "se_extension_version", SE_EXTENSION_VERSION) ||
		!register_text(con, "se_extension_blas", se_blas_name))
	{
		access->set_error(info, "sparse_einsum: registering its functions failed");
		return false;
	}
	return true;
}
