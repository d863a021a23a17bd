"""`CaptureStore`: the per-rollout capture files of one directory."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ..contracts import CaptureLine
from ..correlation import validate_rollout_id
from ..reader import DEFAULT_MAX_LINE_BYTES, CaptureLines, RawLines
from . import _writer
from ._files import CAPTURE_SUFFIX, INCOMPLETE_SUFFIX, open_or_create, rollout_id_of
from ._locking import flock
from ._reading import read_file_lines

__all__ = ["CaptureStore"]

_PATHS_MAX = 4096  # bound of a store's cache of validated paths


class CaptureStore:
    """Per-rollout capture files under one directory: durable appends and tolerant reads.

    `root` is created on the first append if missing. `file_mode` is the permission of
    files this store creates (0600 by default: captures hold prompts and completions).
    Readers count a line longer than `max_line_bytes` as damaged, without holding it.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        file_mode: int = 0o600,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.root = Path(root)
        """The capture directory."""
        self.file_mode = file_mode
        """Permission bits of created capture files and markers."""
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are damaged (`LineTooLongError` for a strict read)."""
        self._files: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"CaptureStore({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------

    def path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.jsonl`; raises `InvalidRolloutIdError` first."""
        return self.root / f"{validate_rollout_id(rollout_id)}{CAPTURE_SUFFIX}"

    def incomplete_path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.incomplete`; raises `InvalidRolloutIdError` first."""
        return self.root / f"{validate_rollout_id(rollout_id)}{INCOMPLETE_SUFFIX}"

    def _file(self, rollout_id: str) -> str:
        """`path(rollout_id)` as a string, validated once per id (a bounded cache)."""
        path = self._files.get(rollout_id) if type(rollout_id) is str else None
        if path is None:
            path = os.fspath(self.path(rollout_id))
            if len(self._files) >= _PATHS_MAX:
                self._files.clear()
            self._files[rollout_id] = path
        return path

    # -- writing -----------------------------------------------------------------------

    def append(self, rollout_id: str, line: CaptureLine | bytes) -> None:
        """Append one line durably: returns only after an fsync that covers it.

        `line` is a `CaptureLine` (encoded with the library's one codec) or already
        encoded bytes of one JSON object (a trailing newline is added if missing).
        Blocking: call it off the event loop. Raises `OSError` when the line could not
        be written or made durable (nothing is written when the open or lock fails; a
        failed write or fsync may leave a torn or unsynced line, which the next append
        isolates), `InvalidRolloutIdError` for a bad id, and another `ValueError` for
        bytes that are not one line or a string the codec cannot encode (a lone
        surrogate) — before touching the file.
        """
        path = self._file(rollout_id)
        _writer.append(path, _writer.line_bytes(line), root=self.root, mode=self.file_mode)

    def mark_incomplete(self, rollout_id: str) -> None:
        """Create the rollout's incomplete marker (a capture of this rollout failed)."""
        os.close(
            open_or_create(
                self.incomplete_path(rollout_id),
                os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC,
                root=self.root,
                mode=self.file_mode,
            )
        )

    def is_incomplete(self, rollout_id: str) -> bool:
        """True when the rollout's incomplete marker exists."""
        return os.path.lexists(self.incomplete_path(rollout_id))

    def clear(self, rollout_id: str) -> None:
        """Remove the rollout's capture file and incomplete marker (missing files are fine).

        Unlinks rather than truncates: a writer that opened the old file keeps writing to
        the unlinked inode, never into the fresh capture of a re-dispatched attempt.
        """
        path = self.path(rollout_id)
        _writer.forget(os.fspath(path))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            path.unlink(missing_ok=True)  # a symlink planted in the directory: remove the link only
        else:
            try:
                # Unlink under the writers' lock: a writer holding it finishes its line
                # first; one that gets it later sees the unlinked inode and reopens.
                flock(fd, fcntl.LOCK_EX)
                path.unlink(missing_ok=True)
            finally:
                os.close(fd)
        self.incomplete_path(rollout_id).unlink(missing_ok=True)

    # -- reading -----------------------------------------------------------------------

    def rollout_ids(self) -> list[str]:
        """Sorted ids of every rollout with a capture file or an incomplete marker."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted({rollout_id for name in names if (rollout_id := rollout_id_of(name))})

    def exists(self, rollout_id: str) -> bool:
        """True when the rollout's capture file exists."""
        return os.path.lexists(self.path(rollout_id))

    def iter_lines(self, rollout_id: str) -> Iterator[tuple[int, bytes]]:
        """Yield `(index, raw_line)` for every non-blank line, without its newline.

        Indexes count non-blank lines from 0 (NeMo Gym's numbering). Bytes appended
        after the call started are not included. A missing file yields nothing.
        """
        yield from self.lines(rollout_id)

    def lines(self, rollout_id: str) -> RawLines:
        """The rollout's numbered raw lines, as `iter_lines` yields them.

        A `reader.RawLines`: `count` and `unterminated` are set once it is iterated; a line
        over `max_line_bytes` is yielded as a `reader.OversizedLine`.
        """
        return read_file_lines(self.path(rollout_id), max_line_bytes=self.max_line_bytes)

    def read_available(self, rollout_id: str) -> tuple[list[tuple[int, CaptureLine]], int]:
        """Valid lines with their index, and the number of damaged lines.

        Damaged lines (invalid JSON, not an object, wrong field types, a line torn by a
        crash) are counted and skipped; their indexes stay taken. A line of a newer
        format major raises `UnsupportedFormatError` naming file and line.
        """
        path = self.path(rollout_id)
        lines = CaptureLines(self.lines(rollout_id), path, strict=False)
        return list(lines), lines.damaged

    def read(self, rollout_id: str) -> list[CaptureLine]:
        """Every line of the rollout; `DamagedLineError` naming file and line on the first damaged one."""
        path = self.path(rollout_id)
        return [line for _, line in CaptureLines(self.lines(rollout_id), path, strict=True)]
