"""The collector's rollout records beside a capture directory: reward and scalar fields per rollout.

`collect()` writes one JSON object a line per finished rollout (`rollouts.jsonl`): the
agent's record (`reward`, `response`, the row's own fields), the `_ng_*` stamps that name
the rollout, and the `ng_model_call_capture` attachment. `Outcomes` reads that file into
one small `Outcome` per rollout the directory has captures for, and reads on from where
it stopped when the file grows (a collector still running appends to it).

Every line is hostile: a line that is not a JSON object, names no valid rollout, or is
longer than the reader's cap is counted and named (`OutcomeFile.problems`, the first few);
a second line for one rollout replaces the first and is counted; a reward that is not a
finite number is kept as text and counted. Only top-level scalar members are kept (the
first `FIELDS_MAX` names met, names and text cut), so memory is one small `Outcome` per
rollout with captures plus one line while reading: never the file, never a row's
`response` or attachment (decoded as raw JSON members and skipped, not built).
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from ..errors import CaptureError, InvalidRolloutIdError
from ..reader import DEFAULT_MAX_LINE_BYTES, OversizedLine
from ..rollout_ids import rollout_id_for_body
from ..store import read_file_lines

__all__ = [
    "FIELDS_MAX",
    "ROLLOUTS_FILE_NAME",
    "Outcome",
    "OutcomeFile",
    "Outcomes",
    "Scalar",
    "beside",
]

ROLLOUTS_FILE_NAME = "rollouts.jsonl"
"""The collector's output file the viewer looks for beside the captures."""
FIELDS_MAX = 12
"""Distinct field names kept from the file besides `reward` (the first met)."""
_NAME_CHARS = 60  # characters of a field name kept
_VALUE_CHARS = 120  # characters of a text value kept
_PROBLEMS_MAX = 20  # lines named; the rest only counted
_PROBLEM_CHARS = 300
_STAMP_PREFIX = "_ng_"  # the rollout's id stamps: the row's id, not a field to show
_UNMATCHED_MAX = 10_000  # ids of rows without captures remembered (then: any new id rereads)
_INT_MAX = 2**63  # larger integers are shown as text (the page's numbers are doubles)

Scalar = str | int | float | bool | None
"""A value of a field kept: JSON's scalars (text cut at 120 characters)."""

_members = msgspec.json.Decoder(dict[str, msgspec.Raw])
_scalar: msgspec.json.Decoder[Scalar] = msgspec.json.Decoder(Scalar)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Outcome(msgspec.Struct, kw_only=True):
    """What the collector recorded for one rollout."""

    line: int
    """Its line in the rollouts file (from 1, as editors number them)."""
    reward: float | None = None
    """`reward` when it is a finite number; None when absent or anything else."""
    fields: dict[str, Scalar] = msgspec.field(default_factory=dict)
    """The row's scalar members (`reward` among them, as written), names and text cut."""


class OutcomeFile(msgspec.Struct, kw_only=True):
    """What the viewer made of the rollouts file: where it is and what was wrong with it."""

    path: str | None = None
    """The file read; None when there is none."""
    rows: int = 0
    """Non-blank lines read."""
    joined: int = 0
    """Rows for a rollout the directory has captures for (shown in the table)."""
    without_capture: int = 0
    """Rows naming a rollout with no capture file here (not kept)."""
    duplicates: int = 0
    """Rows naming a rollout an earlier row named (the later row is shown)."""
    damaged: int = 0
    """Lines that are not a JSON object naming a valid rollout, or are too long."""
    rewards_not_numbers: int = 0
    """Rows whose `reward` is there but not a finite number (shown as text)."""
    fields: list[str] = msgspec.field(default_factory=list)
    """The field names kept, in the order first met (`reward` first when present)."""
    fields_left_out: int = 0
    """Values of fields past the first `FIELDS_MAX` names, not kept."""
    problems: list[str] = msgspec.field(default_factory=list)
    """The first damaged, duplicate and non-number lines, each `line N: why`."""
    note: str | None = None
    """Why the file could not be read, when it could not."""


class Outcomes:
    """The outcomes of the rollouts listed in a capture directory, read from its rollouts file.

    `path` is the file to read, or a callable giving it at each `refresh` (it may appear
    later); not thread-safe: its owner (`RolloutIndex`) calls `refresh` under its lock.
    """

    def __init__(
        self,
        path: Path | Callable[[], Path | None] | None,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._path = path
        self.max_line_bytes = max_line_bytes
        self.by_id: dict[str, Outcome] = {}
        """Rollout id -> its outcome (only rollouts with captures)."""
        self.file = OutcomeFile()
        self._version: tuple[str, int, int, int] | None = None  # path, inode, size, mtime
        self._offset = 0  # bytes read (where an appended read starts)
        self._lines = 0  # lines read, blank ones included (the next line's number - 1)
        self._ids: frozenset[str] = frozenset()
        self._unmatched: set[str] | None = set()  # ids of rows without captures; None: too many

    def _where(self) -> Path | None:
        return self._path() if callable(self._path) else self._path

    def refresh(self, rollout_ids: Iterable[str], *, max_bytes: int | None = None) -> bool:
        """Read what the file gained since the last refresh (all of it when it was replaced,
        cut, moved, or when a rollout a row named without captures got them); True when
        anything changed. With `max_bytes`, more than that to read is left for a later
        refresh without it (a page does not wait for a huge file: the background reads it)."""
        ids = frozenset(rollout_ids)
        path = self._where()
        version = _version(path)
        if version is None:
            before = self.file
            self.by_id, self.file, self._version = {}, OutcomeFile(), None
            if path is not None and os.path.lexists(path):
                self.file.path = str(path)
                self.file.note = "not a regular file (a symlink, a directory, a FIFO?): not read"
            return self.file != before
        old = self._version
        appended = old is not None and old[:2] == version[:2] and old[2] <= version[2]
        new = ids - self._ids
        unmatched = bool(new) and (self._unmatched is None or not new.isdisjoint(self._unmatched))
        if version == old and not unmatched:
            return False
        whole = not appended or unmatched
        if max_bytes is not None and version[2] - (0 if whole else self._offset) > max_bytes:
            if self._version is not None:
                return False  # what was read stays shown meanwhile
            before = self.file
            self.file = OutcomeFile(
                path=str(path), note=f"{version[2]:,} bytes, being read in the background"
            )
            return self.file != before
        if whole:
            self.by_id, self.file = {}, OutcomeFile(path=str(path))
            self._offset = self._lines = 0
            self._unmatched = set()
        self._ids = ids
        self._version = version
        self._read(Path(version[0]), ids)
        return True

    def _read(self, path: Path, ids: frozenset[str]) -> None:
        lines = read_file_lines(
            path,
            numbering="editor",
            max_line_bytes=self.max_line_bytes,
            start=self._offset,
            lock=False,  # the collector takes no lock on it: a torn last line is held back
        )
        held = 0
        try:
            for number, raw in lines:
                if lines.unterminated:  # being written: read from its start next time
                    held = raw.size if type(raw) is OversizedLine else len(raw)
                    continue  # (the last line: the loop ends, and `lines` counts it)
                self._row(self._lines + number, raw, ids)
        except (OSError, CaptureError) as exc:
            why = " ".join(str(exc).split())
            self.file.note = _cut(f"not read to its end: {why}", _PROBLEM_CHARS)
            self._version = None  # read again whole next time
            return
        self._lines += lines.count - (1 if held else 0)
        self._offset += lines.size - held

    def _problem(self, line: int, why: str) -> None:
        if len(self.file.problems) < _PROBLEMS_MAX:
            self.file.problems.append(_cut(f"line {line}: {' '.join(why.split())}", _PROBLEM_CHARS))

    def _row(self, line: int, raw: bytes, ids: frozenset[str]) -> None:
        self.file.rows += 1
        if type(raw) is OversizedLine:
            self.file.damaged += 1
            self._problem(line, f"longer than {self.max_line_bytes:,} bytes ({raw.size:,})")
            return
        try:
            members = _members.decode(raw)
            stamps = {k: _scalar.decode(v) for k, v in members.items() if k.startswith("_ng_")}
            rollout_id = rollout_id_for_body(stamps)
        except (msgspec.DecodeError, InvalidRolloutIdError, RecursionError) as exc:
            self.file.damaged += 1
            self._problem(line, str(exc) or type(exc).__name__)
            return
        if rollout_id is None:
            self.file.damaged += 1
            self._problem(line, "names no rollout (_ng_rollout_id, or _ng_task_index and "
                          "_ng_rollout_index)")  # fmt: skip
            return
        if rollout_id not in ids:
            self.file.without_capture += 1
            if self._unmatched is not None:  # its capture may land later: read again then
                self._unmatched.add(rollout_id)
                if len(self._unmatched) > _UNMATCHED_MAX:
                    self._unmatched = None
            return
        outcome = Outcome(line=line)
        for name, value in members.items():
            if not name.startswith(_STAMP_PREFIX):
                self._field(outcome, name, value)
        if "reward" in outcome.fields and outcome.reward is None:
            self.file.rewards_not_numbers += 1
            self._problem(line, f"reward {outcome.fields['reward']!r} is not a number")
        earlier = self.by_id.get(rollout_id)
        if earlier is not None:
            self.file.duplicates += 1
            self._problem(line, f"rollout {rollout_id} again (line {earlier.line}): shown")
        else:
            self.file.joined += 1
        self.by_id[rollout_id] = outcome

    def _field(self, outcome: Outcome, name: str, raw: msgspec.Raw) -> None:
        scalar, value = _value(raw)
        if not scalar:
            return
        name = _cut(name, _NAME_CHARS)
        names = self.file.fields
        if name == "reward":
            if name not in names:
                names.insert(0, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                outcome.reward = _finite(value)
        elif name not in names:
            if len(names) - ("reward" in names) >= FIELDS_MAX:
                self.file.fields_left_out += 1
                return
            names.append(name)
        outcome.fields[name] = value


def _value(raw: msgspec.Raw) -> tuple[bool, Scalar]:
    """`(True, value)` for a scalar member (text cut, huge integers as text), else `(False, None)`."""
    if bytes(memoryview(raw)[:1]) in (b"{", b"["):
        return False, None  # a response, an attachment: never built
    value = _scalar.decode(raw)
    if isinstance(value, str):
        return True, _cut(value, _VALUE_CHARS)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_MAX:
        return True, _cut(str(value), _VALUE_CHARS)
    if isinstance(value, float) and not math.isfinite(value):
        return True, str(value)  # JSON has no infinity: the page would get null
    return True, value


def _finite(value: float) -> float | None:
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _version(path: Path | None) -> tuple[str, int, int, int] | None:
    """Which regular file `path` is and how far it grew; None when it is absent or not one."""
    if path is None:
        return None
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):  # a symlink, a FIFO, a directory: never opened
        return None
    return str(path), st.st_ino, st.st_size, st.st_mtime_ns


def beside(root: Path) -> Callable[[], Path | None]:
    """Where a collector's file is, asked at each refresh: `rollouts.jsonl` in the capture
    directory `root`, else in the directory holding it (`mcc demo`'s layout), else None."""

    def find() -> Path | None:
        for path in (root / ROLLOUTS_FILE_NAME, root.parent / ROLLOUTS_FILE_NAME):
            if os.path.lexists(path):
                return path
        return None

    return find
