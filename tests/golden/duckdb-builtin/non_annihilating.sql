-- input A[i,j]
-- input b[j]
-- S[i,j] = A[i,j] + b[j]
-- M[i] = max(S[i,j])
-- T[] = sum(exp(M[i]))
-- P[i] = exp(M[i]) / T[]
-- output S, P
-- plan S:Ij M:Ij T:i P:i

-- S[I,j] = A[I,j] + b[j]
CREATE TEMPORARY TABLE "g_1_t3" AS
SELECT
  dom.k0 AS "i_0",
  LIST_TRANSFORM(
    RANGE(0, 4),
    LAMBDA se_o : (
      COALESCE(u0.val[1 + se_o], CAST(0.0 AS DOUBLE)) + COALESCE(u1.val[1 + se_o], CAST(0.0 AS DOUBLE))
    )
  ) AS val
FROM (
  SELECT
    k0
  FROM (
    SELECT
      "i_0" AS k0
    FROM "g_1_t1"
  ) AS s0
  UNION
  SELECT
    k0
  FROM (
    SELECT
      1 AS one
    FROM "g_1_t2"
  ) AS s1
  CROSS JOIN RANGE(0, 6) AS r_k0(k0)
) AS dom
LEFT JOIN "g_1_t1" AS u0
  ON u0."i_0" = dom.k0
LEFT JOIN "g_1_t2" AS u1
  ON TRUE;

-- M[I] = max(S[I,j])
-- stack M[i]
CREATE TEMPORARY TABLE "g_1_t5" AS
WITH "g_1_t4" AS (
  SELECT
    u0."i_0" AS "i_0",
    LIST_MAX(LIST_TRANSFORM(RANGE(0, 4), LAMBDA se_r : u0.val[1 + 0 + se_r])) AS val
  FROM "g_1_t3" AS u0
)
SELECT
  LIST_TRANSFORM(
    [
      LIST_GRADE_UP(
        LIST_GRADE_UP(
          LIST_CONCAT(
            LIST_TRANSFORM(
              ARRAY_AGG((
                (
                  "i_0"
                ) * 1
              ) ORDER BY (
                (
                  "i_0"
                ) * 1
              )),
              LAMBDA se_p : 2 * se_p
            ),
            LIST_TRANSFORM(RANGE(0, 6), LAMBDA se_q : 2 * se_q + 1)
          )
        )
      )
    ],
    LAMBDA se_r : LIST_TRANSFORM(
      RANGE(0, 6),
      LAMBDA se_q : CASE
        WHEN (
          se_r[LENGTH(se_r) - 6 + se_q + 1] - se_q - 1
        ) > (
          CASE WHEN se_q = 0 THEN 0 ELSE se_r[LENGTH(se_r) - 6 + se_q] - se_q END
        )
        THEN ARRAY_AGG(val ORDER BY (
          (
            "i_0"
          ) * 1
        ))[(
          se_r[LENGTH(se_r) - 6 + se_q + 1] - se_q - 1
        )]
        ELSE CAST(0.0 AS DOUBLE)
      END
    )
  )[1] AS val
FROM "g_1_t4"
HAVING
  COUNT(*) > 0;

-- P~1[i] = exp(M[i])
-- T[] = exp(M[i])
-- P[i] = P~1[i] / T[]
CREATE TEMPORARY TABLE "g_1_t8" AS
WITH "g_1_t7" AS (
  SELECT
    LIST_TRANSFORM(RANGE(0, 6), LAMBDA se_o : EXP(COALESCE(u0.val[1 + se_o], CAST(0.0 AS DOUBLE)))) AS val
  FROM (
    SELECT
      1 AS one
  ) AS dom
  LEFT JOIN "g_1_t5" AS u0
    ON TRUE
), "g_1_t6" AS (
  SELECT
    LIST_SUM(
      LIST_TRANSFORM(
        RANGE(0, 6),
        LAMBDA se_r : EXP(COALESCE(u0.val[1 + 0 + se_r], CAST(0.0 AS DOUBLE)))
      )
    ) AS val
  FROM (
    SELECT
      1 AS one
  ) AS dom
  LEFT JOIN "g_1_t5" AS u0
    ON TRUE
)
SELECT
  LIST_TRANSFORM(
    RANGE(0, 6),
    LAMBDA se_o : (
      COALESCE(u0.val[1 + se_o], CAST(0.0 AS DOUBLE)) / COALESCE(u1.val, CAST(0.0 AS DOUBLE))
    )
  ) AS val
FROM (
  SELECT
    1 AS one
) AS dom
LEFT JOIN "g_1_t7" AS u0
  ON TRUE
LEFT JOIN "g_1_t6" AS u1
  ON TRUE;
