{body:sql}
