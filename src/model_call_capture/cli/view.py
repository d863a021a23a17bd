"""`mcc view`: the local web viewer of a capture directory (read only)."""

from __future__ import annotations

import threading
import webbrowser
from pathlib import Path

import click

from ._common import capture_root, listen, max_line_bytes_option, note, safe_text

__all__ = ["view"]

_LOCAL = ("127.0.0.1", "localhost", "::1")


@click.command()
@click.argument("directory", metavar="DIR", type=click.Path(file_okay=False))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on. Captures hold prompts: keep it local unless you mean it.",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="0: any free port."
)
@click.option(
    "--open/--no-open",
    "open_browser",
    default=False,
    show_default=True,
    help="Open the viewer in the default browser.",
)
@click.option(
    "--rollouts",
    "rollouts",
    type=click.Path(dir_okay=False),
    default=None,
    help="The collector's rollouts file whose rewards and fields join the table "
    "(default: rollouts.jsonl in DIR's capture directory or the directory holding it).",
)
@max_line_bytes_option()
def view(
    directory: str,
    host: str,
    port: int,
    open_browser: bool,
    rollouts: str | None,
    max_line_bytes: int,
) -> None:
    """A local web app to read the rollouts of DIR: a table, and each rollout as a conversation.

    Read only: nothing under DIR is written. The pages follow the files, so a run that is
    still going shows new rollouts and calls as they land. The JSON behind the pages is
    described in docs/viewer.md.

    \b
    Example:
      mcc view ./mcc-demo --open
      mcc view /data/model-calls --port 8765
      mcc view /data/model-calls --rollouts /data/train-rollouts.jsonl
    """
    import uvicorn

    from ..viewer import create_app

    root = capture_root(directory)
    sock = listen(host, port)
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{bound_port}/"
    hosts = [*_LOCAL, "[::1]"] if host in _LOCAL else [host, shown_host, *_LOCAL, "[::1]"]
    if host in ("0.0.0.0", "::"):
        hosts = ["*"]  # any name this machine answers to; the user asked for every interface
    if host in ("0.0.0.0", "::"):
        # Not a URL a browser can open: the same server answers on this machine's loopback.
        url = f"http://{'[::1]' if host == '::' else '127.0.0.1'}:{bound_port}/"
    app = create_app(
        root,
        allowed_hosts=hosts,
        max_line_bytes=max_line_bytes,
        shown=directory,
        rollouts=rollouts,
    )
    click.echo(f"Serving {url}", nl=True)
    click.echo(safe_text(f"mcc view: reading {root} (read only); Ctrl-C stops"), err=True)
    for warning in _warnings(root, host, bound_port, rollouts):
        note(warning, kind="warning")
    if open_browser:
        threading.Timer(0.5, _open, args=(url,)).start()
    config = uvicorn.Config(
        app,
        log_level="warning",
        server_header=False,
        timeout_graceful_shutdown=2,
    )
    uvicorn.Server(config).run(sockets=[sock])


def _warnings(root: Path, host: str, port: int, rollouts: str | None) -> list[str]:
    """What a user should know before reading the page: who else can, and an empty DIR."""
    from ..store import CaptureStore

    out = []
    if host not in _LOCAL:
        where = "every interface" if host in ("0.0.0.0", "::") else host
        out.append(
            f"listening on {where}: anyone who can reach this machine on port {port} can "
            "read these captures, prompts included (--host 127.0.0.1 keeps it local)"
        )
    if not CaptureStore(root).has_rollouts():
        out.append(f"{root} holds no capture files yet; the table fills as they land")
    if rollouts is not None and not Path(rollouts).is_file():
        out.append(f"{rollouts} is not a file yet; rewards show once it is")
    return out


def _open(url: str) -> None:
    """Open `url` in the default browser, or say that none opened (a server, no display)."""
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        # A timer's thread, outside the command's context: the prefix is written out.
        click.echo(
            f"mcc view: warning: no browser could be opened here; open {url} yourself", err=True
        )
