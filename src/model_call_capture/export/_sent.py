"""What an incremental export to an endpoint sent: the state the engine keeps for it.

An endpoint (an OTLP collector) has no place beside it for a manifest, so the engine keeps
one state file per source and endpoint: by default under `$XDG_STATE_HOME` (else
`~/.local/state`) `model-call-capture/export-sent/<key>.json`, the key a hash of the
capture directory and the endpoint without credentials; or the file the caller names
(`state=`, `mcc export --state FILE`).

It holds, per rollout, a mark per capture file (`FileMark`): the file's inode, size and
mtime as they were before it was read, a hash of its first bytes, and how many of its
lines were looked at. Capture files are append-only, so the next export:

- skips a rollout whose files are all as marked, without reading it (`pending`);
- reads the others whole (their files are merged by `completed_at`, so positions in the
  merge move, positions in a file do not), and hands the sink only the lines past each
  file's mark (`UnsentRecords`); a file not marked, replaced (another inode, a shorter size,
  other first bytes: cleared and captured again, or rewritten by `mcc compact`) is read
  from its first line: its calls are sent again, as the same spans.

The state grows with the rollouts and their files, never with the calls. It is written
(atomically, 0600) only after the sink's `write` returned, that is once the endpoint
accepted every span: an export that fails leaves it as it was and the next one sends again
what this one could not. A state that is not one (unreadable, of another format, larger
than its listing can explain, of another endpoint, source or options) is refused with an
`ExportError` naming the file: it is never guessed at, nor silently started afresh. An
export holds `<state>.lock` while it runs: a second one at the same time stops with an
error instead of sending the same calls. No
credential is in it or its name: the endpoint is kept without userinfo or query, headers
never.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import msgspec

from .. import _codec
from ..contracts import ModelCallRecord
from ..errors import ExportError
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..records import RecordStream, iter_rollout_records
from ..store import Rollout
from . import _atomic

__all__ = [
    "HEAD_BYTES",
    "STATE_FORMAT",
    "FileMark",
    "RolloutMarks",
    "SentState",
    "Unsent",
    "UnsentRecords",
    "default_state_path",
    "shown_endpoint",
]

STATE_FORMAT = "mcc-export-sent/1"
HEAD_BYTES = 4096
"""Bytes of a file's start whose hash tells a file appended to from one written anew."""

_BASE_BYTES = 64 << 20
_BYTES_PER_FILE = 1024  # a mark is about 100 bytes; names are at most 255

_Count = Annotated[int, msgspec.Meta(ge=0)]


class FileMark(msgspec.Struct, array_like=True, frozen=True, gc=False):
    """One capture file as an incremental export last saw it (before reading it)."""

    name: str
    """The file's name (the shared file's or a segment's)."""
    inode: _Count
    size: _Count
    mtime_ns: _Count
    lines: _Count
    """Lines of the file looked at: the next export goes on from this line."""
    head: str
    """SHA-256 (16 hex) of the file's first `min(size, HEAD_BYTES)` bytes."""


RolloutMarks = tuple[str, tuple[FileMark, ...]]
"""A rollout id and the marks of its files, as a `Part` hands them back (`Part.sent`)."""


class _Document(msgspec.Struct, forbid_unknown_fields=True):
    format: str
    destination: str
    source: str
    options: dict[str, Any]
    rollouts: dict[str, list[FileMark]]


_decoder = msgspec.json.Decoder(_Document)


@dataclass(frozen=True, slots=True)
class Unsent(Rollout):
    """A rollout of an incremental export, with the marks of its files from the last one."""

    sent: tuple[FileMark, ...] = ()


def shown_endpoint(url: str) -> str:
    """`url` without userinfo, query or fragment: how the state names an endpoint."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def default_state_path(destination: str, source: str) -> Path:
    """Where the state of exports of `source` (a directory) to `destination` lives by default."""
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    key = hashlib.sha256(f"{shown_endpoint(destination)}\0{source}".encode()).hexdigest()[:32]
    return root / "model-call-capture" / "export-sent" / f"{key}.json"


def _observe(path: Path) -> tuple[os.stat_result, bytes] | None:
    """The file's status and first `HEAD_BYTES` bytes; None when it is gone or not a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        return st, os.pread(fd, HEAD_BYTES, 0)
    finally:
        os.close(fd)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _version(path: Path) -> tuple[str, int, int, int] | None:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    return path.name, st.st_ino, st.st_size, st.st_mtime_ns


class UnsentRecords:
    """The records of a rollout that an incremental export has not looked at before.

    For an `Unsent` rollout, the lines past each file's mark (every line of a file
    unmarked or replaced); for a plain `Rollout`, every record (and no marks: its files
    are not observed). Iterate once; then `marks` are the rollout's new marks (for
    `Part.sent`) and `damaged` the damaged lines skipped.
    A record the sink leaves out (`--since`) counts as looked at: it is not offered again.
    """

    def __init__(self, rollout: Rollout, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.rollout = rollout
        self._stream: RecordStream = iter_rollout_records(rollout, max_line_bytes=max_line_bytes)
        self._looked: dict[str, int] = {}
        self._marks: list[FileMark] = []

    @property
    def damaged(self) -> int:
        """Damaged lines skipped while reading."""
        return self._stream.damaged

    @property
    def marks(self) -> RolloutMarks:
        """The rollout id and the new marks of its files (once iterated)."""
        looked = self._looked
        return self.rollout.id, tuple(
            msgspec.structs.replace(m, lines=max(m.lines, looked.get(m.name, 0)))
            for m in self._marks
        )

    def _resume_from(self) -> dict[str, int]:
        """The first line to offer of each file, observing the files before they are read."""
        if not isinstance(self.rollout, Unsent):  # not incremental: no marks to make
            return {}
        before = {m.name: m for m in self.rollout.sent}
        start = {}
        for path in self.rollout.files:
            seen = _observe(path)
            if seen is None:
                continue
            st, head = seen
            mark = before.get(path.name)
            same = (
                mark is not None
                and mark.inode == st.st_ino
                and st.st_size >= mark.size
                and _digest(head[: min(mark.size, HEAD_BYTES)]) == mark.head
            )
            first = mark.lines if same and mark is not None else 0
            start[path.name] = first
            self._marks.append(
                FileMark(path.name, st.st_ino, st.st_size, st.st_mtime_ns, first, _digest(head))
            )
        return start

    def __iter__(self) -> Iterator[ModelCallRecord]:
        start = self._resume_from()
        looked = self._looked
        lines = self._stream.lines
        for record in self._stream:
            name = lines.file.name if lines.file is not None else ""
            position = lines.position
            if position < start.get(name, 0):
                continue
            if position >= looked.get(name, 0):
                looked[name] = position + 1
            yield record


class SentState:
    """The state file of one source's incremental exports to one endpoint.

    While `locked`, `load` it, ask it which rollouts to read (`pending`), and once every
    span was accepted `save` it with the marks the parts handed back.
    """

    def __init__(
        self, path: Path, *, destination: str, source: str, options: Mapping[str, Any]
    ) -> None:
        self.path = path
        """The state file."""
        self.destination = shown_endpoint(destination)
        self.source = source
        self.options = dict(options)
        self.whole = True
        """The source is a whole directory: rollouts no longer in it are forgotten on `save`."""
        self._rollouts: dict[str, list[FileMark]] = {}

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold `<state>.lock` (an exclusive `flock`) while the block runs; `ExportError` at
        once when another export holds it, so two runs never send the same calls."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(lock, flags, 0o600)
        except OSError as exc:
            raise ExportError(f"cannot open {lock}: {exc.strerror}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ExportError(
                    f"another incremental export to {self.destination} is running (it holds"
                    f" {lock}); run this one when it is done"
                ) from None
            yield
        finally:
            os.close(fd)

    def load(self, files: int) -> SentState:
        """Read the state (none yet: nothing was sent); `ExportError` for one that is not one.

        `files` is the number of capture files listed: a state larger than they explain
        (`64 MiB + 1 KiB` a file) is refused unread, so memory stays bounded.
        """
        limit = _BASE_BYTES + _BYTES_PER_FILE * files
        try:
            # Non-blocking: a FIFO put there must not hang the export.
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return self
        except OSError as exc:
            raise ExportError(f"cannot read the export state {self.path}: {exc.strerror}") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ExportError(f"{self.path}: not a regular file; {self._advice()}")
            with open(fd, "rb", closefd=False) as f:
                data = f.read(limit + 1)
        finally:
            os.close(fd)
        if len(data) > limit:
            raise ExportError(
                f"{self.path}: over {limit >> 20} MiB, more than an export state of "
                f"{files} capture files holds; {self._advice()}"
            )
        try:
            document = _decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise ExportError(
                f"{self.path}: not an export state ({exc}); {self._advice()}"
            ) from None
        self._check(document)
        self._rollouts = document.rollouts
        return self

    def _advice(self) -> str:
        return "remove it to send everything again, or name another state file (--state)"

    def _check(self, document: _Document) -> None:
        if document.format != STATE_FORMAT:
            raise ExportError(
                f"{self.path}: state format {document.format!r}, not {STATE_FORMAT!r}; "
                f"{self._advice()}"
            )
        mine = (self.destination, self.source, self.options)
        if (document.destination, document.source, document.options) != mine:
            raise ExportError(
                f"{self.path} is the state of an export of {document.source or 'rollouts'} to "
                f"{document.destination} with {_spelled(document.options)}, not of "
                f"{self.source or 'rollouts'} to {self.destination} with "
                f"{_spelled(self.options)}; {self._advice()}"
            )

    def pending(self, rollouts: Iterable[Rollout]) -> list[Unsent]:
        """The rollouts with a file that is new or differs from its mark, with their marks."""
        out = []
        for rollout in rollouts:
            marks = tuple(self._rollouts.get(rollout.id, ()))
            now = [v for v in map(_version, rollout.files) if v is not None]
            if marks and now == [(m.name, m.inode, m.size, m.mtime_ns) for m in marks]:
                continue
            out.append(Unsent(rollout.id, rollout.files, marks))
        return out

    def save(self, sent: Iterable[RolloutMarks], listed: Sequence[Rollout] | None) -> None:
        """Publish the state: the marks of `sent` over the ones loaded, atomically (0600).

        `listed`: the whole listing of the source, whose other rollouts are forgotten
        (cleared since); None keeps every rollout marked before.
        """
        rollouts = self._rollouts
        if listed is not None:
            ids = {r.id for r in listed}
            rollouts = {k: v for k, v in rollouts.items() if k in ids}
        for rollout_id, marks in sent:
            rollouts[rollout_id] = list(marks)
        document = _Document(
            STATE_FORMAT,
            self.destination,
            self.source,
            self.options,
            dict(sorted(rollouts.items())),
        )
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = _atomic.temp_path(self.path)
        try:
            _atomic.create_file(tmp, 0o600)
            tmp.write_bytes(_codec.encode(document) + b"\n")
            _atomic.publish_file(tmp, self.path)
        except OSError as exc:
            raise ExportError(
                f"the spans were sent, but the export state {self.path} could not be written "
                f"({exc.strerror or exc}): the next incremental export sends them again"
            ) from None
        finally:
            _atomic.remove(tmp)


def _spelled(options: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items())) or "no options"
