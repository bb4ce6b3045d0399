INSERT INTO {table:ident} SELECT * FROM {rows:ident}
