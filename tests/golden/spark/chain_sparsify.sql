-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:Ijk S:~0 Ij

-- T[I,j] = A[I,k] * B[k,j]
-- sparsify T[I,j]
-- S[I] = ~T[I,j] * x[j]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t6` AS
WITH `g_1_t3` AS (
  SELECT
    u0.`i_0` AS `i_0`,
    G_1_F1(u0.val) AS val
  FROM `g_1_t1` AS u0
), `g_1_t4` AS (
  SELECT
    `i_0`,
    G_1_F2(val) AS val
  FROM `g_1_t3`
)
SELECT
  u0.`i_0` AS `i_0`,
  G_1_F3(u0.val) AS val
FROM `g_1_t4` AS u0;
