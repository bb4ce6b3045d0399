-- input A[i,j]
-- input b[j]
-- S[i,j] = A[i,j] + b[j]
-- M[i] = max(S[i,j])
-- T[] = sum(exp(M[i]))
-- P[i] = exp(M[i]) / T[]
-- output S, P
-- plan S:Ij M:Ij T:i P:i

-- S[I,j] = A[I,j] + b[j]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t3` AS
SELECT
  dom.k0 AS `i_0`,
  ZIP_WITH(
    COALESCE(u0.val, ARRAY_REPEAT(CAST(0.0 AS DOUBLE), 4)),
    COALESCE(u1.val, ARRAY_REPEAT(CAST(0.0 AS DOUBLE), 4)),
    (se_x, se_y) -> (
      se_x + se_y
    )
  ) AS val
FROM (
  SELECT
    k0
  FROM (
    SELECT
      `i_0` AS k0
    FROM `g_1_t1`
  ) AS s0
  UNION
  SELECT
    k0
  FROM (
    SELECT
      1 AS one
    FROM `g_1_t2`
  ) AS s1
  CROSS JOIN RANGE(6) AS r_k0(k0)
) AS dom
LEFT JOIN `g_1_t1` AS u0
  ON u0.`i_0` = dom.k0
LEFT JOIN `g_1_t2` AS u1
  ON TRUE;

-- M[I] = max(S[I,j])
-- stack M[i]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t5` AS
WITH `g_1_t4` AS (
  SELECT
    u0.`i_0` AS `i_0`,
    G_1_F1(u0.val) AS val
  FROM `g_1_t3` AS u0
)
SELECT
  G_1_F2(COLLECT_LIST(STRUCT((
    (
      `i_0`
    ) * 1
  ) AS p, val AS v))) AS val
FROM `g_1_t4`
HAVING
  COUNT(*) > 0;

-- P~1[i] = exp(M[i])
-- T[] = exp(M[i])
-- P[i] = P~1[i] / T[]
CREATE OR REPLACE TEMPORARY VIEW `g_1_t8` AS
WITH `g_1_t7` AS (
  SELECT
    TRANSFORM(COALESCE(u0.val, ARRAY_REPEAT(CAST(0.0 AS DOUBLE), 6)), se_x -> EXP(se_x)) AS val
  FROM (
    SELECT
      1 AS one
  ) AS dom
  LEFT JOIN `g_1_t5` AS u0
    ON TRUE
), `g_1_t6` AS (
  SELECT
    G_1_F3(COALESCE(u0.val, ARRAY_REPEAT(CAST(0.0 AS DOUBLE), 6))) AS val
  FROM (
    SELECT
      1 AS one
  ) AS dom
  LEFT JOIN `g_1_t5` AS u0
    ON TRUE
)
SELECT
  G_1_F4(
    COALESCE(u0.val, ARRAY_REPEAT(CAST(0.0 AS DOUBLE), 6)),
    COALESCE(u1.val, CAST(0.0 AS DOUBLE))
  ) AS val
FROM (
  SELECT
    1 AS one
) AS dom
LEFT JOIN `g_1_t7` AS u0
  ON TRUE
LEFT JOIN `g_1_t6` AS u1
  ON TRUE;
