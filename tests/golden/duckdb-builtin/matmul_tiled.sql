-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:I/2jK

-- C[I/2,K] = A[I/2,j] * B[j,K]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  u0."i_0" AS "i_0",
  u1."k_1" AS "k_1",
  LIST_TRANSFORM(
    RANGE(0, 2),
    LAMBDA se_o : LIST_SUM(
      LIST_TRANSFORM(
        RANGE(0, 4),
        LAMBDA se_r : (
          u0.val[1 + se_o * 4 + se_r] * u1.val[1 + 0 + se_r]
        )
      )
    )
  ) AS val
FROM "g_1_t1" AS u0
JOIN "g_1_t2" AS u1
  ON TRUE;
