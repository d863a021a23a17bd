"""Rollout ids and the `/ng-rollout/<id>` prefix: the rule, pure (no I/O, no configuration).

A rollout id names its capture files, so it must be a safe file-name stem:
`^[A-Za-z0-9][A-Za-z0-9._-]*$`, at most `MAX_ROLLOUT_ID_LENGTH` characters
(`validate_rollout_id`). Every module that takes a rollout id checks it here.

A model call is captured under a rollout when its URL path starts with
`/ng-rollout/<rollout_id>`; the model server strips the prefix before routing
(`split_scope_prefix`). The id of a rollout attempt comes from the run request body
(`rollout_id_for_body`):

- `_ng_rollout_id`, when present, is used as is (validated);
- else `"{_ng_task_index}-{_ng_rollout_index}"`, with `-a<n>` appended when
  `_ng_attempt_index` is n > 0, so a resumed attempt never mixes with an earlier one.

A foundation module: the store, the middleware, the proxy and the agent helpers of
`correlation` all build on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, unquote

from .errors import InvalidRolloutIdError

__all__ = [
    "MAX_ROLLOUT_ID_LENGTH",
    "ROLLOUT_PREFIX",
    "SELF_CALL_ROUTE",
    "apply_rollout_prefix",
    "rollout_id_for_body",
    "rollout_order",
    "rollout_path_prefix",
    "route_path",
    "split_rollout_prefix",
    "split_scope_prefix",
    "validate_rollout_id",
]

MAX_ROLLOUT_ID_LENGTH = 200
"""Longest accepted rollout id; keeps `<id>.capture.incomplete` under NAME_MAX (255)."""

# ASCII only (the class lists ASCII ranges explicitly) and \Z, not $: `$` would accept a
# trailing newline.
_ROLLOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ROLLOUT_ID_RULE = (
    f"a rollout id must match ^[A-Za-z0-9][A-Za-z0-9._-]*$ and be at most "
    f"{MAX_ROLLOUT_ID_LENGTH} characters"
)


_DIGITS = re.compile(r"(\d+)")


def rollout_order(rollout_id: str) -> tuple[tuple[str | int, ...], str]:
    """The sort key of rollout ids in their natural order: runs of digits compare as
    numbers (`2-0` before `10-0`, `1-0-a2` before `1-0-a10`), the rest as text; ids
    equal that way (`01-0`, `1-0`) in text order. Every list of rollouts a user sees, and
    every export, is in this order.
    """
    parts = _DIGITS.split(rollout_id)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), rollout_id


def validate_rollout_id(rollout_id: str) -> str:
    """Return `rollout_id` if it is a safe file-name stem, else raise `InvalidRolloutIdError`.

    The rule (`^[A-Za-z0-9][A-Za-z0-9._-]*$`, at most 200 characters) excludes path
    separators, `.`/`..`, absolute paths, NUL and non-ASCII look-alikes.
    """
    if (
        not isinstance(rollout_id, str)
        or len(rollout_id) > MAX_ROLLOUT_ID_LENGTH
        or _ROLLOUT_ID.match(rollout_id) is None
    ):
        shown = repr(rollout_id)
        if len(shown) > 80:
            shown = shown[:60] + f"...<{len(shown)} chars>"
        raise InvalidRolloutIdError(f"invalid rollout id {shown}: {_ROLLOUT_ID_RULE}")
    return rollout_id


ROLLOUT_PREFIX = "/ng-rollout/"
"""The path segment that introduces a rollout id."""
SELF_CALL_ROUTE = "/ng-rollout/{rollout_id}/v1/responses"
"""The prefixed self-call route registered on agents."""


def _index(body: Mapping[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRolloutIdError(f"{key} must be a non-negative integer, got {value!r}")
    return value


def rollout_id_for_body(body: Mapping[str, Any]) -> str | None:
    """The rollout-attempt id a run body names, whether or not capture is on.

    `_ng_rollout_id` (validated) wins; else `{_ng_task_index}-{_ng_rollout_index}` plus
    `-a<n>` for `_ng_attempt_index` n > 0. None when the body names no rollout. Raises
    `InvalidRolloutIdError` for an id or index that is malformed.
    """
    explicit = body.get("_ng_rollout_id")
    if explicit is not None:
        return validate_rollout_id(explicit)
    task = _index(body, "_ng_task_index")
    rollout = _index(body, "_ng_rollout_index")
    attempt = _index(body, "_ng_attempt_index")
    if task is None or rollout is None:
        return None
    rollout_id = f"{task}-{rollout}"
    if attempt:
        rollout_id += f"-a{attempt}"
    return validate_rollout_id(rollout_id)


def rollout_path_prefix(rollout_id: str) -> str:
    """`/ng-rollout/<rollout_id>` (validated, no trailing slash)."""
    return ROLLOUT_PREFIX + validate_rollout_id(rollout_id)


def split_rollout_prefix(path: str) -> tuple[str | None, str]:
    """Split `/ng-rollout/<id>/rest` into `(id, "/rest")`; `(None, path)` when unprefixed.

    The id is returned as written, not validated: callers decide what an invalid one means.
    """
    if not path.startswith(ROLLOUT_PREFIX):
        return None, path
    rest = path[len(ROLLOUT_PREFIX) :]
    rollout_id, slash, tail = rest.partition("/")
    return rollout_id, slash + tail if slash else "/"


def apply_rollout_prefix(url_path: str, rollout_id: str) -> str:
    """Prefix `url_path` with `/ng-rollout/<rollout_id>` (replacing an existing prefix)."""
    _, path = split_rollout_prefix(url_path)
    if not path.startswith("/"):
        path = "/" + path
    return rollout_path_prefix(rollout_id) + path


# -- the prefix in an ASGI scope (the capture middleware) ----------------------------


def split_scope_prefix(scope: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(rollout id, copy of the ASGI `scope` without the prefix), or None when it has none.

    The prefix is looked for after `root_path`, which is left alone. The id is read from
    `raw_path` when the server gave one, so a `%2F` inside the id stays inside the id
    instead of splitting the path. The id is returned as written, not validated.
    """
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    base = root if root and path.startswith(root + ROLLOUT_PREFIX) else ""
    if not path.startswith(ROLLOUT_PREFIX, len(base)):
        return None
    rest = path[len(base) + len(ROLLOUT_PREFIX) :]
    raw: bytes | None = scope.get("raw_path")
    rollout_id: str | None = None
    new_raw: bytes | None = None
    if raw is not None:
        raw_base = base.encode("utf-8")
        raw_prefix = raw_base + ROLLOUT_PREFIX.encode()
        if raw.startswith(raw_prefix):
            segment, slash, tail = raw[len(raw_prefix) :].partition(b"/")
            candidate = unquote(segment.decode("ascii", "replace"))
            after = rest[len(candidate) :]
            if rest.startswith(candidate) and (not after or after.startswith("/")):
                rollout_id = candidate
                new_raw = raw_base + b"/" + tail if slash else raw_base + b"/"
    if rollout_id is None:
        rollout_id = rest.partition("/")[0]
    tail_path = rest[len(rollout_id) :] or "/"
    new_scope = dict(scope)
    new_scope["path"] = base + tail_path
    if raw is not None:
        new_scope["raw_path"] = (
            new_raw if new_raw is not None else quote(base + tail_path).encode("ascii")
        )
    return rollout_id, new_scope


def route_path(scope: Mapping[str, Any]) -> str:
    """The path an app routes on: the scope's `path` without its `root_path`."""
    path: str = scope["path"]
    root: str = scope.get("root_path") or ""
    if root and path.startswith(root + "/"):
        return path[len(root) :]
    return path
