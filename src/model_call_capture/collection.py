"""Rollout collection: clearing stale captures, attaching ng_model_call_capture, a small collector.

The attachment (`merge_model_call_capture_into_record`) adds one key,
`ng_model_call_capture = {rollout_id, metrics, calls, gaps?}`, to a rollout record and
leaves every other field alone. Gaps say why the capture may be incomplete:

- `model_call_capture_unreadable` (detail: the error): a capture file could not be read;
- `model_call_capture_records_unreadable` (detail `count=N`): N lines were damaged;
- `model_call_capture_incomplete`: a capture write failed for this rollout;
- `model_call_capture_no_records`: nothing was captured, and no other gap explains why.

The collector (`collect`) runs rows through an agent and writes each finished rollout
with its attachment; see its docstring.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import msgspec

from . import _codec
from .contracts import ModelCallCapture, ModelCallRecord, ObservationGap
from .correlation import rollout_id_for_body
from .records import aggregate_model_call_records, read_available_model_call_records
from .store import CaptureStore, UnsupportedFormatError, validate_rollout_id

__all__ = [
    "ATTACHMENT_KEY",
    "PAYLOAD_FIELDS",
    "Agent",
    "CollectionSummary",
    "CollectorBusyError",
    "build_model_call_capture",
    "clear_model_call_captures_for_rollouts",
    "collect",
    "merge_model_call_capture_into_record",
]

ATTACHMENT_KEY = "ng_model_call_capture"
"""The key of the attachment in a rollout record."""
PAYLOAD_FIELDS = ("request", "response", "request_raw", "response_raw")
"""Record fields left out of attached calls unless payloads are asked for."""
LOCK_FILE_NAME = ".mcc-collector.lock"
"""The lock file a running collector holds in its capture directory."""

CaptureDirs: TypeAlias = str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
"""One capture directory, or several (read in order)."""
Agent: TypeAlias = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]] | str
"""An async callable taking a run body and returning the rollout record, or the base URL
of an agent server whose `POST /run` does the same."""


def _dirs(capture_dirs: CaptureDirs) -> list[Path]:
    if isinstance(capture_dirs, (str, os.PathLike)):
        return [Path(capture_dirs)]
    return [Path(d) for d in capture_dirs]


def _rollout_id_of_record(record: Mapping[str, Any]) -> str:
    rollout_id = rollout_id_for_body(record)
    if rollout_id is None:
        raise ValueError(
            "the record names no rollout: it needs _ng_rollout_id or _ng_task_index and _ng_rollout_index"
        )
    return rollout_id


def build_model_call_capture(
    rollout_id: str, capture_dirs: CaptureDirs, *, include_payloads: bool = False
) -> ModelCallCapture:
    """The typed attachment of one rollout, read from every capture directory.

    Several directories are read in the order given (calls of the first come first).
    Without payloads, the calls' request/response fields are null.
    """
    validate_rollout_id(rollout_id)
    calls: list[ModelCallRecord] = []
    damaged = 0
    incomplete = False
    unreadable: list[str] = []
    for directory in _dirs(capture_dirs):
        store = CaptureStore(directory)
        try:
            records, invalid = read_available_model_call_records(store, rollout_id)
            incomplete = incomplete or store.is_incomplete(rollout_id)
        except (OSError, UnsupportedFormatError) as exc:
            unreadable.append(f"{store.path(rollout_id)}: {exc}")
            continue
        calls.extend(records)
        damaged += invalid
    if not include_payloads:
        unset = msgspec.UNSET
        calls = [
            msgspec.structs.replace(
                c, request=unset, response=unset, request_raw=unset, response_raw=unset
            )
            for c in calls
        ]
    gaps = [ObservationGap(code="model_call_capture_unreadable", detail=d) for d in unreadable]
    if damaged:
        gaps.append(
            ObservationGap(code="model_call_capture_records_unreadable", detail=f"count={damaged}")
        )
    if incomplete:
        gaps.append(ObservationGap(code="model_call_capture_incomplete"))
    if not calls and not gaps:
        gaps.append(ObservationGap(code="model_call_capture_no_records"))
    return ModelCallCapture(
        rollout_id=rollout_id,
        metrics=aggregate_model_call_records(calls),
        calls=calls,
        gaps=gaps or msgspec.UNSET,
    )


def merge_model_call_capture_into_record(
    record: Mapping[str, Any],
    capture_dirs: CaptureDirs,
    *,
    include_payloads: bool = False,
    rollout_id: str | None = None,
) -> dict[str, Any]:
    """A copy of `record` with `ng_model_call_capture` added; no other field changes.

    The rollout id is `rollout_id` if given, else the record's (`_ng_rollout_id`, else its
    task/rollout/attempt indices). Attached calls omit `request`, `response`, `request_raw` and `response_raw`
    unless `include_payloads`; those stay in the capture files. Raises `ValueError` when
    the record names no rollout, `InvalidRolloutIdError` when it names an invalid one.
    """
    if rollout_id is None:
        rollout_id = _rollout_id_of_record(record)
    capture = build_model_call_capture(rollout_id, capture_dirs, include_payloads=include_payloads)
    attachment: dict[str, Any] = _codec.to_builtins(capture)
    if not include_payloads:
        for call in attachment["calls"]:
            for name in PAYLOAD_FIELDS:
                call.pop(name, None)
    merged = dict(record)
    merged[ATTACHMENT_KEY] = attachment
    return merged


def clear_model_call_captures_for_rollouts(
    rows: Iterable[Mapping[str, Any]], capture_dirs: CaptureDirs
) -> list[str]:
    """Remove the capture file and incomplete marker of exactly the rollout-attempt ids of `rows`.

    Returns the ids cleared (in row order, without repeats). Raises `ValueError` for a
    row that names no rollout, before anything is removed.
    """
    ids = list(dict.fromkeys(_rollout_id_of_record(row) for row in rows))
    for directory in _dirs(capture_dirs):
        store = CaptureStore(directory)
        for rollout_id in ids:
            store.clear(rollout_id)
    return ids


# -- the collector ----------------------------------------------------------------------


class CollectorBusyError(RuntimeError):
    """Another collector is running against the same capture directory."""


@dataclass(slots=True)
class CollectionSummary:
    """What one `collect` run did."""

    output_path: Path
    """The output JSONL file."""
    total: int
    """Rollouts in the run (rows x num_repeats)."""
    already_done: int
    """Rollouts found finished in the output of an earlier run (resume) and skipped."""
    dispatched: int
    """Rollouts sent to the agent in this run."""
    succeeded: int
    """Dispatched rollouts written to the output."""
    failed: dict[str, str] = field(default_factory=dict)
    """Rollout-attempt id -> error, for dispatched rollouts the agent failed; resume retries them."""
    attempt_index: int = 0
    """The `_ng_attempt_index` of this run's dispatches (0 for a fresh run)."""


@asynccontextmanager
async def _exclusive(capture_dir: Path) -> AsyncIterator[None]:
    """Hold the capture directory's collector lock, or raise `CollectorBusyError`."""
    capture_dir.mkdir(parents=True, exist_ok=True)
    path = capture_dir / LOCK_FILE_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            owner = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
            raise CollectorBusyError(
                f"another collector ({owner}) is using the capture directory {capture_dir}: "
                f"rollout ids carry no run id, so two collection jobs in one directory would "
                f"clear and mix each other's captures; give each job its own capture directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        value = _codec.decode_object(raw)
        if value is None:
            raise ValueError(f"{path}, line {number}: not a JSON object")
        rows.append(value)
    return rows


def _done_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of an earlier run's output; a torn last line (a crash mid-write) is skipped."""
    if not path.exists():
        return []
    return [
        row
        for raw in path.read_bytes().split(b"\n")
        if (row := _codec.decode_object(raw)) is not None
    ]


_ATTEMPT = re.compile(r"-a(\d+)\Z")


def _next_attempt(capture_dir: Path | None, base_ids: Iterable[str]) -> int:
    """One past the highest attempt any of `base_ids` has a capture for (at least 1)."""
    highest = 0
    if capture_dir is not None:
        wanted = set(base_ids)
        for rollout_id in CaptureStore(capture_dir).rollout_ids():
            match = _ATTEMPT.search(rollout_id)
            base = rollout_id[: match.start()] if match else rollout_id
            if base in wanted and match:
                highest = max(highest, int(match.group(1)))
    return highest + 1


def _http_agent(
    base_url: str, timeout: float | None
) -> Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]:
    import httpx

    url = base_url.rstrip("/") + "/run"

    async def call(body: dict[str, Any]) -> Mapping[str, Any]:
        async with httpx.AsyncClient(timeout=timeout) as client:
            response = await client.post(
                url, content=_codec.encode(body), headers={"content-type": "application/json"}
            )
            response.raise_for_status()
            value = _codec.decode_object(response.content)
            if value is None:
                raise ValueError(f"{url} returned a body that is not a JSON object")
            return value

    return call


def _key(row: Mapping[str, Any]) -> tuple[Any, Any]:
    return row.get("_ng_task_index"), row.get("_ng_rollout_index")


async def collect(
    rows: Iterable[Mapping[str, Any]] | str | os.PathLike[str],
    agent: Agent,
    *,
    capture_dir: str | os.PathLike[str] | None,
    output_path: str | os.PathLike[str],
    num_repeats: int = 1,
    concurrency: int = 8,
    resume: bool = False,
    include_payloads: bool = False,
    timeout: float | None = None,
) -> CollectionSummary:
    """Run every row through `agent` and write each finished rollout to `output_path` (JSONL).

    - `rows`: the input rows (mappings) or the path of a JSONL file of them. Each row is
      repeated `num_repeats` times and stamped with `_ng_task_index` (its position) and
      `_ng_rollout_index` (the repeat); a row's `_ng_rollout_id`, if any, is kept (and
      then cannot be repeated).
    - `agent`: an async callable taking the run body and returning the rollout record,
      or the base URL of an agent server (`POST <url>/run`, JSON in and out).
    - `capture_dir`: the run's `model_call_capture_dir` when capture is on, else None (no
      clearing, no attachment). While the run lasts it holds a lock in that directory: a
      second collector on the same directory raises `CollectorBusyError`.
    - Before dispatch, the capture of exactly the rollout-attempt ids about to run is
      cleared (a stale file of an earlier, killed attempt with the same id included).
    - At most `concurrency` rollouts run at once. Each finished rollout is written as the
      agent's record with the `_ng_*` stamps it lacks and `ng_model_call_capture`
      attached (additive: no field of the agent's record changes).
    - `resume=True` keeps the rows already in `output_path` and re-dispatches only the
      unfinished ones, with `_ng_attempt_index` n >= 1 (one past the highest attempt
      captured so far), so their `-a<n>` capture never mixes with an earlier attempt.
      Without `resume`, `output_path` is overwritten.

    A rollout the agent fails is not written; it is reported in `failed` and retried by a
    resumed run. Returns a `CollectionSummary`.
    """
    if num_repeats < 1 or concurrency < 1:
        raise ValueError("num_repeats and concurrency must be at least 1")
    source = (
        _read_jsonl(Path(rows)) if isinstance(rows, (str, os.PathLike)) else [dict(r) for r in rows]
    )
    planned: list[dict[str, Any]] = []
    for task_index, row in enumerate(source):
        if "_ng_rollout_id" in row and num_repeats > 1:
            raise ValueError(
                f"input row {task_index} has an explicit _ng_rollout_id and cannot be repeated"
            )
        for rollout_index in range(num_repeats):
            body = {**row, "_ng_task_index": task_index, "_ng_rollout_index": rollout_index}
            body.pop("_ng_attempt_index", None)
            planned.append(body)
    output = Path(output_path)
    capture = Path(capture_dir) if capture_dir is not None else None
    call = _http_agent(agent, timeout) if isinstance(agent, str) else agent

    async with _exclusive(capture) if capture is not None else _nothing():
        done = {_key(r) for r in _done_rows(output)} if resume else set()
        todo = [body for body in planned if _key(body) not in done]
        attempt = 0
        if resume and todo:
            attempt = _next_attempt(capture, (rollout_id_for_body(b) or "" for b in todo))
            for body in todo:
                body["_ng_attempt_index"] = attempt
                if "_ng_rollout_id" in body:
                    body["_ng_rollout_id"] = f"{body['_ng_rollout_id']}-a{attempt}"
        ids = [rollout_id_for_body(body) or "" for body in todo]  # validates every id up front
        if capture is not None:
            await asyncio.to_thread(clear_model_call_captures_for_rollouts, todo, capture)
        summary = CollectionSummary(
            output_path=output,
            total=len(planned),
            already_done=len(planned) - len(todo),
            dispatched=len(todo),
            succeeded=0,
            attempt_index=attempt,
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "ab" if resume else "wb") as out:
            if resume and out.tell() and _last_byte(output) != b"\n":
                out.write(b"\n")  # end a line torn by a crash, so the next row stays readable

            async def run_one(body: dict[str, Any], rollout_id: str) -> None:
                try:
                    record = dict(await call(dict(body)))
                except Exception as exc:
                    summary.failed[rollout_id] = f"{type(exc).__name__}: {exc}"
                    return
                for key in (
                    "_ng_task_index",
                    "_ng_rollout_index",
                    "_ng_attempt_index",
                    "_ng_rollout_id",
                ):
                    if key in body and key not in record:
                        record[key] = body[key]
                if capture is not None:
                    record = await asyncio.to_thread(
                        merge_model_call_capture_into_record,
                        record,
                        capture,
                        include_payloads=include_payloads,
                        rollout_id=rollout_id,
                    )
                # No await between these writes: rows never interleave in the output.
                out.write(_codec.encode_line(record))
                out.flush()
                summary.succeeded += 1

            pending = iter(zip(todo, ids, strict=True))

            async def worker() -> None:
                # One shared iterator: each rollout goes to exactly one of `concurrency`
                # workers, and no coroutine exists for rollouts not yet started.
                for body, rollout_id in pending:
                    await run_one(body, rollout_id)

            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(todo)))))
            out.flush()
            os.fsync(out.fileno())
    return summary


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


def read_rows(path: str | os.PathLike[str]) -> Sequence[dict[str, Any]]:
    """The JSON-object rows of a JSONL file (blank lines skipped); `ValueError` naming a bad line."""
    return _read_jsonl(Path(path))
