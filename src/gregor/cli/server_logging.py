"""How `gregor server` writes its log: one line per event, levelled, to stderr or a file.

`--log-file` uses a WatchedFileHandler, which reopens the file when logrotate (or an operator)
moves it away, so rotation needs no signal and loses no line. `--log-format json` writes one
JSON object per line (time, level, logger, message, and the exception when there is one) for
log shippers; `text` is `time LEVEL logger message`.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import sys
import time

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
                 "level": record.levelname, "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str, log_file: str | None, log_format: str) -> None:
    """Replace the root handlers with one writing `log_format` lines to `log_file` (or stderr)."""
    handler: logging.Handler = (logging.handlers.WatchedFileHandler(log_file, encoding="utf-8")
                                if log_file else logging.StreamHandler(sys.stderr))
    if log_format == "json":
        formatter: logging.Formatter = JsonFormatter()
        formatter.converter = time.gmtime
    else:
        formatter = logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for existing in list(root.handlers):
        root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
