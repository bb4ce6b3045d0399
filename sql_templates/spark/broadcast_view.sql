CREATE OR REPLACE TEMPORARY VIEW {view:ident} AS SELECT {value:sql} AS val WHERE {value:sql} IS NOT NULL
