-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:ijk S:IJ

-- T[i,j] = A[i,k] * B[k,j]
-- explode T[I,J]
-- S[I] = T[I,J] * x[J]
CREATE TEMPORARY TABLE "g_1_t6" AS
WITH "g_1_t3" AS (
  SELECT
    SE_KERNEL2('mul;sum;2;6,5,4;4,0,1;0,1,5', p0."val", p1."val") AS "val"
  FROM "g_1_t1" AS p0
  POSITIONAL JOIN "g_1_t2" AS p1
), "g_1_t4" AS (
  SELECT
    (
      p // 5
    ) % 6 AS "i_0",
    (
      p // 1
    ) % 5 AS "j_1",
    val
  FROM (
    SELECT
      GENERATE_SUBSCRIPTS(r.val, 1) - 1 AS p,
      UNNEST(r.val) AS val
    FROM "g_1_t3" AS r
  ) AS t
  WHERE
    NOT val IS NULL AND (
      val <> 0 OR SIGNBIT(val)
    )
)
SELECT
  "i_0",
  SUM(val) AS val
FROM (
  SELECT
    u0."i_0" AS "i_0",
    (
      u0.val * u1.val
    ) AS val
  FROM "g_1_t4" AS u0
  JOIN "g_1_t5" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
GROUP BY
  "i_0";
