CREATE TABLE {table:ident} AS SELECT * FROM {rows:ident}
