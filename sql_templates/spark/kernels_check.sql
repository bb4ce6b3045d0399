SELECT {catalog:ident}.se_vsum(array(CAST(1 AS DOUBLE)))
