-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:I/2jK

-- C[I/2,K] = A[I/2,j] * B[j,K]
CREATE UNLOGGED TABLE "g_1_t3"
WITH (
  toast_tuple_target=8160
) AS
SELECT
  u0."i_0" AS "i_0",
  u1."k_1" AS "k_1",
  SE_KERNEL2('mul;sum;1;2,4;4,1;0,1', u0.val, u1.val) AS val
FROM "g_1_t1" AS u0
JOIN "g_1_t2" AS u1
  ON TRUE;
