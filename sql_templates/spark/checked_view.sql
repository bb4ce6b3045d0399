CACHE TABLE {table:ident} AS SELECT {keys:sql}val FROM ({query:sql}) AS s
