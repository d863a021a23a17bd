"""What the readers of many rollouts accept, and the rollouts it names.

`rollouts_from` is the one place that says what the readers taking "a directory, a
store, rollouts or files" (`arrow.iter_record_batches`, `ray.read_model_calls`, the
export) accept, and refuses anything else by saying what it got.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Union

from ..errors import RolloutSourceError
from ._rollouts import Rollout, directories_under, rollout_of_file
from ._store import CaptureStore

__all__ = ["RolloutSource", "rollouts_from"]


RolloutSource = Union[
    str,
    "os.PathLike[str]",
    CaptureStore,
    Rollout,
    Iterable[Union[str, "os.PathLike[str]", Rollout]],
]
"""What the readers of many rollouts accept: a capture directory, a `CaptureStore`, a
`Rollout`, a capture file, or an iterable of rollouts, files and directories."""


def rollouts_from(source: RolloutSource, *, recursive: bool = False) -> Iterator[Rollout]:
    """The rollouts `source` names, in order: what readers of many rollouts read.

    - a directory (`str` or path): its store's rollouts in id order (`CaptureStore.rollouts`),
      and with `recursive` those of every directory below it, directories in path order;
    - a `CaptureStore`: its rollouts; a `Rollout`: itself;
    - a capture file: the rollout of that file alone (`rollout_of_file`);
    - an iterable of any of those but a store: each in turn.

    A path that does not exist raises `FileNotFoundError`; anything else (a number, bytes,
    a dict, a store inside a list) raises `RolloutSourceError` (a `TypeError`) saying what
    it got: `source` itself at once, the items of an iterable as the rollouts are asked for
    (a long list is never held; `list(...)` the result to check everything first).
    """
    if isinstance(source, CaptureStore):
        return iter(source.rollouts())
    if isinstance(source, (str, os.PathLike, Rollout)):
        return _one(source, recursive)
    if isinstance(source, Iterable) and not isinstance(source, (bytes, bytearray, dict)):
        return _each(source, recursive)
    raise _refused(source, inside=False)


def _each(items: Iterable[str | os.PathLike[str] | Rollout], recursive: bool) -> Iterator[Rollout]:
    for item in items:
        if not isinstance(item, (str, os.PathLike, Rollout)):
            raise _refused(item, inside=True)
        yield from _one(item, recursive)


def _one(item: str | os.PathLike[str] | Rollout, recursive: bool) -> Iterator[Rollout]:
    if isinstance(item, Rollout):
        yield item
        return
    path = Path(item)
    if path.is_dir():
        for directory in directories_under(path) if recursive else [path]:
            yield from CaptureStore(directory).rollouts()
    elif path.exists():
        yield rollout_of_file(path)
    else:
        raise FileNotFoundError(f"{path}: no such capture file or directory")


def _refused(value: object, *, inside: bool) -> RolloutSourceError:
    kind = type(value).__name__
    where = f"a list holding a {kind}" if inside else f"a {kind}"
    return RolloutSourceError(
        f"expected a capture directory, a CaptureStore, rollouts or capture files, got {where}"
        f" ({value!r:.80})"
    )
