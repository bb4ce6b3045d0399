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
CREATE OR REPLACE TEMPORARY VIEW `g_1_t6` AS
WITH `g_1_t3` AS (
  SELECT
    G_1_F1(u0.val, u1.val) AS val
  FROM `g_1_t1` AS u0
  JOIN `g_1_t2` AS u1
    ON TRUE
), `g_1_t4` AS (
  SELECT
    (
      p DIV 5
    ) % 6 AS `i_0`,
    (
      p DIV 1
    ) % 5 AS `j_1`,
    val
  FROM (
    SELECT
      e.p AS p,
      e.v AS val
    FROM `g_1_t3` AS r
    LATERAL VIEW
    POSEXPLODE(r.val) e AS p, v
  ) AS t
  WHERE
    NOT val IS NULL AND (
      val <> 0 OR CAST(val AS STRING) = '-0.0'
    )
)
SELECT
  `i_0`,
  SUM(val) AS val
FROM (
  SELECT
    u0.`i_0` AS `i_0`,
    (
      u0.val * u1.val
    ) AS val
  FROM `g_1_t4` AS u0
  JOIN `g_1_t5` AS u1
    ON u1.`j_0` = u0.`j_1`
) AS j
GROUP BY
  `i_0`;
