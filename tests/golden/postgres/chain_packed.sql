-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:IJK S:~0 Ij

-- T[I,J] = A[I,K] * B[K,J]
-- stack ~T[I,j]
-- S[I] = ~T[I,j] * x[j]
CREATE UNLOGGED TABLE "g_1_t6"
WITH (
  toast_tuple_target=8160
) AS
WITH "g_1_t3" AS MATERIALIZED (
  SELECT
    "i_0",
    "j_1",
    SUM(val) AS val
  FROM (
    SELECT
      u0."i_0" AS "i_0",
      u1."j_1" AS "j_1",
      (
        u0.val * u1.val
      ) AS val
    FROM "g_1_t1" AS u0
    JOIN "g_1_t2" AS u1
      ON u1."k_0" = u0."k_1"
  ) AS j
  GROUP BY
    "i_0",
    "j_1"
), "g_1_t4" AS MATERIALIZED (
  SELECT
    "i_0" AS "i_0",
    ARRAY_AGG(
      CAST((
        (
          "j_1"
        ) * 1
      ) AS DOUBLE PRECISION) ORDER BY (
        (
          "j_1"
        ) * 1
      )
    ) || ARRAY_AGG(val ORDER BY (
      (
        "j_1"
      ) * 1
    )) AS val
  FROM "g_1_t3"
  GROUP BY
    1
)
SELECT
  u0."i_0" AS "i_0",
  SE_VALUE2('mul;sum;0;5;~1;1', u0.val, u1.val) AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t5" AS u1
  ON TRUE;
