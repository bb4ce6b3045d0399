-- input A[i,j]
-- input B[j,k]
-- C[i,k] = A[i,j] * B[j,k]
-- output C
-- plan C:iJk

-- C[i,k] = A[i,J] * B[J,k]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  [
    SUM(val[1]),
    SUM(val[2]),
    SUM(val[3]),
    SUM(val[4]),
    SUM(val[5]),
    SUM(val[6]),
    SUM(val[7]),
    SUM(val[8]),
    SUM(val[9]),
    SUM(val[10]),
    SUM(val[11]),
    SUM(val[12]),
    SUM(val[13]),
    SUM(val[14]),
    SUM(val[15]),
    SUM(val[16]),
    SUM(val[17]),
    SUM(val[18]),
    SUM(val[19]),
    SUM(val[20]),
    SUM(val[21]),
    SUM(val[22]),
    SUM(val[23]),
    SUM(val[24]),
    SUM(val[25]),
    SUM(val[26]),
    SUM(val[27]),
    SUM(val[28]),
    SUM(val[29]),
    SUM(val[30])
  ] AS val
FROM (
  SELECT
    LIST_TRANSFORM(
      RANGE(0, 30),
      LAMBDA se_o : (
        u0.val[1 + (
          se_o // 5
        )] * u1.val[1 + (
          se_o % 5
        )]
      )
    ) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
) AS j
HAVING
  COUNT(*) > 0;
