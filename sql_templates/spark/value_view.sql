CREATE OR REPLACE TEMP VIEW {view:ident} AS SELECT {value:sql} AS val FROM {table:ident}
