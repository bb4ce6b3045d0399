-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:~0 Ijk

-- C[I,k] = ~A[I,j] * B[j,k]
CREATE UNLOGGED TABLE "g_1_t3"
WITH (
  toast_tuple_target=8160
) AS
SELECT
  u0."i_0" AS "i_0",
  SE_KERNEL2('mul;sum;1;5,4;~0,1;1,5', u0.val, u1.val) AS val
FROM "g_1_t1" AS u0
JOIN "g_1_t2" AS u1
  ON TRUE;
