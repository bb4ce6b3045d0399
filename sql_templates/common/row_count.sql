SELECT count(*) FROM {table:ident}
