ALTER TABLE {table:ident} RENAME TO {new:ident}
