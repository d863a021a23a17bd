"""`mcc serve`: a capturing reverse proxy in front of any OpenAI- or Anthropic-compatible server."""

from __future__ import annotations

import contextlib
import resource
from pathlib import Path

import click

from ..contracts import CaptureConfig
from ..proxy import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEAD_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_TIMEOUT_S,
    FDS_PER_CONNECTION,
    descriptor_cap,
    descriptor_limit,
    descriptors_needed,
)
from ._common import listen

__all__ = ["serve"]


def _connection_cap(max_connections: int | None) -> int:
    """The connection cap: raise the open-file limit to what it needs, or lower the cap
    (one warning) to what the limit serves; refuse a limit that serves no connection."""
    wanted = DEFAULT_MAX_CONNECTIONS if max_connections is None else max_connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = descriptors_needed(wanted)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    limit = descriptor_limit()
    cap = min(wanted, descriptor_cap(limit))
    if cap < 1:
        raise click.ClickException(
            f"the open-file limit ({limit}) is too low to serve any connection; "
            f"raise it (ulimit -n) to at least {descriptors_needed(1)}"
        )
    if cap < wanted:
        asked = "" if max_connections is None else f"--max-connections {wanted} lowered: "
        click.echo(
            f"mcc serve: warning: {asked}the open-file limit ({limit}) serves {cap} connections "
            f"({FDS_PER_CONNECTION} descriptors each, and room for the server's own); "
            f"raise it (ulimit -n {needed}) to serve {wanted}",
            err=True,
        )
    return cap


_HELP = """A capturing reverse proxy for an OpenAI- or Anthropic-compatible server.

`/ng-rollout/<id>/v1/...` is recorded into CAPTURE_DIR/<id>.capture.jsonl and
forwarded to URL/v1/...; unprefixed `/v1/...` is forwarded without capture. Streams
pass through chunk by chunk, byte for byte, and request bodies stream to the upstream.
Request headers (Authorization too) are forwarded and never recorded. An unreachable
upstream answers 502, a timeout 504; both are recorded with their error_category
(connection, timeout).

Credentials in URL (user:password@, ?key=...) are sent upstream with every call (the
userinfo as Basic authorization, the query merged into each request's; a client cannot
override its parameters) and are never shown in messages, logs or captures.

\b
Limits on clients (see docs/security.md):
  a request target outside the upstream base path (`..`), `*`, or with `#`: 400;
  a request body over --max-request-bytes: 413;
  a request head not complete within --header-timeout: connection closed (408);
  a request body that stalls for --body-timeout: 408;
  a connection past --max-connections: the one waiting longest for a request
    head is closed; when every one is busy with a request, the new one gets 503.

\b
Example:
  mcc serve --upstream http://localhost:8000 --capture-dir /data/model-calls --name vllm
  # then, in the agent:
  OpenAI(base_url="http://127.0.0.1:8787/ng-rollout/task7-0/v1", api_key=...)
"""


@click.command(help=_HELP)
@click.option(
    "--upstream",
    required=True,
    metavar="URL",
    help="Base URL of the model server (http://vllm:8000).",
)
@click.option(
    "--capture-dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Where <rollout_id>.capture.jsonl files are written (created if missing).",
)
@click.option(
    "--name", default="proxy", show_default=True, help="The model_ref name recorded on every call."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port",
    default=8787,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port (0: any free one).",
)
@click.option(
    "--timeout",
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds to wait for the upstream (to connect, and between two chunks).",
)
@click.option(
    "--max-request-bytes",
    default=DEFAULT_MAX_REQUEST_BYTES,
    show_default=True,
    type=click.IntRange(min=0),
    help="Largest request body forwarded; a larger one is answered 413.",
)
@click.option(
    "--header-timeout",
    default=DEFAULT_HEAD_TIMEOUT_S,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds a client has to send a complete request head; then the connection is closed.",
)
@click.option(
    "--body-timeout",
    default=DEFAULT_BODY_TIMEOUT_S,
    show_default=True,
    type=click.FloatRange(min=0, min_open=True),
    help="Seconds to wait for the next chunk of a request body; then 408.",
)
@click.option(
    "--max-connections",
    default=None,
    type=click.IntRange(min=1),
    help=f"Client connections open at once [default: {DEFAULT_MAX_CONNECTIONS}, or what the "
    "open-file limit serves]; past it the one waiting longest for a request is closed, "
    "or, when all are busy, the new one is answered 503.",
)
@click.option(
    "--capture-max-bytes",
    default=CaptureConfig().capture_max_bytes,
    show_default=True,
    type=click.IntRange(min=0),
    help="Bytes kept of each captured request and response; past it the payload is cut.",
)
@click.option(
    "--capture-memory-budget",
    default=CaptureConfig().capture_memory_budget_bytes,
    show_default=True,
    type=click.IntRange(min=0),
    help="Bytes all captures in flight may hold together; past it capture degrades "
    "(the raw stream text first, then the payload), never the reply.",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
def serve(
    upstream: str,
    capture_dir: str,
    name: str,
    host: str,
    port: int,
    timeout: float,
    max_request_bytes: int,
    header_timeout: float,
    body_timeout: float,
    max_connections: int | None,
    capture_max_bytes: int,
    capture_memory_budget: int,
    log_level: str,
) -> None:
    """`mcc serve` (its help text is `_HELP`)."""
    import uvicorn

    from ..proxy import ProxyServer, Upstream, create_proxy_app, server_options

    directory = Path(capture_dir).expanduser().resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(
            f"{directory}: cannot create the capture directory: {exc.strerror}"
        ) from None
    try:
        app = create_proxy_app(
            upstream,
            str(directory),
            name=name,
            timeout_s=timeout,
            max_request_bytes=max_request_bytes,
            body_timeout_s=body_timeout,
            capture_max_bytes=capture_max_bytes,
            capture_memory_budget_bytes=capture_memory_budget,
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    cap = _connection_cap(max_connections)
    sock = listen(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(
        f"mcc serve: http://{shown_host}:{bound_port} -> {Upstream(upstream).display}, capturing /ng-rollout/<id>/v1/... into {directory}"
    )
    click.echo(
        f"mcc serve: point a client at base_url=http://{shown_host}:{bound_port}/ng-rollout/<rollout_id>/v1"
    )
    config = uvicorn.Config(
        app,
        log_level=log_level,
        server_header=False,  # the upstream's own Server and Date headers pass through
        date_header=False,
        timeout_graceful_shutdown=5,
        **server_options(head_timeout_s=header_timeout, max_connections=cap, log_level=log_level),
    )
    ProxyServer(config).run(sockets=[sock])
