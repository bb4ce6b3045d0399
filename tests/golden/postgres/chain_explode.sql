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
CREATE UNLOGGED TABLE "g_1_t6"
WITH (
  toast_tuple_target=8160
) AS
WITH "g_1_t3" AS MATERIALIZED (
  SELECT
    SE_KERNEL2('mul;sum;2;6,5,4;4,0,1;0,1,5', u0.val, u1.val) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON TRUE
), "g_1_t4" AS MATERIALIZED (
  SELECT
    (
      p / 5
    ) % 6 AS "i_0",
    (
      p / 1
    ) % 5 AS "j_1",
    val
  FROM (
    SELECT
      e.p - 1 AS p,
      e.v AS val
    FROM "g_1_t3" AS r
    CROSS JOIN LATERAL UNNEST(r.val) WITH ORDINALITY AS e(v, p)
  ) AS t
  WHERE
    val IS NOT NULL AND (
      val <> 0 OR CAST(val AS TEXT) = '-0'
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
