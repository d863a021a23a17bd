"""Ctrl-C while the `mcc` command is still starting: one line and exit code 130, no traceback.

Python turns SIGINT into `KeyboardInterrupt` wherever the main thread is. Before
`cli.main()` runs, the package's imports take a few hundred milliseconds and nothing
would catch it: the user would see the traceback of whichever import it cut. So the
package's `__init__` imports this module before anything else, which calls `guard_start()`: when this process is the
`mcc` command (the installed script, `python -m model_call_capture` or `python -m
model_call_capture.cli`), a SIGINT until `main()` takes over (`release()`) writes one line
and ends the process with 130, the shell's code for an interrupt. A program that only
imports the library keeps Python's own handler.

A SIGINT in the interpreter's own first milliseconds, while Python imports its `site`
module and before any code of this package runs, is Python's to report; nothing here can
change that (docs/cli.md, "Conventions").
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType

__all__ = ["INTERRUPTED", "guard_start", "is_mcc_command", "release"]

INTERRUPTED = "mcc: interrupted"
"""The line an interrupted `mcc` writes to stderr, early or late."""

_MODULES = ("model_call_capture", "model_call_capture.cli")
# Interpreter options followed by a separate argument (`-X importtime`, `-W error`).
_WITH_ARGUMENT = ("-X", "-W", "--check-hash-based-pycs")


def is_mcc_command() -> bool:
    """Whether this process is the `mcc` command: its script, or `-m` of its modules."""
    if os.path.basename(sys.argv[0]) == "mcc":
        return True
    argv = sys.orig_argv
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return i + 1 < len(argv) and argv[i + 1] in _MODULES
        if arg.startswith("-m"):
            return arg[2:] in _MODULES
        if arg in _WITH_ARGUMENT:
            i += 2
            continue
        if not arg.startswith("-") or arg.startswith("-c"):
            return False  # a script or `-c`: another program that imports the library
        i += 1
    return False


def _interrupted(signum: int, frame: FrameType | None) -> None:
    # Only imports were running: nothing to clean up, and nothing half-written.
    os.write(2, INTERRUPTED.encode() + b"\n")
    os._exit(130)


def guard_start() -> None:
    """Install the early SIGINT handler, when this process is the `mcc` command."""
    if is_mcc_command() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        try:
            signal.signal(signal.SIGINT, _interrupted)
        except ValueError:  # not the main thread: not the command starting
            pass


def release() -> None:
    """Give SIGINT back to Python (a `KeyboardInterrupt`, which `cli.main()` reports)."""
    if signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)


guard_start()
