"""The package itself: its version has one source, `model_call_capture.__version__`."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
import zipfile
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


def test_the_wheel_ships_the_schemas_and_the_viewer_assets(tmp_path: Path) -> None:
    # The viewer's pages and the JSON Schemas are package data: a wheel without them
    # installs cleanly and fails only when `mcc view` or `mcc validate` runs.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("model_call_capture-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    static = ROOT / "src" / "model_call_capture" / "viewer" / "static"
    expected = {
        f"model_call_capture/viewer/static/{path.relative_to(static).as_posix()}"
        for path in static.rglob("*")
        if path.is_file()
    }
    expected |= {
        f"model_call_capture/_schemas/{path.relative_to(ROOT / 'schemas').as_posix()}"
        for path in (ROOT / "schemas").rglob("*.json")
    }
    assert {"model_call_capture/viewer/static/index.html"} <= expected
    assert expected - names == set()
