-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:Ijk S:~0 Ij

-- T[I,j] = A[I,k] * B[k,j]
-- sparsify T[I,j]
-- S[I] = ~T[I,j] * x[j]
CREATE UNLOGGED TABLE "g_1_t6"
WITH (
  toast_tuple_target=8160
) AS
WITH "g_1_t3" AS MATERIALIZED (
  SELECT
    u0."i_0" AS "i_0",
    SE_KERNEL2_ROWS('mul;sum;1;5,4;0,1;1,5', u0.val, u1.val) OVER () AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON TRUE
), "g_1_t4" AS MATERIALIZED (
  SELECT
    "i_0",
    SE_SPARSIFY(val) AS val
  FROM "g_1_t3"
)
SELECT
  u0."i_0" AS "i_0",
  SE_VALUE2('mul;sum;0;5;~1;1', u0.val, u1.val) AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t5" AS u1
  ON TRUE;
