"""Turning failures of lower layers into Kafka error codes for responses."""

from __future__ import annotations

import logging

from gregor.protocol.error_codes import ErrorCode

log = logging.getLogger("gregor.broker")


def error_code_of(error: BaseException) -> tuple[ErrorCode, str | None]:
    """The Kafka error code an exception stands for, and a message for the client.

    Lower layers raise exceptions that carry Kafka's numeric code; anything else is a bug,
    logged with its traceback and answered with UNKNOWN_SERVER_ERROR so the client is told.
    """
    code = getattr(error, "code", None)
    if code is None:
        code = getattr(error, "error_code", None)
    if code is None:
        log.error("unexpected failure while serving a request", exc_info=error)
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(error).__name__}: {error}"
    try:
        return ErrorCode(code), (str(error) or None)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR, str(error) or None
