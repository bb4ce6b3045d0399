INSERT INTO {table:ident} {query:sql}
