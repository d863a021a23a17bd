"""Rollouts: the read side's currency, an id and the capture files that hold its lines.

A reader asks the store for rollouts and reads every file of each, in the rollout's
order; it never builds or parses a capture file's name (only `store/` knows the names).
A rollout of the shared layout has one file, `<root>/<rollout_id>.capture.jsonl`; a
layout of several files per rollout (one per writer) lists them all, the shared file
first, and readers number the lines on across them (`RolloutLines`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..rollout_ids import rollout_order
from ._files import CAPTURE_SUFFIX, INCOMPLETE_SUFFIX, SEGMENTS_SUFFIX, capture_file_rollout_id
from ._segments import SEGMENT_INCOMPLETE_SUFFIX, SEGMENT_SUFFIX, is_segment

__all__ = [
    "Rollout",
    "capture_files_under",
    "directories_under",
    "file_is_incomplete",
    "rollout_of_file",
]


@dataclass(frozen=True, slots=True)
class Rollout:
    """One rollout: its id and its capture files, in the order its lines are read.

    Readers read every file, in this order, and number the lines on from one file to the
    next (a record's `call_index`). A file listed may be gone by the time it is read
    (cleared meanwhile): it then holds no lines. A rollout with only an incomplete marker
    has no files. Picklable, so workers of another process can read it.
    """

    id: str
    """The rollout id (validated: it names no path outside the directory)."""
    files: tuple[Path, ...]
    """The rollout's capture files, in reading order."""


def rollout_of_file(path: str | os.PathLike[str]) -> Rollout:
    """The rollout of one capture file named by the caller: that file alone (a segment too:
    `<rollout_id>.capture.segments/<writer>.jsonl`).

    Raises `ValueError` for a name that is not a capture file's (`<rollout_id>.capture.jsonl`).
    """
    path = Path(path)
    if is_segment(path):
        rollout_id = capture_file_rollout_id(
            path.parent.name[: -len(SEGMENTS_SUFFIX)] + CAPTURE_SUFFIX
        )
        if rollout_id is not None:
            return Rollout(rollout_id, (path,))
    rollout_id = capture_file_rollout_id(path.name)
    if rollout_id is None:
        raise ValueError(f"{path}: not a capture file (<rollout_id>{CAPTURE_SUFFIX})")
    return Rollout(rollout_id, (path,))


def file_is_incomplete(path: str | os.PathLike[str]) -> bool:
    """True when the incomplete marker of the capture file `path` exists (a capture of its
    rollout failed): `<rollout_id>.capture.incomplete` beside a shared file, the segment's
    own `<writer>.incomplete` beside a segment."""
    path = Path(path)
    if is_segment(path):
        marker = path.with_name(path.name[: -len(SEGMENT_SUFFIX)] + SEGMENT_INCOMPLETE_SUFFIX)
    else:
        marker = path.with_name(path.name[: -len(CAPTURE_SUFFIX)] + INCOMPLETE_SUFFIX)
    return os.path.lexists(marker)


def directories_under(root: Path) -> Iterator[Path]:
    """`root` and every directory below it, in path order (symlinks to directories not
    followed; rollouts' segments directories are part of their capture directory, not below it)."""
    yield root
    try:
        with os.scandir(root) as entries:
            below = sorted(
                e.name
                for e in entries
                if e.is_dir(follow_symlinks=False) and not e.name.endswith(SEGMENTS_SUFFIX)
            )
    except OSError:
        return
    for name in below:
        yield from directories_under(root / name)


def capture_files_under(root: Path) -> list[Path]:
    """Every entry named like a capture file in `root` and the directories below it, in
    natural order (`rollout_ids.rollout_order`) per directory.

    Whatever its type: a FIFO or a directory named like a capture file is listed too, so
    that a checker (`mcc validate`) reports it as unreadable, by name, instead of skipping
    it in silence (the store's own listings skip it). Segments are listed with them.
    """
    found = []
    for directory in directories_under(root):
        for p in directory.iterdir():
            if p.name.endswith(CAPTURE_SUFFIX):
                found.append(p)
            elif p.name.endswith(SEGMENTS_SUFFIX) and p.is_dir() and not p.is_symlink():
                found.extend(s for s in p.iterdir() if s.name.endswith(SEGMENT_SUFFIX))
    return sorted(found, key=_listing_order)


def _listing_order(path: Path) -> tuple[Path, tuple[tuple[str | int, ...], str], str]:
    """Per directory, rollouts in the natural order of their ids (`2-0` before `10-0`), a
    rollout's shared file before its segments, segments by name."""
    if path.parent.name.endswith(SEGMENTS_SUFFIX):
        rollout_id = path.parent.name.removesuffix(SEGMENTS_SUFFIX)
        return path.parent.parent, rollout_order(rollout_id), path.name
    return path.parent, rollout_order(path.name.removesuffix(CAPTURE_SUFFIX)), ""
