SELECT %s::regclass::text
