-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:ijk S:Ij

-- T[i,j] = A[i,k] * B[k,j]
-- explode T[I,j]
-- S[I] = T[I,j] * x[j]
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
      p / 1
    ) % 6 AS "i_0",
    val
  FROM (
    SELECT
      g.p AS p,
      SE_TAKE('30;6;5;5;1', r.val, g.p) AS val
    FROM "g_1_t3" AS r
    CROSS JOIN GENERATE_SERIES(0, 5) AS g(p)
  ) AS t
  WHERE
    val IS NOT NULL
)
SELECT
  u0."i_0" AS "i_0",
  SE_VALUE2('mul;sum;0;5;1;1', u0.val, u1.val) AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t5" AS u1
  ON TRUE;
