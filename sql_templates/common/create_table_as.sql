CREATE TABLE {table:ident} AS {query:sql}
