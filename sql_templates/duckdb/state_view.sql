CREATE OR REPLACE VIEW {view:ident} AS SELECT {columns:sql} FROM {table:ident}
