-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:IJk

-- C[I,k] = A[I,J] * B[J,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  "i_0",
  SE_WSUM(se_w, val) AS val
FROM (
  SELECT
    u0."i_0" AS "i_0",
    u0.val AS se_w,
    u1.val AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
GROUP BY
  "i_0";
