ALTER EXTENSION {extension:ident} UPDATE TO {version:sql}
