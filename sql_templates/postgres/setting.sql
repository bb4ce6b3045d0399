SELECT current_setting(%s, true)
