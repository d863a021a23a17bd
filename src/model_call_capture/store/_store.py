"""`CaptureStore`: the per-rollout capture files of one directory."""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import NamedTuple

from ..contracts import CaptureLine
from ..reader import DEFAULT_MAX_LINE_BYTES
from ..rollout_ids import rollout_order, validate_rollout_id
from . import _segments, _writer
from ._compact import Compacted, already_in_shared, compact
from ._files import (
    CAPTURE_SUFFIX,
    INCOMPLETE_SUFFIX,
    SEGMENTS_SUFFIX,
    NewFileSettings,
    kind_of,
    listed,
    open_or_create,
    rollout_id_of,
)
from ._locking import NO_LOCKS, flock
from ._mounts import Layout, choose_layout
from ._reading import RolloutLines
from ._rollouts import Rollout

__all__ = ["CaptureStore", "FileVersion", "ListedRollout"]

_PATHS_MAX = 4096  # bound of a store's cache of validated paths
_SKIPPED_MAX = 4096  # bound of the names already reported as skipped

# Open failures of `clear` on a name no writer of ours can be writing (a planted symlink,
# a FIFO, a file we may not write): the name is removed without taking the lock.
_UNLOCKABLE = frozenset({errno.ELOOP, errno.ENXIO, errno.EACCES, errno.EPERM})

logger = logging.getLogger("model_call_capture.store")
_skipped: set[str] = set()
_skipped_lock = threading.Lock()


class FileVersion(NamedTuple):
    """A capture file as a listing saw it: which file (its inode) and how far it had grown.

    Another inode is another file (cleared and written anew); the same inode, not
    shorter, is the same file appended to.
    """

    inode: int
    size: int
    mtime_ns: int


class ListedRollout(NamedTuple):
    """What one listing of the directory says of one rollout (`CaptureStore.listing`)."""

    rollout: Rollout
    """The rollout and its files (none when there is only a marker)."""
    versions: tuple[FileVersion, ...]
    """The version of each of its files, in the same order."""
    incomplete: bool
    """The rollout's incomplete marker is there."""


class CaptureStore:
    """Per-rollout capture files under one directory: durable appends and tolerant reads.

    `root` is created on the first append if missing, with its missing parents, with
    `dir_mode` (0700 by default) whatever the umask. `file_mode` is the permission of files
    this store creates (0600 by default: captures hold prompts and completions). The store
    writes only to regular files of its own user that others cannot change or read
    (`store/_files.py`). Readers count a line longer than `max_line_bytes` as damaged,
    without holding it.

    `layout` is `capture_layout`: where the writers of a rollout append. `shared`: one
    `<rollout_id>.capture.jsonl` under `flock` (NeMo Gym's layout); `segments`: one file
    per rollout and writer process (`store/_segments.py`), which needs no lock; `auto`
    (the default): segments where the directory's mount can lose appends from several
    hosts (`store/_mounts.py`) or refuses `flock`, else shared. Readers read both.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        file_mode: int = 0o600,
        dir_mode: int = 0o700,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        layout: Layout = "auto",
    ) -> None:
        if layout not in ("auto", "shared", "segments"):
            raise ValueError(f"capture_layout must be auto, shared or segments, not {layout!r}")
        self.max_line_bytes = max_line_bytes
        """Lines longer than this are damaged (`LineTooLongError` for a strict read)."""
        self.layout: Layout = layout
        """The `capture_layout` asked for (`written_layout` is what `auto` chose)."""
        self._files: dict[str, str] = {}
        self._written: str | None = None  # the layout chosen at the first write
        # Where and how to create what is missing: built again when a setting changes, so
        # that an append only reads it.
        self._created = NewFileSettings(Path(root), file_mode, dir_mode)

    @property
    def root(self) -> Path:
        """The capture directory."""
        return self._created.root

    @root.setter
    def root(self, root: Path) -> None:
        self._created = dataclasses.replace(self._created, root=Path(root))
        self._files.clear()  # the paths under the former root
        self._written = None

    @property
    def file_mode(self) -> int:
        """Permission bits of created capture files and markers."""
        return self._created.file_mode

    @file_mode.setter
    def file_mode(self, mode: int) -> None:
        self._created = dataclasses.replace(self._created, file_mode=mode)

    @property
    def dir_mode(self) -> int:
        """Permission bits of the capture directory and its parents when the store creates them."""
        return self._created.dir_mode

    @dir_mode.setter
    def dir_mode(self, mode: int) -> None:
        self._created = dataclasses.replace(self._created, dir_mode=mode)

    def __repr__(self) -> str:
        return f"CaptureStore({str(self.root)!r})"

    # -- paths -------------------------------------------------------------------------

    def path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.jsonl`; raises `InvalidRolloutIdError` first."""
        return self.root / f"{validate_rollout_id(rollout_id)}{CAPTURE_SUFFIX}"

    def segments_path(self, rollout_id: str) -> Path:
        """`<root>/<rollout_id>.capture.segments`, the directory of the rollout's segments."""
        return self.root / f"{validate_rollout_id(rollout_id)}{SEGMENTS_SUFFIX}"

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
        path = self._files.get(rollout_id) if type(rollout_id) is str else None
        if path is None:  # the common case is inlined: this runs once per captured call
            path = self._file(rollout_id)
        data = _writer.line_bytes(line)
        layout = self._written or self._choose()
        if layout == "auto":  # shared so far: until the filesystem refuses a lock
            try:
                _writer.append(path, data, self._created, _writer.write_locked)
                return
            except OSError as exc:
                if exc.errno not in NO_LOCKS:
                    raise
                self._refused(exc)  # nothing was written: the line goes to a segment
                layout = "segments"
        if layout == "segments":
            segments = path[: -len(CAPTURE_SUFFIX)] + SEGMENTS_SUFFIX
            _writer.append(segments, data, self._created, _segments.write)
        else:
            _writer.append(path, data, self._created)

    def written_layout(self) -> str:
        """The layout this store writes: `layout`, or what `auto` chose for the directory
        (read from the mount table at the first write, logged once per directory)."""
        layout = self._written or self._choose()
        return "shared" if layout == "auto" else layout

    def _choose(self) -> str:
        """Choose the layout once: `auto` stays `auto` while it writes the shared file
        (with locks it may yet find refused)."""
        chosen = choose_layout(self.root, self.layout)
        self._written = "auto" if self.layout == "auto" and chosen == "shared" else chosen
        return self._written

    def _refused(self, exc: OSError) -> None:
        """`auto` met a filesystem that refuses `flock`: segments from now on (logged once)."""
        if self._written != "segments":
            self._written = "segments"
            logger.warning(
                "capture directory %s: the filesystem refuses flock (%s): writing the "
                "segments layout from now on (docs/reliability.md)",
                self.root,
                exc.strerror,
            )

    def mark_incomplete(self, rollout_id: str) -> None:
        """Create the rollout's incomplete marker (a capture of this rollout failed): the
        shared one, or in the segments layout this writer's own beside its segment.

        Raises `OSError` when the name is taken by something that is not a regular file
        of ours (a FIFO, another user's file): the marker is then not trusted either.
        """
        if self.written_layout() == "segments":
            _segments.mark_incomplete(os.fspath(self.segments_path(rollout_id)), self._created)
            return
        path = self.incomplete_path(rollout_id)
        os.close(open_or_create(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, self._created))

    def is_incomplete(self, rollout_id: str) -> bool:
        """True when the rollout's incomplete marker, or a marker of one of its segments, exists.

        A miss is not confirmed by listing the capture directory (unlike `exists()`): the
        attachment asks this of every rollout, and a listing per rollout would make
        attaching a large directory quadratic. NFS mounts need `lookupcache=positive` for
        it (docs/reliability.md).
        """
        if os.path.lexists(self.incomplete_path(rollout_id)):
            return True
        return bool(_segments.names(self.segments_path(rollout_id)).incomplete)

    def clear(self, rollout_id: str) -> None:
        """Remove the rollout's capture file and incomplete marker (missing files are fine).

        Unlinks rather than truncates: a writer that opened the old file keeps writing to
        the unlinked inode, never into the fresh capture of a re-dispatched attempt.
        """
        path = self.path(rollout_id)
        _writer.forget(os.fspath(path))
        try:
            # Open for writing: an exclusive flock on a read-only descriptor fails with
            # EBADF on NFSv4 (flock is emulated there with byte-range write locks).
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in _UNLOCKABLE:
                raise
            path.unlink(missing_ok=True)  # not a file our writers write: remove the name only
        else:
            try:
                # Unlink under the writers' lock: a writer holding it finishes its line
                # first; one that gets it later sees the unlinked inode and reopens.
                flock(fd, fcntl.LOCK_EX)
                path.unlink(missing_ok=True)
            finally:
                os.close(fd)
        self.incomplete_path(rollout_id).unlink(missing_ok=True)
        _segments.remove(self.segments_path(rollout_id))

    # -- reading -----------------------------------------------------------------------

    def rollout(self, rollout_id: str) -> Rollout:
        """The rollout `rollout_id` of this directory (`InvalidRolloutIdError` first).

        Its files are where its lines are, whether they exist yet or not: a missing file
        reads as no lines. They are its shared file, then its segments by name, if any
        (read merged: `store/_reading.py`).
        """
        return Rollout(rollout_id, (self.path(rollout_id), *self.segment_files(rollout_id)))

    def rollouts(self) -> list[Rollout]:
        """Every rollout with a capture file, segments or an incomplete marker, in the
        natural order of their ids (`rollout_ids.rollout_order`: `2-0` before `10-0`).

        One listing of the directory, no file opened. Entries with a capture name that
        are not regular files (a directory, a symlink, a FIFO planted in the directory)
        are skipped, and logged once by name; a rollout with only a marker has no files.
        """
        scanned = self._scan(versions=False)
        return [scanned[rollout_id].rollout for rollout_id in sorted(scanned, key=rollout_order)]

    def has_rollouts(self) -> bool:
        """True when the directory holds a rollout (`rollouts()` would not be empty).

        Stops at the first one: cheap on a directory of millions of files.
        """
        try:
            entries = os.scandir(self.root)
        except (FileNotFoundError, NotADirectoryError):
            return False
        with entries:
            return any(
                rollout_id_of(e.name) is not None
                and (
                    e.is_file(follow_symlinks=False)
                    or (e.name.endswith(SEGMENTS_SUFFIX) and e.is_dir(follow_symlinks=False))
                )
                for e in entries
            )

    def rollout_ids(self) -> list[str]:
        """The ids of every rollout with a capture file, segments or a marker (`rollouts`),
        in their natural order."""
        return sorted(self._scan(versions=False), key=rollout_order)

    def listing(self) -> dict[str, ListedRollout]:
        """Every rollout of the directory with the version of each of its files (no file opened).

        For a reader that re-reads only the files that changed (`mcc view`'s index). A
        rollout with only an incomplete marker has no files; entries with a capture name
        that are not regular files are skipped, as `rollouts` skips them.
        """
        return self._scan(versions=True)

    def _scan(self, *, versions: bool) -> dict[str, ListedRollout]:
        found: dict[str, ListedRollout] = {}
        segmented: list[str] = []
        try:
            entries = os.scandir(self.root)
        except FileNotFoundError:
            return found
        with entries:
            for entry in entries:
                rollout_id = rollout_id_of(entry.name)
                if rollout_id is None:
                    continue
                try:
                    if entry.name.endswith(SEGMENTS_SUFFIX) and entry.is_dir(follow_symlinks=False):
                        segmented.append(rollout_id)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        _report_skipped(entry)
                        continue
                    st = entry.stat(follow_symlinks=False) if versions else None
                except OSError:  # gone meanwhile
                    continue
                seen = found.get(rollout_id) or ListedRollout(Rollout(rollout_id, ()), (), False)
                if entry.name.endswith(CAPTURE_SUFFIX):
                    version = (
                        () if st is None else (FileVersion(st.st_ino, st.st_size, st.st_mtime_ns),)
                    )
                    files = Rollout(rollout_id, (self.root / entry.name,))
                    found[rollout_id] = ListedRollout(files, version, seen.incomplete)
                else:
                    found[rollout_id] = seen._replace(incomplete=True)
        for rollout_id in segmented:
            self._add_segments(found, rollout_id, versions=versions)
        return found

    def _add_segments(
        self, found: dict[str, ListedRollout], rollout_id: str, *, versions: bool
    ) -> None:
        """Add a rollout's segments (and their markers) to what a scan found of it."""
        directory = self.segments_path(rollout_id)
        names = _segments.names(directory)
        shared = self.path(rollout_id)
        done = already_in_shared(directory, shared, names.compacted)
        seen = found.get(rollout_id) or ListedRollout(Rollout(rollout_id, ()), (), False)
        files = list(seen.rollout.files) or [shared]
        stamps = list(seen.versions)
        if versions and not stamps:
            stamps.append(FileVersion(0, 0, 0))  # no shared file: it reads as no lines
        for name in names.segments:
            if name in done:
                continue
            path = directory / name
            if versions:
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:  # gone meanwhile
                    continue
                stamps.append(FileVersion(st.st_ino, st.st_size, st.st_mtime_ns))
            files.append(path)
        found[rollout_id] = ListedRollout(
            Rollout(rollout_id, tuple(files)),
            tuple(stamps),
            seen.incomplete or bool(names.incomplete),
        )

    def exists(self, rollout_id: str) -> bool:
        """True when the rollout's capture file or a segment of it exists (confirmed by
        listing on a miss).

        A miss is not trusted to a lookup: an NFS client may answer it from its negative
        cache after another host created the file; a listing revalidates the directory.
        """
        path = self.path(rollout_id)
        return os.path.lexists(path) or bool(self.segment_files(rollout_id)) or listed(path)

    def segment_files(self, rollout_id: str) -> list[Path]:
        """The rollout's segments (`store/_segments.py`), sorted by name; [] when it has none.

        When neither the shared file nor the segments directory is found, one listing of
        the capture directory confirms that: an NFS client may answer a lookup from its
        negative cache after another host created them (as `exists()` does). A rollout
        that has one of the two is not listed for: that would make reading every rollout
        of a directory quadratic.
        """
        directory = self.segments_path(rollout_id)
        shared = self.path(rollout_id)
        found = _segments.names(directory)
        if (
            not found.segments
            and not os.path.lexists(directory)
            and not os.path.lexists(shared)
            and listed(directory)
        ):
            found = _segments.names(directory)
        done = already_in_shared(directory, shared, found.compacted)
        return [directory / name for name in found.segments if name not in done]

    def compact(self, rollout_id: str) -> Compacted:
        """Rewrite the rollout's segments into its shared file, atomically (`mcc compact`).

        Idempotent; a rollout whose segments may still be written is left alone, and the
        result says why (`store/_compact.py`).
        """
        return compact(self, rollout_id, self._created)

    def read_available(self, rollout_id: str) -> tuple[list[tuple[int, CaptureLine]], int]:
        """Valid lines with their index, and the number of damaged lines.

        Damaged lines (invalid JSON, not an object, wrong field types, a line torn by a
        crash) are counted and skipped; their indexes stay taken. A line of a newer
        format major raises `UnsupportedFormatError` naming file and line.
        """
        lines = RolloutLines(
            self.rollout(rollout_id), strict=False, max_line_bytes=self.max_line_bytes
        )
        return list(lines), lines.damaged

    def read(self, rollout_id: str) -> list[CaptureLine]:
        """Every line of the rollout; `DamagedLineError` naming file and line on the first damaged one."""
        lines = RolloutLines(
            self.rollout(rollout_id), strict=True, max_line_bytes=self.max_line_bytes
        )
        return [line for _, line in lines]


def _report_skipped(entry: os.DirEntry[str]) -> None:
    """Log once per name that a capture-named entry which is not a regular file is skipped."""
    with _skipped_lock:
        if entry.path in _skipped:
            return
        if len(_skipped) >= _SKIPPED_MAX:
            _skipped.clear()
        _skipped.add(entry.path)
    try:
        kind = kind_of(entry.stat(follow_symlinks=False).st_mode)
    except OSError:  # gone meanwhile
        return
    logger.warning("capture directory: skipping %s: %s, not a capture file", entry.path, kind)
