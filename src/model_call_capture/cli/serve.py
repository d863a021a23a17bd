"""`mcc serve`: a capturing reverse proxy in front of any OpenAI- or Anthropic-compatible server."""

from __future__ import annotations

import socket
from pathlib import Path

import click

from ..proxy import DEFAULT_TIMEOUT_S

__all__ = ["serve"]


def _listen(host: str, port: int) -> socket.socket:
    """A bound, listening socket; bound here so a taken port is one clear error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
        ) from None
    sock.set_inheritable(True)
    return sock


@click.command()
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
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
def serve(
    upstream: str, capture_dir: str, name: str, host: str, port: int, timeout: float, log_level: str
) -> None:
    """A capturing reverse proxy for an OpenAI- or Anthropic-compatible server.

    `/ng-rollout/<id>/v1/...` is recorded into CAPTURE_DIR/<id>.capture.jsonl and
    forwarded to URL/v1/...; unprefixed `/v1/...` is forwarded without capture. Streams
    pass through chunk by chunk, byte for byte. Request headers (Authorization too) are
    forwarded and never recorded. An unreachable upstream answers 502, a timeout 504;
    both are recorded with their error_category (connection, timeout).

    \b
    Example:
      mcc serve --upstream http://localhost:8000 --capture-dir /data/model-calls --name vllm
      # then, in the agent:
      OpenAI(base_url="http://127.0.0.1:8787/ng-rollout/task7-0/v1", api_key=...)
    """
    import uvicorn

    from ..proxy import create_proxy_app

    directory = Path(capture_dir).expanduser().resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise click.ClickException(
            f"{directory}: cannot create the capture directory: {exc.strerror}"
        ) from None
    try:
        app = create_proxy_app(upstream, str(directory), name=name, timeout_s=timeout)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    sock = _listen(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    click.echo(
        f"mcc serve: http://{shown_host}:{bound_port} -> {upstream}, capturing /ng-rollout/<id>/v1/... into {directory}"
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
    )
    uvicorn.Server(config).run(sockets=[sock])
