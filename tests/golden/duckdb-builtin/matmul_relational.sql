-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:IJK

-- C[I,K] = A[I,J] * B[J,K]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  "i_0",
  "k_1",
  SUM(val) AS val
FROM (
  SELECT
    u0."i_0" AS "i_0",
    u1."k_1" AS "k_1",
    (
      u0.val * u1.val
    ) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
GROUP BY
  "i_0",
  "k_1";
