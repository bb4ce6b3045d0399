.bail on

BEGIN;

{body:sql}

COMMIT;
