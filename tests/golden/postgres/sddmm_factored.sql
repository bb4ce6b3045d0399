-- input X[i,k]
-- input M[i,j]
-- input Y[j,k]
-- P[i,j,k] = M[i,j] * Y[j,k]
-- OUT[i,j] = X[i,k] * P[i,j,k]
-- output OUT
-- plan P:IJk OUT:IJk

-- P[I,J,k] = M[I,J] * Y[J,k]
-- OUT[I,J] = X[I,k] * P[I,J,k]
CREATE UNLOGGED TABLE "g_1_t5"
WITH (
  toast_tuple_target=8160
) AS
WITH "g_1_t3" AS MATERIALIZED (
  SELECT
    u0."i_0" AS "i_0",
    u0."j_1" AS "j_1",
    u1.val AS val,
    u0.val AS fac
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON u1."j_0" = u0."j_1"
)
SELECT
  u0."i_0" AS "i_0",
  u1."j_1" AS "j_1",
  SE_VALUE2('mul;sum;0;3;1;1', u0.val, u1.val) * u1."fac" AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t3" AS u1
  ON u1."i_0" = u0."i_0";
