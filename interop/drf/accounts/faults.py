"""Fault knobs for the tests, held in the server process and set through
POST /api/_faults/.

expire_cursors: while it is on, the cursor route answers a cursor issued
before it was last turned on (or, with max_age_seconds, one older than that)
with expired_status: 410 {"detail": "cursor expired"}, or 400
{"detail": "Cursor expired"} as some APIs answer. Every POST that turns it
on starts a new generation, so it expires every cursor issued so far.
"""

import threading
import time

from rest_framework.exceptions import APIException

_lock = threading.Lock()
_state = {
    "expire_cursors": False,
    "expired_status": 410,
    "max_age_seconds": None,
    # Cursors carry the generation they were issued in.
    "generation": 1,
}

EXPIRED_DETAIL = {410: "cursor expired", 400: "Cursor expired"}


def state():
    with _lock:
        return dict(_state)


def update(expire_cursors, expired_status, max_age_seconds):
    with _lock:
        if expire_cursors:
            _state["generation"] += 1
        _state["expire_cursors"] = expire_cursors
        _state["expired_status"] = expired_status
        _state["max_age_seconds"] = max_age_seconds
        return dict(_state)


def generation():
    with _lock:
        return _state["generation"]


class CursorExpired(APIException):
    def __init__(self, status):
        super().__init__(EXPIRED_DETAIL[status], "cursor_expired")
        self.status_code = status


def check_cursor(issued_generation, issued_at):
    """Raises CursorExpired when the knob is on and the cursor is too old."""
    s = state()
    if not s["expire_cursors"]:
        return
    stale = issued_generation < s["generation"]
    if s["max_age_seconds"] is not None and time.time() - issued_at > s["max_age_seconds"]:
        stale = True
    if stale:
        raise CursorExpired(s["expired_status"])
