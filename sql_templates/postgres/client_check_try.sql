SELECT set_config('client_connection_check_interval', %s, true)
