"""The options of `mcc export --format otlp | atif`, as the export engine's `format_options`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["format_options", "interchange_options"]

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


def _headers(pairs: tuple[str, ...]) -> dict[str, str] | None:
    headers = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise click.ClickException(f"--header {pair.split('=')[0]!r}...: expected KEY=VALUE")
        headers[key.strip()] = value.strip()
    return headers or None


def format_options(fmt: str | None, directory: str, options: dict[str, Any]) -> dict[str, Any]:
    """The `format_options` of `export()` for `--format fmt`, from the parsed options."""
    if fmt == "otlp":
        return {
            "endpoint": options["endpoint"],
            "headers": _headers(options["headers"]),
            "content": options["content"],
            "since": options["since"],
        }
    if fmt == "atif":
        return {
            "session_id": options["session_id"] or Path(directory).resolve().name or "mcc",
            "agent_name": options["agent_name"],
            "agent_version": options["agent_version"],
        }
    return {}
