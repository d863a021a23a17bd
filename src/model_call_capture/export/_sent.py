"""What an incremental OTLP export sent: `mcc export --format otlp --incremental --out STATE`.

The state file lists, per rollout, the versions of its capture files (name, size, mtime)
as they were before they were read, and the position of the first call not yet sent. The
next export skips a rollout whose files are unchanged, sends only the calls past that
position of one whose files only grew (or gained files after the last one), and all of a
rollout that was cleared or rewritten. Spans keep their ids, so a call sent twice (an
export that failed half-way, a rollout rewritten) is the same span again. The state is
published atomically once every span was accepted.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from .. import _codec
from ..errors import OtlpExportError
from ..store import Rollout
from . import _atomic

__all__ = ["SentState"]

_FORMAT = "mcc-otlp-sent/1"

Version = tuple[str, int, int]


def _versions(rollout: Rollout) -> list[Version]:
    versions = []
    for path in rollout.files:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        versions.append((path.name, st.st_size, st.st_mtime_ns))
    return versions


def _only_grew(before: list[Version], now: list[Version]) -> bool:
    """True when `now` is `before` with its last file longer and files added after it."""
    if not before or len(now) < len(before):
        return False
    *kept, last = before
    return (
        now[: len(kept)] == kept and now[len(kept)][0] == last[0] and now[len(kept)][1] >= last[1]
    )


class SentState:
    """The sent calls of an incremental export to `endpoint` (`load`, `first_unsent`, `save`)."""

    def __init__(self, path: Path, endpoint: str, content: bool) -> None:
        self.path = path
        """The state file."""
        self.endpoint = endpoint
        self.content = content
        self._before: dict[str, Any] = {}
        self._now: dict[str, Any] = {}
        self._versions: dict[str, list[Version]] = {}

    def load(self) -> SentState:
        """Read the state file (none: nothing was sent); refuse one of another endpoint."""
        try:
            data = _codec.decode(self.path.read_bytes())
        except FileNotFoundError:
            return self
        except (OSError, msgspec.DecodeError, UnicodeDecodeError) as exc:
            raise OtlpExportError(f"{self.path}: not an OTLP export state ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise OtlpExportError(f"{self.path}: not an OTLP export state")
        if data.get("endpoint") != self.endpoint or data.get("content") != self.content:
            raise OtlpExportError(
                f"{self.path} holds an export to {data.get('endpoint')} with content="
                f"{data.get('content')}; use another --out for another endpoint or --content"
            )
        rollouts = data.get("rollouts")
        self._before = rollouts if isinstance(rollouts, dict) else {}
        return self

    def first_unsent(self, rollout: Rollout) -> int | None:
        """The call index to send from, or None when the rollout is unchanged."""
        versions = self._versions[rollout.id] = _versions(rollout)
        known = self._before.get(rollout.id)
        if not isinstance(known, dict):
            return 0
        before = [tuple(v) for v in known.get("files") or []]
        sent = known.get("next")
        if not isinstance(sent, int) or isinstance(sent, bool) or sent < 0:
            return 0
        if before == versions:
            self._now[rollout.id] = known
            return None
        return sent if _only_grew(before, versions) else 0

    def sent(self, rollout: Rollout, next_index: int) -> None:
        """Record that the rollout's calls before `next_index` were handed to the sender."""
        files = [list(v) for v in self._versions.get(rollout.id, [])]
        self._now[rollout.id] = {"files": files, "next": next_index}

    def save(self) -> None:
        """Publish the state of this export (call only once every span was accepted)."""
        document = {
            "format": _FORMAT,
            "endpoint": self.endpoint,
            "content": self.content,
            "rollouts": dict(sorted(self._now.items())),
        }
        tmp = _atomic.temp_path(self.path)
        _atomic.create_file(tmp, 0o666)
        try:
            tmp.write_bytes(_codec.encode(document) + b"\n")
            _atomic.publish_file(tmp, self.path)
        finally:
            _atomic.remove(tmp)
