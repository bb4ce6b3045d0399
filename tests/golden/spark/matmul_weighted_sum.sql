-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:IJk

-- C[I,k] = A[I,J] * B[J,k]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t3` AS
SELECT
  `i_0`,
  G_1_F1(COLLECT_LIST(val), 0) AS val
FROM (
  SELECT
    u0.`i_0` AS `i_0`,
    TRANSFORM(u1.val, se_x -> (
      u0.val * se_x
    )) AS val
  FROM `g_1_t1` AS u0
  JOIN `g_1_t2` AS u1
    ON u1.`j_0` = u0.`j_1`
) AS j
GROUP BY
  `i_0`;
