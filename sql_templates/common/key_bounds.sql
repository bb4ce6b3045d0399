SELECT {bounds:sql} FROM {source:sql}
