"""How `baton serve` and `baton worker` log: `BATON_LOG_LEVEL` for Baton's loggers (`baton.*`) and uvicorn's,
`BATON_LOG_FORMAT` text (readable lines) or json (one object per line: time, level, logger, message, and the
fields a line carries, such as a decision's hook (`delivery`), repository, number, command, actor, outcome and
revision). Other libraries log their warnings only: at INFO, httpx would log every GitHub call's URL.

No line carries a secret: the lines Baton writes name hooks, issues and logins, never a header, a key or
a token.

A record is handed, as it is, through a queue to one listener thread, which formats and writes it: the thread that
logs (a decision's, a request's) neither formats the line nor waits for stderr. The listener takes the records in
bursts: a batch of decisions logging twenty lines wakes it once, not twenty times (each wake-up costs the thread
that logs its turn at the interpreter), and the burst's lines leave in one write once the queue is empty, not
one write each.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import queue
import re
import sys
import time
from datetime import UTC, datetime
from logging.handlers import QueueHandler, QueueListener
from typing import Any
from urllib.parse import unquote_plus

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


class _Handoff(QueueHandler):
    """Puts each record on the queue unformatted (the standard handler formats it first, on the logging thread):
    the listener formats it."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


# How long the listener, having emptied the queue, waits for the rest of a burst before it sleeps until woken.
_PAUSE = 0.005
# The most lines a burst holds before they are written: a queue that is never empty still has its lines written.
_MOST_LINES = 256


class _Lines(logging.StreamHandler):  # type: ignore[type-arg]
    """Formats each record into the lines of the burst under way; `write` puts them on the stream in one write."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.append(self.format(record) + self.terminator)
        except Exception:
            self.handleError(record)
        if len(self._lines) >= _MOST_LINES:
            self.write()

    def write(self) -> None:
        """The lines formatted since the last write, at once."""
        if not self._lines:
            return
        lines, self._lines = "".join(self._lines), []
        with contextlib.suppress(Exception):  # a closed or broken stderr must not stop the listener
            self.stream.write(lines)
            self.stream.flush()


class _Listener(QueueListener):
    """Woken by the first record after a quiet spell, it writes that one, then takes the queue's records every
    `_PAUSE` until a pause brings none: the records logged meanwhile wake nobody. The lines of what it took leave
    in one write whenever the queue is empty."""

    def __init__(self, records: queue.SimpleQueue[Any], handler: _Lines) -> None:
        super().__init__(records, handler)
        self.records = records
        self.lines = handler
        self._busy = False

    def dequeue(self, block: bool) -> Any:
        try:
            return self.records.get_nowait()
        except queue.Empty:
            if not block:
                raise
        self.lines.write()  # everything taken so far, before waiting for more
        if self._busy:
            self._busy = False
            time.sleep(_PAUSE)
            with contextlib.suppress(queue.Empty):
                found = self.records.get_nowait()
                self._busy = True
                return found
        found = self.records.get()
        self._busy = True
        return found

    def stop(self) -> None:
        super().stop()
        self.lines.write()  # the lines taken with the last records, before the end came


_listening: list[QueueListener] = []  # the one listener of this process, once `configure` has run


def _stop_listening() -> None:
    """Write what is queued, then stop the listener (at exit, and before `configure` starts a new one)."""
    while _listening:
        _listening.pop().stop()


atexit.register(_stop_listening)


# Query parameters whose values are secrets in a request line: the sign-in callback's `code` and `state` (GitHub's
# one-time code and the browser's binding to it), and any token put in a URL.
_SECRET_PARAMETERS = frozenset({"code", "state", "token", "access_token", "refresh_token", "client_secret"})
_PARAMETER = re.compile(r"(?P<name>[^&=?]+)=(?P<value>[^&]*)")


def without_secrets(path: str) -> str:
    """`path` (a request's path and query) with the values of secret query parameters replaced by `[redacted]`."""
    before, mark, query = path.partition("?")
    if not mark:
        return path

    def hide(found: re.Match[str]) -> str:
        secret = unquote_plus(found["name"]).lower() in _SECRET_PARAMETERS
        return f"{found['name']}=[redacted]" if secret else found.group()

    return before + "?" + _PARAMETER.sub(hide, query)


class _AccessLine(logging.Filter):
    """uvicorn's request lines (`--access-log`) without the secrets a URL may carry: their path is its third
    argument."""

    def filter(self, record: logging.LogRecord) -> bool:
        arguments = record.args
        if isinstance(arguments, tuple) and len(arguments) >= 3 and isinstance(arguments[2], str):
            record.args = (*arguments[:2], without_secrets(arguments[2]), *arguments[3:])
        return True


def configure(settings: Settings) -> None:
    """Send every record to stderr in the chosen format, through the listener thread; Baton's own at
    `settings.log_level`."""
    handler = _Lines(sys.stderr)
    handler.setFormatter(JsonLines() if settings.log_format == "json" else logging.Formatter(_TEXT))
    _stop_listening()
    records: queue.SimpleQueue[Any] = queue.SimpleQueue()
    listener = _Listener(records, handler)
    listener.start()
    _listening.append(listener)
    # No line names a thread, a process or the line of code that logged it: a record need not look them up (half
    # the cost of making one; the logging HOWTO's "Optimization").
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    logging._srcfile = None
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(_Handoff(records))
    root.setLevel(logging.WARNING)
    logging.getLogger("baton").setLevel(settings.log_level)
    access = logging.getLogger("uvicorn.access")
    if not any(isinstance(one, _AccessLine) for one in access.filters):
        access.addFilter(_AccessLine())
    # uvicorn's loggers get their level from `uvicorn.run(log_level=…)`, and without a `log_config` of their own
    # they reach this handler.
