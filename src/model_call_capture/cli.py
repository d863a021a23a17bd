"""The `mcc` command (placeholder until the CLI lands)."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of `mcc`."""
    print("mcc: the command line arrives with the CLI issue", file=sys.stderr)
    sys.exit(2)
