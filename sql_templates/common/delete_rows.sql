DELETE FROM {table:ident}
