-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:IJk

-- C[I,k] = A[I,J] * B[J,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  "i_0",
  [SUM(val[1]), SUM(val[2]), SUM(val[3]), SUM(val[4]), SUM(val[5])] AS val
FROM (
  SELECT
    u0."i_0" AS "i_0",
    LIST_TRANSFORM(RANGE(0, 5), LAMBDA se_o : (
      u0.val * u1.val[1 + se_o]
    )) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
GROUP BY
  "i_0";
