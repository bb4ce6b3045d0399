SELECT {keys:sql}sum({value:sql}) AS val FROM {source:sql} WHERE {not_null:sql}{group_by:sql} HAVING sum({value:sql}) <> 0
