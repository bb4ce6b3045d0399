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
      p DIV 1
    ) % 6 AS `i_0`,
    val
  FROM (
    SELECT
      e.p AS p,
      e.v AS val
    FROM `g_1_t3` AS r
    LATERAL VIEW
    POSEXPLODE(G_1_F2(r.val)) e AS p, v
  ) AS t
  WHERE
    NOT val IS NULL
)
SELECT
  u0.`i_0` AS `i_0`,
  G_1_F3(u0.val) AS val
FROM `g_1_t4` AS u0;
