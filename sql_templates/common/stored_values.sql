SELECT * FROM {table:ident} WHERE val IS NOT NULL
