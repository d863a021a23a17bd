"""The rollout collector: run rows through an agent, write each finished rollout with its attachment.

`collect` holds its capture directory's lock for the whole run, plans one rollout per row
and repeat, clears the captures of exactly the rollouts about to run, dispatches them with
bounded concurrency and appends each finished one to the output; see its docstring, and
docs/collector.md for what it writes and how calls are joined to rollouts.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import re
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeAlias

from .. import _codec
from ..errors import CollectorBusyError
from ..rollout_ids import rollout_id_for_body
from ..store import CaptureStore
from ._attachment import (
    clear_model_call_captures_for_rollouts,
    merge_model_call_capture_into_record,
)

__all__ = [
    "LOCK_FILE_NAME",
    "Agent",
    "CollectionSummary",
    "CollectorBusyError",
    "collect",
    "read_rows",
]

LOCK_FILE_NAME = ".mcc-collector.lock"
"""The lock file a running collector holds in its capture directory."""

_AgentCall: TypeAlias = Callable[[dict[str, Any]], Awaitable[Mapping[str, Any]]]
Agent: TypeAlias = _AgentCall | str
"""An async callable taking a run body and returning the rollout record, or the base URL
of an agent server whose `POST /run` does the same."""

_STAMPS = ("_ng_task_index", "_ng_rollout_index", "_ng_attempt_index", "_ng_rollout_id")
"""The run-body keys a written rollout gets when the agent's record lacks them."""


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
    planned = _plan(_input_rows(rows), num_repeats)
    output = Path(output_path)
    capture = Path(capture_dir) if capture_dir is not None else None
    call = _http_agent(agent, timeout) if isinstance(agent, str) else agent

    async with _exclusive(capture) if capture is not None else _nothing():
        todo = _unfinished(planned, output) if resume else planned
        attempt = _stamp_next_attempt(todo, capture) if resume and todo else 0
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
        with _output_file(output, append=resume) as out:
            dispatcher = _Dispatcher(call, capture, include_payloads, out, summary)
            await dispatcher.run(list(zip(todo, ids, strict=True)), concurrency)
    return summary


# -- planning ---------------------------------------------------------------------------


def _input_rows(rows: Iterable[Mapping[str, Any]] | str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The input rows: read from a JSONL file, or copied from the mappings given."""
    if isinstance(rows, (str, os.PathLike)):
        return _read_jsonl(Path(rows))
    return [dict(r) for r in rows]


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


def _plan(source: Sequence[dict[str, Any]], num_repeats: int) -> list[dict[str, Any]]:
    """One run body per row and repeat, stamped with its task and rollout index.

    A row's own `_ng_attempt_index` is dropped: attempts are the collector's to number.
    """
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
    return planned


# -- resume -----------------------------------------------------------------------------


def _key(row: Mapping[str, Any]) -> tuple[Any, Any]:
    return row.get("_ng_task_index"), row.get("_ng_rollout_index")


def _done_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of an earlier run's output; a torn last line (a crash mid-write) is skipped."""
    if not path.exists():
        return []
    return [
        row
        for raw in path.read_bytes().split(b"\n")
        if (row := _codec.decode_object(raw)) is not None
    ]


def _unfinished(planned: Sequence[dict[str, Any]], output: Path) -> list[dict[str, Any]]:
    """The planned bodies whose rollout is not yet in the output of an earlier run."""
    done = {_key(r) for r in _done_rows(output)}
    return [body for body in planned if _key(body) not in done]


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


def _stamp_next_attempt(todo: Sequence[dict[str, Any]], capture: Path | None) -> int:
    """Stamp `todo` with the next attempt index and return it.

    An explicit `_ng_rollout_id` gets the `-a<n>` suffix too, so the resumed attempt
    writes a capture file of its own.
    """
    attempt = _next_attempt(capture, (rollout_id_for_body(b) or "" for b in todo))
    for body in todo:
        body["_ng_attempt_index"] = attempt
        if "_ng_rollout_id" in body:
            body["_ng_rollout_id"] = f"{body['_ng_rollout_id']}-a{attempt}"
    return attempt


# -- the lock and the agent ---------------------------------------------------------------


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


@asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield


def _http_agent(base_url: str, timeout: float | None) -> _AgentCall:
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


# -- dispatch and output ----------------------------------------------------------------


@contextmanager
def _output_file(output: Path, *, append: bool) -> Iterator[IO[bytes]]:
    """The output opened for writing rows (appended to on resume), fsynced when the run ends."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "ab" if append else "wb") as out:
        if append and out.tell() and _last_byte(output) != b"\n":
            out.write(b"\n")  # end a line torn by a crash, so the next row stays readable
        yield out
        out.flush()
        os.fsync(out.fileno())


def _last_byte(path: Path) -> bytes:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


@dataclass(slots=True)
class _Dispatcher:
    """Runs rollouts through the agent and writes each finished one, counting in `summary`."""

    call: _AgentCall
    capture: Path | None
    include_payloads: bool
    out: IO[bytes]
    summary: CollectionSummary

    async def run(self, rollouts: Sequence[tuple[dict[str, Any], str]], concurrency: int) -> None:
        """Run `(body, rollout id)` pairs, at most `concurrency` at once."""
        pending = iter(rollouts)

        async def worker() -> None:
            # One shared iterator: each rollout goes to exactly one of `concurrency`
            # workers, and no coroutine exists for rollouts not yet started.
            for body, rollout_id in pending:
                await self._run_one(body, rollout_id)

        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(rollouts)))))

    async def _run_one(self, body: dict[str, Any], rollout_id: str) -> None:
        try:
            record = dict(await self.call(dict(body)))
        except Exception as exc:
            self.summary.failed[rollout_id] = f"{type(exc).__name__}: {exc}"
            return
        for key in _STAMPS:
            if key in body and key not in record:
                record[key] = body[key]
        if self.capture is not None:
            record = await asyncio.to_thread(
                merge_model_call_capture_into_record,
                record,
                self.capture,
                include_payloads=self.include_payloads,
                rollout_id=rollout_id,
            )
        # No await between these writes: rows never interleave in the output.
        self.out.write(_codec.encode_line(record))
        self.out.flush()
        self.summary.succeeded += 1


def read_rows(path: str | os.PathLike[str]) -> Sequence[dict[str, Any]]:
    """The JSON-object rows of a JSONL file (blank lines skipped); `ValueError` naming a bad line."""
    return _read_jsonl(Path(path))
