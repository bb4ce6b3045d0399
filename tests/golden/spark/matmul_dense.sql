-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:ijk

-- C[i,k] = A[i,j] * B[j,k]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t3` AS
SELECT
  G_1_F1(u0.val, u1.val) AS val
FROM `g_1_t1` AS u0
JOIN `g_1_t2` AS u1
  ON TRUE;
