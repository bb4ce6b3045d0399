DROP TABLE IF EXISTS {table:ident}
