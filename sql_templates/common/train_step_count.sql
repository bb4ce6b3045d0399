SELECT step FROM {table:ident}
