-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:iJk

-- C[i,k] = A[i,J] * B[J,k]
CREATE UNLOGGED TABLE "g_1_t3"
WITH (
  toast_tuple_target=8160
) AS
SELECT
  SE_VSUM(val) AS val
FROM (
  SELECT
    SE_KERNEL2('mul;sum;2;6,5;1,0;0,1', u0.val, u1.val) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
HAVING
  COUNT(*) > 0;
