-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:Ijk

-- C[I,k] = A[I,j] * B[j,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  u0."i_0" AS "i_0",
  LIST_TRANSFORM(
    RANGE(0, 5),
    LAMBDA se_o : LIST_SUM(
      LIST_TRANSFORM(
        RANGE(0, 4),
        LAMBDA se_r : (
          u0.val[1 + 0 + se_r] * u1.val[1 + se_o + se_r * 5]
        )
      )
    )
  ) AS val
FROM "g_1_t1" AS u0
JOIN "g_1_t2" AS u1
  ON TRUE;
