"""The logs of `mcc serve`: written off the event loop, bounded, and free of client secrets.

A log line written from the event loop to a stderr that is a pipe read slowly (a
supervisor, a container runtime under load) blocks the loop once the pipe is full: no
connection is then accepted, answered or timed out. Every handler here (`BoundedHandler`)
formats a record where it is logged and hands the text to a writer thread of its own
through a queue bounded in bytes; past the bound a line is dropped and counted, and the
count is written when the stream takes lines again. The thread writes with `os.write`
on the descriptor, outside any lock the rest of the process takes, so a blocked stream
holds that thread and nothing else.

`log_config` routes uvicorn's loggers and the root logger (which `asyncio`'s and this
library's propagate to) through such handlers, and puts `HiddenQueryValues` on the access
log: uvicorn prints each request target whole, and clients of Gemini- or Azure-style APIs
send their key in the query (`?key=...`). A client that hangs up is noted at DEBUG, not
warned about once per chunk (`ClientGone`).
"""

from __future__ import annotations

import collections
import copy
import logging
import os
import sys
import threading
from typing import Any, TextIO

from uvicorn.config import LOGGING_CONFIG

from ._target import hide_query_values

__all__ = ["BoundedHandler", "ClientGone", "HiddenQueryValues", "log_config"]

_QUEUE_BYTES = 1024 * 1024
"""Text waiting for a stream, at most; past it lines are dropped and counted."""
_LINE_BYTES = 16 * 1024
"""A longer record (a traceback of a huge message) is cut to this many bytes."""
_FLUSH_WAIT_S = 1.0
"""How long `flush` (at exit) waits for a stream that does not take its lines."""


class BoundedHandler(logging.Handler):
    """A handler whose writes never block the thread that logs (see the module docstring).

    `stream` is where lines go (`sys.stderr` by default); only its descriptor is used.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._fd = (stream or sys.stderr).fileno()
        self._lines: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._dropped = 0
        self._idle = True
        self._ready = threading.Condition(threading.Lock())
        self._closed = False
        self._thread = threading.Thread(target=self._write_lines, name="mcc-log", daemon=True)
        self._thread.start()

    def emit(self, record: logging.LogRecord) -> None:
        """Queue the formatted record, or count it as dropped when the queue is full."""
        try:
            data = (self.format(record) + "\n").encode("utf-8", "replace")
        except Exception:
            self.handleError(record)
            return
        if len(data) > _LINE_BYTES:
            data = data[: _LINE_BYTES - 64] + f"... ({len(data)} bytes)\n".encode()
        with self._ready:
            if self._queued + len(data) > _QUEUE_BYTES:
                self._dropped += 1
                return
            self._lines.append(data)
            self._queued += len(data)
            self._idle = False
            self._ready.notify()

    def _write_lines(self) -> None:
        while True:
            with self._ready:
                while not self._lines and not self._dropped and not self._closed:
                    self._idle = True
                    self._ready.notify_all()
                    self._ready.wait()
                if self._closed and not self._lines:
                    return
                data = b"".join(self._lines)
                if self._dropped:
                    data += f"mcc serve: {self._dropped} log lines dropped: the log stream was not read in time\n".encode()
                self._lines.clear()
                self._queued = self._dropped = 0
            try:
                while data:
                    data = data[os.write(self._fd, data) :]
            except OSError:
                pass  # a closed stream: what it was sent is lost, the process goes on

    def flush(self) -> None:
        """Wait (at most a second) until the queued lines are written."""
        with self._ready:
            self._ready.wait_for(lambda: self._idle, timeout=_FLUSH_WAIT_S)

    def close(self) -> None:
        """Write what is queued (waiting at most a second) and end the writer thread."""
        self.flush()
        with self._ready:
            self._closed = True
            self._ready.notify()
        super().close()


class HiddenQueryValues(logging.Filter):
    """Hides the query values of the request target in uvicorn's access log records.

    `?key=K&api-version=2&K2` is logged `?key=***&api-version=***&***`: the names stay
    (they say what was sent), a member without `=` may be a key itself.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn's h11 and httptools protocols log (client, method, target, version, status).
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path, mark, query = args[2].partition("?")
            if mark:
                record.args = (*args[:2], f"{path}?{hide_query_values(query)}", *args[3:])
        return True


class ClientGone(logging.Filter):
    """asyncio's `socket.send() raised exception.` at DEBUG: a client that hangs up.

    A streaming client that leaves mid-reply gets the chunks already relayed in that turn
    of the event loop written to its closed socket, and asyncio warns for each past the
    fifth (139-249 lines a hang-up). The proxy notes the hang-up itself, once, at DEBUG.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != "socket.send() raised exception.":
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger("model_call_capture").isEnabledFor(logging.DEBUG)


def log_config(level: str = "warning") -> dict[str, Any]:
    """`uvicorn.Config(log_config=...)`: uvicorn's configuration on `BoundedHandler`s.

    The root logger gets the stderr handler too, so `asyncio`'s records and this library's
    never reach Python's blocking last-resort handler. It stays at WARNING whatever
    `level` is: httpx logs each upstream URL whole at INFO, query credentials included;
    this library's loggers get `level`.
    """
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["hidden_query_values"] = {"()": HiddenQueryValues}
    config["filters"]["client_gone"] = {"()": ClientGone}
    handlers = config["handlers"]
    for name in ("default", "access"):
        stream = handlers[name].pop("stream")
        del handlers[name]["class"]
        handlers[name].update({"()": BoundedHandler, "stream": stream})
    handlers["access"]["filters"] = ["hidden_query_values"]
    config["root"] = {"handlers": ["default"], "level": "WARNING"}
    config["loggers"]["model_call_capture"] = {"level": level.upper()}
    config["loggers"]["asyncio"] = {"filters": ["client_gone"]}
    return config
