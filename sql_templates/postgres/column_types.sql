SELECT attname, atttypid::int FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped
