-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:Ijk

-- C[I,k] = A[I,j] * B[j,k]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t3` AS
SELECT
  u0.`i_0` AS `i_0`,
  G_1_F1(u0.val) AS val
FROM `g_1_t1` AS u0;
