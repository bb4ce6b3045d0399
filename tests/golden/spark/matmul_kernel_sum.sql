-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:iJk

-- C[i,k] = A[i,J] * B[J,k]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t3` AS
SELECT
  G_1_F2(COLLECT_LIST(val), 0) AS val
FROM (
  SELECT
    G_1_F1(u0.val, u1.val) AS val
  FROM `g_1_t1` AS u0
  JOIN `g_1_t2` AS u1
    ON u1.`j_0` = u0.`j_1`
) AS j
HAVING
  COUNT(*) > 0;
