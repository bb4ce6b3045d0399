SELECT count(*), coalesce(max(abs(val)), 0), coalesce(bool_and({finite:sql}), TRUE){distinct:sql} FROM {table:ident}
