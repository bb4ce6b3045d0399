SELECT current_setting(%s), set_config(%s, %s, false)
