DROP TABLE {table:ident}
