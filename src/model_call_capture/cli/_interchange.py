"""The options of `mcc export --format otlp | atif` and what they run (`_interchange`)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import OtlpExportError
from ..export import _atomic
from ..store import CaptureStore, Rollout
from ._common import capture_root, stderr, stdout

__all__ = ["export_interchange", "interchange_options"]

_F = TypeVar("_F", bound=Callable[..., Any])


def interchange_options(command: _F) -> _F:
    """Add the options of the OTLP and ATIF formats to `command`."""
    options = [
        click.option(
            "--endpoint",
            metavar="URL",
            help="otlp: the OTLP/HTTP endpoint (a bare origin gets /v1/traces).",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="KEY=VALUE",
            help="otlp: a request header (repeatable); else OTEL_EXPORTER_OTLP_(TRACES_)HEADERS.",
        ),
        click.option(
            "--content", is_flag=True, help="otlp: add messages and tool definitions (redacted)."
        ),
        click.option(
            "--since",
            metavar="TIME",
            help="otlp: only calls started at or after TIME (ISO 8601 or Unix seconds).",
        ),
        click.option(
            "--session-id",
            metavar="ID",
            help="atif: the run's session_id (default: the directory's name).",
        ),
        click.option(
            "--agent-name", default="unknown", show_default=True, help="atif: agent.name."
        ),
        click.option(
            "--agent-version", default="unknown", show_default=True, help="atif: agent.version."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.ClickException(f"--since {text!r}: not ISO 8601 or Unix seconds") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def _headers(pairs: tuple[str, ...]) -> dict[str, str] | None:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.ClickException(f"--header {pair.split('=')[0]!r}...: expected KEY=VALUE")
        headers[key.strip()] = value.strip()
    return headers or None


def _rollouts(directory: str) -> list[Rollout]:
    return CaptureStore(capture_root(directory)).rollouts()


def _otlp(directory: str, out: str | None, incremental: bool, **options: Any) -> None:
    from ..export._interchange import send_otlp
    from ..export._sent import SentState
    from ..otlp import SpanSender

    endpoint, content = options["endpoint"], options["content"]
    if endpoint is None:
        raise click.ClickException("--format otlp needs --endpoint URL")
    if incremental and out is None:
        raise click.ClickException("--format otlp --incremental needs --out STATE (a file)")
    start = _since(options["since"])
    try:
        sender = SpanSender(
            endpoint, headers=_headers(options["headers"]), batch_size=64 if content else 256
        )
        state = None
        if incremental and out is not None:
            state = SentState(Path(out), sender.endpoint, content).load()
        try:
            counts = send_otlp(
                _rollouts(directory), sender, content=content, since=start, state=state
            )
        finally:
            sender.shutdown()
        if state is not None:
            state.save()
    except OtlpExportError as exc:
        raise click.ClickException(str(exc)) from None
    stdout().print(f"sent {counts.spans} spans to {sender.endpoint}")
    if counts.untimed:
        stderr().print(f"[yellow]{counts.untimed} calls without a start time have no span[/]")
    if counts.damaged:
        stderr().print(
            f"[yellow]{counts.damaged} unreadable lines skipped (mcc validate {directory} lists them)[/]"
        )


def _atif(
    directory: str, out: str | None, session_id: str | None, agent_name: str, agent_version: str
) -> None:
    from ..export._interchange import write_atif

    if out is None:
        raise click.ClickException(
            "--format atif needs --out DIR (a directory that does not exist yet)"
        )
    target = Path(out)
    if not target.parent.is_dir():
        raise click.ClickException(f"{target.parent}: no such directory")
    _atomic.clean_stale(target)
    if target.exists() or target.is_symlink():
        raise click.ClickException(f"{target}: exists (ATIF export writes a new directory)")
    session = session_id or Path(directory).resolve().name or "mcc"
    counts = write_atif(
        _rollouts(directory),
        target,
        session_id=session,
        agent_name=agent_name,
        agent_version=agent_version,
    )
    stdout().print(f"wrote {counts.written} ATIF trajectories to {target}")
    for rollout_id, reason in counts.skipped:
        stderr().print(f"[yellow]skipped {rollout_id}: {reason}[/]", markup=True, highlight=False)
    if counts.skipped:
        raise SystemExit(2)


def export_interchange(
    directory: str, out: str | None, fmt: str, *, others: bool, incremental: bool, **options: Any
) -> None:
    """Run `mcc export --format otlp | atif` with the parsed options (`others`: an option
    of the row formats was given too)."""
    if others or (incremental and fmt == "atif"):
        allowed = "--partition-by, --tokens, --payloads"
        raise click.ClickException(
            f"--format {fmt} takes none of {allowed}" + ("" if fmt == "otlp" else ", --incremental")
        )
    if fmt == "otlp":
        _otlp(directory, out, incremental, **options)
    else:
        _atif(
            directory, out, options["session_id"], options["agent_name"], options["agent_version"]
        )
