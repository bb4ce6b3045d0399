CREATE OR REPLACE TEMP VIEW {table:ident} AS SELECT CAST({step:number} AS BIGINT) AS step
