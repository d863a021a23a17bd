"""Shared fixtures: where the recorded corpus and the NeMo Gym reference files live."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from model_call_capture.dialects import get_dialect
from model_call_capture.dialects.base import Derived, decode_view
from model_call_capture.dialects.chat import _derive as chat_derive

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCC_SHARED_DIR", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
GYM_REFERENCE = SHARED / "gym-reference"


def in_ci() -> bool:
    """True in CI (`CI` set, as CI services and `.ci/run` set it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_capability(name: str, available: bool, why: str) -> None:
    """Go on when `available`; else fail in CI and skip elsewhere, saying why.

    For a test that needs something of the machine (root, mounts, loop devices, Node.js,
    the corpus in ../shared). The CI machine has all of them, so there a missing one means
    the test did not run: that must be a failure, never a skip or a weaker stand-in.
    """
    if available:
        return
    message = f"needs {name}: {why}"
    if in_ci():
        pytest.fail(f"{message} (CI provides it, so its absence fails the test)")
    pytest.skip(message)


def _require(path: Path, what: str) -> Path:
    require_capability(
        what, path.is_dir(), f"not found at {path}: it lives in ../shared beside the repository"
    )
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """`../shared/corpus`: real recorded streams and JSON bodies of the three dialects."""
    return _require(CORPUS, "the recorded corpus")


@pytest.fixture(scope="session")
def gym_reference_dir() -> Path:
    """`../shared/gym-reference`: capture files NeMo Gym 0.7.0 wrote, with what it derived."""
    return _require(GYM_REFERENCE, "the NeMo Gym reference files")


# The notes written when a stream state's code raised: by `StreamReassembler` around a
# state ("event not used (", "result not built ("), or by a state's own net around its
# feed (chat: "event not used (", responses: "event could not be used ("). Those nets keep
# a capture alive in production; they must not also hide a raising state from the tests.
STATE_FAILURE_NOTES = ("event not used (", "event could not be used (", "result not built (")


def state_failures(dropped: list[str]) -> list[str]:
    """The `dropped` notes saying a dialect state raised (an event or the result was lost)."""
    return [note for note in dropped if note.startswith(STATE_FAILURE_NOTES)]


def derive_uncaught(dialect: str, request: Any, response: Any) -> Derived:
    """`dialect`'s `derive` with no catch-all around it, so a test sees what it raises.

    chat's `derive` turns any exception into a record with only the model (a record must
    survive a bug); a "never raises" test of it could not fail, so it calls the function
    inside that net, on the same view. The other dialects have no net: their `derive` is
    called as it is.
    """
    if dialect == "chat":
        view = decode_view(response, chat_derive._response_view) or chat_derive._ResponseView()
        return chat_derive._derive(request, view)
    return get_dialect(dialect).derive(request, response)
