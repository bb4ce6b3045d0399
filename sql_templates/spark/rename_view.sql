ALTER VIEW {view:ident} RENAME TO {new:ident}
