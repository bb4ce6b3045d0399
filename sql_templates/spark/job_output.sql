DROP TABLE IF EXISTS {output:ident};
CREATE TABLE {output:ident} USING parquet AS SELECT {columns:sql} FROM {table:ident} WHERE val <> 0;
