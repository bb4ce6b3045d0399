UPDATE {table:ident} SET step = step + 1
