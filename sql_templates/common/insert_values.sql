INSERT INTO {table:ident} VALUES
  {rows:sql}
