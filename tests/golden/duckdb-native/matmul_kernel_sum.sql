-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:iJk

-- C[i,k] = A[i,J] * B[J,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  SE_KSUM('mul;sum;2;6,5;1,0;0,1', se_a, se_b) AS val
FROM (
  SELECT
    u0.val AS se_a,
    u1.val AS se_b
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
HAVING
  COUNT(*) > 0;
