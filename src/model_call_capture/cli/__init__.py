"""The `mcc` command: a demo, a capturing proxy, and tools to inspect, validate and export captures.

Each command lives in its own module and imports what it needs when it runs, so `mcc
--help` stays fast. Every error reaches the user as one line on stderr and a non-zero exit
code; set `MCC_DEBUG=1` to get the traceback of an unexpected error instead.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from .._interrupt import INTERRUPTED, release

__all__ = ["cli", "main"]

# Each command's module, imported only when the command runs (or `--help` lists them): a
# command does not pay for the imports of the others (the proxy's, the viewer's), nor does
# each worker process of `--jobs` (`model_call_capture._parallel`), which imports this package.
_COMMANDS = {
    "compact": "compact",
    "demo": "demo",
    "export": "export",
    "schema": "export",
    "serve": "serve",
    "show": "show",
    "stats": "show",
    "validate": "validate",
    "view": "view",
}


class _Commands(click.Group):
    """The `mcc` group, its commands loaded by name from `_COMMANDS`."""

    running: str | None = None
    """The command being run, named in its error lines (`main`)."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        self.running = name
        return name, command, rest

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _COMMANDS.get(cmd_name)
        if module is None:
            return None
        command = getattr(importlib.import_module(f".{module}", __name__), cmd_name)
        assert isinstance(command, click.Command)
        return command


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="model-call-capture", prog_name="mcc")
def cli() -> None:
    """Capture every LLM API call made through a model server, and inspect the captures.

    \b
    Start here:
      mcc demo                      # a captured demo run, offline, in seconds
      mcc stats ./mcc-demo          # what was captured
      mcc view ./mcc-demo           # read the rollouts in a browser
      mcc serve --upstream http://localhost:8000 --capture-dir /data/model-calls
    """


def _prefix(ctx: click.Context | None = None) -> str:
    """`mcc CMD` for the command that ran (or the one a usage error names), else `mcc`."""
    if ctx is not None:
        return ctx.command_path
    return f"mcc {cli.running}" if cli.running else "mcc"


def _error_line(text: str, ctx: click.Context | None = None) -> None:
    """One error line on stderr, `mcc CMD: error: text`: a message may quote a file name or
    a captured value, so it is printed escaped (`safe_text`), like everything else `mcc`
    prints from a capture."""
    from ._common import safe_text

    click.echo(safe_text(f"{_prefix(ctx)}: error: {text}"), err=True)


def _interrupted(exc: BaseException) -> bool:
    """Whether `exc` was caused by a Ctrl-C: Python wraps a `KeyboardInterrupt` raised in
    some places (a class body's `__set_name__`, while a late import defines its classes)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def main(argv: list[str] | None = None) -> None:
    """Entry point of `mcc`: run the command, turning every error into one line and an exit code.

    Every error line has one shape, usage errors included: `mcc CMD: error: ...` (`mcc:
    error: ...` before a command is known); Ctrl-C is `mcc: interrupted` and exit code 130.
    """
    cli.running = None
    try:
        release()  # from here on a Ctrl-C is a KeyboardInterrupt, reported below
        # Without standalone mode click returns the exit code of `--help` and of
        # `click.exceptions.Exit` instead of exiting itself.
        code = cli.main(args=argv, prog_name="mcc", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = _prefix(exc.ctx)
        _error_line(f"{exc.format_message()} (see '{where} --help')", exc.ctx)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _error_line(exc.format_message())
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        click.echo(INTERRUPTED, err=True)
        sys.exit(130)
    except OSError as exc:
        if os.environ.get("MCC_DEBUG"):
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        _error_line(f"{where}{exc.strerror or exc}")
        sys.exit(1)
    except Exception as exc:  # anything unexpected still ends as one clear line
        if _interrupted(exc):
            click.echo(INTERRUPTED, err=True)
            sys.exit(130)
        if os.environ.get("MCC_DEBUG"):
            raise
        message = " ".join(str(exc).split()) or "(no message)"
        _error_line(f"{type(exc).__name__}: {message} (MCC_DEBUG=1 shows the traceback)")
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
