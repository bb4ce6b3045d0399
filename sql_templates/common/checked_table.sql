CREATE TEMP TABLE {table:ident} ({keys:sql}val DOUBLE PRECISION NOT NULL)
