.bail on

LOAD {extension:sql};

BEGIN;

{body:sql}

COMMIT;
