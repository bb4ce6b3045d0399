SELECT * FROM {table:ident}
