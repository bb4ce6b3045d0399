SELECT coalesce(sum(d * d), 0), coalesce(max(d), 0) FROM (SELECT {key:ident} AS x, count(*) AS d FROM {table:ident} GROUP BY {key:ident}) AS g
