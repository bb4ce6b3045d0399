SELECT current_setting({setting:sql})
