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
  SE_KERNEL2('add;sum;1;4;1;1', u0.val, u1.val) AS val
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
    SE_VALUE1('id;max;0;4;1', u0.val) AS val
  FROM "g_1_t3" AS u0
)
SELECT
  SE_STACK('6;6;1;;', val, (
    (
      "i_0"
    ) * 1
  )) AS val
FROM "g_1_t4"
HAVING
  COUNT(*) > 0;

-- T[] = exp(M[i])
-- P[i] = P~1[i] / T[]
CREATE TEMPORARY TABLE "g_1_t7" AS
WITH "g_1_t6" AS (
  SELECT
    SE_VALUE1('exp;sum;0;6;1', u0.val) AS val
  FROM (
    SELECT
      1 AS one
  ) AS dom
  LEFT JOIN "g_1_t5" AS u0
    ON TRUE
)
SELECT
  SE_FUSED('fused;6;6,1;$0,exp@f,$1,div@f', u0.val, u1.val) AS val
FROM (
  SELECT
    1 AS one
) AS dom
LEFT JOIN "g_1_t5" AS u0
  ON TRUE
LEFT JOIN "g_1_t6" AS u1
  ON TRUE;
