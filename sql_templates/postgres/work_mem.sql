SELECT current_setting('work_mem'), pg_size_bytes(current_setting('work_mem'))
