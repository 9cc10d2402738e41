"""Logging filters named in settings.LOGGING."""

from __future__ import annotations

import logging


class RefusalOnOneLine(logging.Filter):
    """A request Django refused before any view ran (too many files or fields, a body too
    large) as one warning line naming the request, instead of an error with a traceback.

    Such a refusal is the limit working, not a fault: a traceback per refused upload buries
    real errors and makes every oversized form look like a crash to whoever reads the log.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        where = f"{request.method} {request.path}" if request is not None else "a request"
        status = getattr(record, "status_code", 400)
        said = record.getMessage()
        record.msg, record.args = "Refused %s (%s): %s", (where, status, said)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = record.stack_info = None
        return True
