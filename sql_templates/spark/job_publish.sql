DROP TABLE IF EXISTS {output:ident};
ALTER TABLE {staged:ident} RENAME TO {output:ident};
