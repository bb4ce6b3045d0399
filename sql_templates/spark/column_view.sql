CREATE OR REPLACE TEMP VIEW {view:ident} AS SELECT {keys:sql}{column:ident} AS val FROM {table:ident}
