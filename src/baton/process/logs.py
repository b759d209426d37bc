"""How `baton serve` and `baton worker` log: `BATON_LOG_LEVEL` for Baton's loggers (`baton.*`) and uvicorn's,
`BATON_LOG_FORMAT` text (readable lines) or json (one object per line: time, level, logger, message, and the
fields a line carries, such as a decision's delivery, repository, number, command, actor, outcome and
revision). Other libraries log their warnings only: at INFO, httpx would log every GitHub call's URL.

No line carries a secret: the lines Baton writes name deliveries, issues and logins, never a header, a key or
a token.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from baton.environment.settings import Settings

# The attributes every LogRecord has; anything else on a record came in `extra=` and is one of its fields.
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime", "taskName"}
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a line was logged with (`extra=`)."""
    return {name: value for name, value in record.__dict__.items() if name not in _STANDARD}


class JsonLines(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in fields(record).items():
            line.setdefault(name, value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def configure(settings: Settings) -> None:
    """Send every record to stderr in the chosen format; Baton's own at `settings.log_level`."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if settings.log_format == "json" else logging.Formatter(_TEXT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("baton").setLevel(settings.log_level)
    # uvicorn's loggers get their level from `uvicorn.run(log_level=…)`, and without a `log_config` of their own
    # they reach this handler.
