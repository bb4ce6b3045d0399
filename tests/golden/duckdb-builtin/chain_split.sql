-- input A[i,k]
-- input B[k,j]
-- input x[j]
-- T[i,j] = A[i,k] * B[k,j]
-- S[i] = T[i,j] * x[j]
-- output S
-- plan T:ijk S:Ij

-- T[i,j] = A[i,k] * B[k,j]
-- explode T[I,j]
-- S[I] = T[I,j] * x[j]
CREATE TEMPORARY TABLE "g_1_t6" AS
WITH "g_1_t3" AS (
  SELECT
    LIST_TRANSFORM(
      RANGE(0, 30),
      LAMBDA se_o : LIST_SUM(
        LIST_TRANSFORM(
          RANGE(0, 4),
          LAMBDA se_r : (
            u0.val[1 + (
              se_o // 5
            ) * 4 + se_r] * u1.val[1 + (
              se_o % 5
            ) + se_r * 5]
          )
        )
      )
    ) AS val
  FROM "g_1_t1" AS u0
  JOIN "g_1_t2" AS u1
    ON TRUE
), "g_1_t4" AS (
  SELECT
    (
      p // 1
    ) % 6 AS "i_0",
    val
  FROM (
    SELECT
      GENERATE_SUBSCRIPTS(r.se_pieces, 1) - 1 AS p,
      UNNEST(r.se_pieces) AS val
    FROM (
      SELECT
        *,
        LIST_TRANSFORM(
          RANGE(0, 6),
          LAMBDA se_p : NULLIF(
            LIST_TRANSFORM(RANGE(0, 5), LAMBDA se_e : r.val[1 + se_p * 5 + se_e]),
            LIST_RESIZE(CAST([] AS DOUBLE[]), 5, CAST(0.0 AS DOUBLE))
          )
        ) AS se_pieces
      FROM "g_1_t3" AS r
    ) AS r
  ) AS t
  WHERE
    NOT val IS NULL
)
SELECT
  u0."i_0" AS "i_0",
  LIST_SUM(
    LIST_TRANSFORM(RANGE(0, 5), LAMBDA se_r : (
      u0.val[1 + 0 + se_r] * u1.val[1 + 0 + se_r]
    ))
  ) AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t5" AS u1
  ON TRUE;
