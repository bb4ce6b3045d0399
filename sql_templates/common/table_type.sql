SELECT table_type FROM information_schema.tables WHERE table_name = {param:sql}
