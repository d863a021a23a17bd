"""CaptureStore: durable, append-only, per-rollout JSONL capture files.

Layout of a capture directory (`root`):

- `<rollout_id>.capture.jsonl` — one `CaptureLine` per line, append-only;
- `<rollout_id>.capture.incomplete` — an empty marker: a capture for this rollout failed;
- `<rollout_id>.capture.segments/<host>.<pid>.<random>.jsonl` (and `.incomplete`) — the
  segment layout (`_segments`): one file per rollout and writer process, written only by
  its creator, where locks do not serialize hosts.

`capture_layout` (`CaptureStore(layout=...)`): `shared`, `segments`, or `auto` (the
default), which writes segments where the directory's mount can lose appends from several
hosts or refuses `flock` (`_mounts`), else the shared file; logged once per directory.

Writing (`_writer`). Lines are written with one `os.write` (`os.writev` for several) to a
file opened with `O_APPEND`, under an exclusive `flock` on the file, then one `fsync`. The
lock serializes writers of every process (and of every host on a shared filesystem that
supports `flock`), so lines never interleave. Group commit: while one thread of this
process writes and fsyncs a file, the lines other threads append to it wait in one batch;
when it is done, the batch's first thread writes the whole batch (one write under one
lock) and fsyncs once for all of them. Each call returns only after an `fsync` that
started after its line was written, so a returned append is on disk; a line is written
once, never retried. A crashed writer can leave a torn last line without its newline; the
next append sees the missing newline under the lock and starts on a fresh line, so the
torn line stays one damaged line and every later line stays readable.

Rollouts (`_rollouts`). Readers never build or parse a file name: they ask the store for
`Rollout`s (an id and its files, in reading order: `CaptureStore.rollouts()`,
`CaptureStore.rollout(id)`, `rollouts_from(directory | store | rollouts | files)`) and
read every file of each (`RolloutLines`, `records.iter_rollout_records`). Only `store/`
knows the names above.

Reading (`_reading`, then `model_call_capture.reader`). Readers take a shared `flock` only
to learn the file's size: every writer holds the exclusive lock for its whole write, so
the bytes up to that size are complete lines (or lines torn by a crash, which no later
write completes). Lines are numbered as NeMo Gym numbers them: blank and whitespace-only
lines are skipped and not counted; every other line takes the next index, whether it is
valid or damaged.

Without `flock` (`_locking`; some NFS and FUSE mounts refuse it with ENOLCK/EOPNOTSUPP)
`auto` turns to segments; a forced `shared` layout warns once and appends without the
lock: one `O_APPEND` write of a whole line still does not interleave on one host; only
writers on several hosts lose their serialization.

A rollout of several files (shared file and segments) is read merged by `completed_at`,
each file keeping its order (`_reading`); `mcc compact` (`_compact`) rewrites a finished
rollout's segments into its shared file, atomically.

Security (`_files`). Rollout ids are validated before they touch a path, and files are
opened with `O_NOFOLLOW`, so a symlink placed in the directory cannot redirect a read or
a write. Writes go only to regular files of our own user that others cannot change or
read (opened with `O_NONBLOCK`, so a planted FIFO cannot block a writer); directories the
store creates get its directory mode whatever the umask (docs/security.md).

Shared filesystems (`_mounts`, docs/reliability.md). Exclusive locks are taken on
descriptors opened for writing (NFSv4 refuses them on read-only ones); a missing name is
confirmed by listing the directory (NFS negative lookup caches); a forced shared layout on
a mount that locks locally (NFS `nolock`, `local_lock=all|flock`, FUSE, ...) is warned
about once.
"""

from __future__ import annotations

from ._compact import Compacted
from ._reading import RolloutLines, read_file_lines
from ._rollouts import Rollout, capture_files_under, file_is_incomplete, rollout_of_file
from ._sources import RolloutSource, rollouts_from
from ._store import CaptureStore, FileVersion, ListedRollout

__all__ = [
    "CaptureStore",
    "Compacted",
    "FileVersion",
    "ListedRollout",
    "Rollout",
    "RolloutLines",
    "RolloutSource",
    "capture_files_under",
    "file_is_incomplete",
    "read_file_lines",
    "rollout_of_file",
    "rollouts_from",
]
