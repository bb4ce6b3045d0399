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
    SE_KERNEL2('mul;sum;2;6,5,4;4,0,1;0,1,5', p0."val", p1."val") AS "val"
  FROM "g_1_t1" AS p0
  POSITIONAL JOIN "g_1_t2" AS p1
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
        SE_SPLIT('30;6;5;5;1', r.val) AS se_pieces
      FROM "g_1_t3" AS r
    ) AS r
  ) AS t
  WHERE
    NOT val IS NULL
)
SELECT
  u0."i_0" AS "i_0",
  SE_VALUE2('mul;sum;0;5;1;1', u0.val, u1.val) AS val
FROM "g_1_t4" AS u0
JOIN "g_1_t5" AS u1
  ON TRUE;
