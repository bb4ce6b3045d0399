"""Session settings the PostgreSQL backend changes for its own work on a caller's
connection, and the server's check for a vanished client."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from ..sql.templates import render

# How often a running statement checks that its client is still connected: a client
# killed mid-statement (SIGKILL, OOM killer, lost network) stops its backend within this
CLIENT_CHECK_SECONDS = 1
CLIENT_CHECK = f"{CLIENT_CHECK_SECONDS}s"


@contextmanager
def session_setting(conn, name: str, value: str) -> Iterator[None]:
    """The session's setting `name` is `value` inside the block, and what it was after
    (a failed transaction's rollback restores it)."""
    from psycopg import pq

    was = conn.execute(render("postgres/setting_swap"), (name, name, value)).fetchone()[0]
    try:
        yield
    finally:
        if conn.info.transaction_status in (pq.TransactionStatus.IDLE,
                                            pq.TransactionStatus.INTRANS):
            conn.execute(render("postgres/set_setting"), (name, was))


def client_check_works(conn) -> bool:
    """Whether the server takes client_connection_check_interval = CLIENT_CHECK: PostgreSQL
    14 or later on a platform where it can see a closed socket (Linux, for one). Tried in
    a transaction rolled back after: nothing changes."""
    import psycopg

    try:
        with conn.transaction(force_rollback=True):
            conn.execute(render("postgres/client_check_try"), (CLIENT_CHECK,))
    except psycopg.Error:
        return False
    return True
