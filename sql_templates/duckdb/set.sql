SET {setting:ident} = {value:sql}
