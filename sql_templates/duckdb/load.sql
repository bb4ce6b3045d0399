LOAD {extension:sql}
