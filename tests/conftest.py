"""Shared fixtures: where the recorded corpus and the NeMo Gym reference files live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCC_SHARED_DIR", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
GYM_REFERENCE = SHARED / "gym-reference"


def _require(path: Path, what: str) -> Path:
    if not path.is_dir():
        pytest.skip(f"{what} not found at {path}: it lives in ../shared beside the repository")
    return path


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """`../shared/corpus`: real recorded streams and JSON bodies of the three dialects."""
    return _require(CORPUS, "the recorded corpus")


@pytest.fixture(scope="session")
def gym_reference_dir() -> Path:
    """`../shared/gym-reference`: capture files NeMo Gym 0.7.0 wrote, with what it derived."""
    return _require(GYM_REFERENCE, "the NeMo Gym reference files")
