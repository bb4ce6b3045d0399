-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:ijk

-- C[i,k] = A[i,j] * B[j,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  SE_KERNEL2('mul;sum;2;6,5,4;4,0,1;0,1,5', p0."val", p1."val") AS "val"
FROM "g_1_t1" AS p0
POSITIONAL JOIN "g_1_t2" AS p1;
