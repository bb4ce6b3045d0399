SELECT set_config(%s, %s, false)
