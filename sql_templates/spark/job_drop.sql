DROP VIEW IF EXISTS {table:ident}
