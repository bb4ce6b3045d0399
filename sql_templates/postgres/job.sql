\set ON_ERROR_STOP on

-- the server stops this job within {check_seconds:number}s of psql vanishing
DO $se_client$
BEGIN
  SET client_connection_check_interval = '{check_seconds:number}s';
EXCEPTION WHEN undefined_object OR invalid_parameter_value THEN
  NULL;   -- before PostgreSQL 14, or a platform where it cannot check
END
$se_client$;

DO $se_check$
BEGIN
  IF to_regprocedure('se_kernels_version()') IS NULL THEN
    RAISE EXCEPTION 'this job needs the sparse_einsum_kernels extension %, which is not installed in this database', {kernels_version:sql} USING HINT = 'install them with: sparse-einsum install-kernels --dsn DSN';
  END IF;
  IF se_kernels_version() <> {kernels_version:sql} THEN
    RAISE EXCEPTION 'this job needs sparse_einsum_kernels %, found %', {kernels_version:sql}, se_kernels_version() USING HINT = 'install them with: sparse-einsum install-kernels --dsn DSN';
  END IF;
END
$se_check$;

BEGIN;

{body:sql}

COMMIT;
