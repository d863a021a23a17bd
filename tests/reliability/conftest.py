"""Sizing and the figures table of the reliability suite.

CI size by default; `MCC_NIGHTLY=1` runs the nightly size (more kills, more fuzz inputs,
the 200 MB body). `MCC_RELIABILITY_REPORT=<path>` writes the figures each test recorded
as the Markdown table of docs/reliability.md.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

NIGHTLY = os.environ.get("MCC_NIGHTLY") == "1"
"""True for the nightly-size run."""


def sized(ci: int, nightly: int) -> int:
    """`nightly` in the nightly-size run, else `ci`."""
    return nightly if NIGHTLY else ci


@dataclass(frozen=True)
class Figure:
    """One row of the reliability table."""

    fault: str
    injected: str
    runs: int
    captured: int | str
    """Lines written, or "-" where no call is captured (fuzzing a decoder)."""
    lost: int | str
    user_sees: str


_FIGURES: list[Figure] = []


@pytest.fixture
def figures() -> Iterator[list[Figure]]:
    """Append `Figure` rows; they reach the table only when the test passes."""
    rows: list[Figure] = []
    yield rows
    _FIGURES.extend(rows)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("MCC_RELIABILITY_REPORT")
    if not target or not _FIGURES:
        return
    lines = [
        f"Size: {'nightly (MCC_NIGHTLY=1)' if NIGHTLY else 'CI'}",
        "",
        "| fault | how injected | runs | calls captured | calls lost | what the user sees |",
        "|---|---|---:|---:|---:|---|",
    ]
    for f in _FIGURES:
        lines.append(
            f"| {f.fault} | {f.injected} | {f.runs} | {f.captured} | {f.lost} | {f.user_sees} |"
        )
    Path(target).write_text("\n".join(lines) + "\n", encoding="utf-8")
