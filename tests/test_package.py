"""The package itself: its version has one source, `model_call_capture.__version__`."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import model_call_capture

ROOT = Path(__file__).resolve().parents[1]


def test_the_installed_version_is_the_package_version() -> None:
    assert importlib.metadata.version("model-call-capture") == model_call_capture.__version__


def test_pyproject_reads_the_version_from_the_package() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"]
    assert "version" in pyproject["project"]["dynamic"]
    source = ROOT / pyproject["tool"]["hatch"]["version"]["path"]
    assert f'__version__ = "{model_call_capture.__version__}"' in source.read_text(encoding="utf-8")
