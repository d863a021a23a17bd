"""What every `mcc` command does the same way (docs/cli.md, "Conventions").

Error lines (`mcc CMD: error: ...`, usage errors too), the rule for a directory without
capture files, notes on stderr, a line of a newer format,
1-based line numbers, and an early Ctrl-C. The commands run in-process through `main()`
(the entry point of the `mcc` script), or as real processes where the process is the
point (signals, `python -m`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import Run

SAMPLE = Path(__file__).parent / "data" / "schema-1.0" / "0-0.capture.jsonl"


def _commands(directory: Path, out: Path) -> dict[str, list[str]]:
    """Every command that reads a capture directory, with what else it needs."""
    d = str(directory)
    return {
        "stats": ["stats", d],
        "show": ["show", d, "0-0"],
        "export": ["export", d, "--out", str(out / "calls.jsonl")],
        "validate": ["validate", d],
        "compact": ["compact", d],
    }


@pytest.mark.parametrize("command", ["stats", "show", "export", "validate", "compact"])
@pytest.mark.parametrize("contents", ["empty", "other files"])
def test_a_directory_without_capture_files_is_one_error_for_every_command(
    command: str, contents: str, tmp_path: Path, mcc: Run
) -> None:
    directory = tmp_path / "calls"
    directory.mkdir()
    if contents == "other files":
        (directory / "rollouts.jsonl").write_text('{"a": 1}\n')
        (directory / "notes").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    assert mcc(*_commands(directory, out)[command]) == (
        1,
        "",
        f"mcc {command}: error: {directory}: no capture files (*.capture.jsonl) in this directory\n",
    )
    assert list(out.iterdir()) == []  # no empty export


@pytest.mark.parametrize("command", ["stats", "show", "export", "validate", "compact", "view"])
def test_a_missing_directory_is_one_error_for_every_command(
    command: str, tmp_path: Path, mcc: Run
) -> None:
    missing = tmp_path / "nope"
    args = {**_commands(missing, tmp_path), "view": ["view", str(missing)]}[command]
    # The commands that take files too say so.
    what = "no such directory" if command in ("view", "compact") else "no such file or directory"
    assert mcc(*args) == (1, "", f"mcc {command}: error: {missing}: {what}\n")


@pytest.mark.parametrize(
    ("args", "code", "err"),
    [
        (["stats"], 2, "mcc stats: error: Missing argument 'PATH...'. (see 'mcc stats --help')\n"),
        (["nope"], 2, "mcc: error: No such command 'nope'. (see 'mcc --help')\n"),
        (["--nope"], 2, "mcc: error: No such option '--nope'. (see 'mcc --help')\n"),
        (["compact"], 2, "mcc compact: error: Missing argument 'DIRECTORY'. (see 'mcc compact --help')\n"),
        (["stats", str(SAMPLE.parent), "--jobs", "x"], 2, "mcc stats: error: Invalid value for '--jobs' / '-j': 'x' is not a valid integer range. (see 'mcc stats --help')\n"),
        (["export", str(SAMPLE.parent), "--format", "otlp"], 1, "mcc export: error: --format otlp needs --endpoint URL\n"),
    ],
)  # fmt: skip
def test_usage_errors_and_other_errors_have_one_shape(
    args: list[str], code: int, err: str, mcc: Run
) -> None:
    assert mcc(*args) == (code, "", err)


def test_python_dash_m_of_the_package_is_the_command(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "model_call_capture", "stats", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (run.returncode, run.stdout, run.stderr) == (
        1,
        "",
        f"mcc stats: error: {tmp_path / 'nope'}: no such file or directory\n",
    )


def test_stats_reads_on_past_a_rollout_with_a_line_of_a_newer_format(
    tmp_path: Path, mcc: Run
) -> None:
    """As the viewer does: the calls before the line are counted, the line is named
    (file and line), the other rollouts are read, and the exit code (2) tells."""
    good = SAMPLE.read_bytes().splitlines()
    newer = b'{"format":"model-call-capture/2","model_call_id":"x"}'
    (tmp_path / "a.capture.jsonl").write_bytes(b"\n".join([good[0], newer, good[1], b""]))
    (tmp_path / "b.capture.jsonl").write_bytes(b"\n".join([*good, b""]))
    for args in ([], ["--json"]):
        code, out, err = mcc("stats", str(tmp_path), *args)
        assert code == 2, err
        assert err.startswith(
            f"mcc stats: warning: rollout a read up to capture line in "
            f"{tmp_path / 'a.capture.jsonl'}, line 2 has format 'model-call-capture/2', newer "
            "than this reader"
        ), err
        if args:
            assert sum(row["calls"] for row in json.loads(out)["rows"]) == 1 + len(good)
        else:
            assert out.startswith(f"{1 + len(good)} calls in 2 rollouts")


def test_stats_json_carries_its_notes_with_file_and_line(tmp_path: Path, mcc: Run) -> None:
    """`--json` holds what stderr says: a damaged line and a line of a newer format, each
    with its rollout, file and line from 1 (blank lines counted), beside the rows."""
    good = SAMPLE.read_bytes().splitlines()
    newer = b'{"format":"model-call-capture/2","model_call_id":"x"}'
    damaged_file = tmp_path / "a.capture.jsonl"
    damaged_file.write_bytes(b"\n".join([good[0], b"", b'{"model_call_id": 7', good[1], b""]))
    newer_file = tmp_path / "b.capture.jsonl"
    newer_file.write_bytes(b"\n".join([good[0], good[1], newer, good[2], b""]))
    code, out, err = mcc("stats", str(tmp_path), "--json")
    assert code == 2, err
    result = json.loads(out)
    assert sorted(result) == ["notes", "rows"]
    assert sum(row["calls"] for row in result["rows"]) == 2 + 2
    notes = result["notes"]
    assert [(n["kind"], n["rollout"], n["file"], n["line"]) for n in notes] == [
        ("damaged", "a", str(damaged_file), 3),
        ("newer", "b", str(newer_file), 3),
    ]
    assert all(n["message"] for n in notes)
    assert "model-call-capture/2" in notes[1]["message"]
    assert "1 unreadable line skipped" in err and "warning: rollout b read up to" in err
    code, out, _ = mcc("stats", str(tmp_path / "a.capture.jsonl"), "--json")
    assert code == 0 and [n["line"] for n in json.loads(out)["notes"]] == [3]
    (tmp_path / "a.capture.jsonl").unlink()
    (tmp_path / "b.capture.jsonl").write_bytes(b"\n".join([*good, b""]))
    code, out, _ = mcc("stats", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["notes"] == []


def test_stats_json_names_the_segment_that_holds_a_damaged_line(tmp_path: Path, mcc: Run) -> None:
    """A rollout of a shared file and a segment is read merged: the note names the file
    the damaged line is in, and its line there."""
    good = SAMPLE.read_bytes().splitlines()
    (tmp_path / "r.capture.jsonl").write_bytes(b"\n".join([good[0], good[1], b""]))
    segment = tmp_path / "r.capture.segments" / "h.1.abc.jsonl"
    segment.parent.mkdir()
    segment.write_bytes(b"\n".join([b'{"torn', good[2], good[3], b""]))
    code, out, err = mcc("stats", str(tmp_path), "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert [(n["kind"], n["rollout"], n["file"], n["line"]) for n in notes] == [
        ("damaged", "r", str(segment), 1)
    ]


def test_show_and_the_viewer_name_a_damaged_line_as_validate_and_editors_do(
    tmp_path: Path, mcc: Run
) -> None:
    """Line numbers from 1, blank lines counted: the damaged line is the fourth."""
    from model_call_capture.store import CaptureStore
    from model_call_capture.viewer import Entries
    from model_call_capture.viewer._entries import DamagedLine

    good = SAMPLE.read_bytes().splitlines()
    path = tmp_path / "r.capture.jsonl"
    path.write_bytes(b"\n".join([good[0], b"", good[1], b'{"model_call_id": 7}', good[2], b""]))
    code, out, _ = mcc("validate", str(path))
    assert code == 1 and out.startswith(f"{path}:4: ")
    code, out, err = mcc("show", str(tmp_path), "r")
    assert code == 0 and "line 4: damaged: " in out and "1 unreadable line" in err
    store = CaptureStore(tmp_path)
    damaged = [e for e in Entries(store.rollout("r")) if isinstance(e, DamagedLine)]
    assert [d.line for d in damaged] == [4]


def test_show_shows_a_rollout_up_to_a_line_of_a_newer_format_and_names_it(
    tmp_path: Path, mcc: Run
) -> None:
    good = SAMPLE.read_bytes().splitlines()
    newer = b'{"format":"model-call-capture/2","model_call_id":"x"}'
    (tmp_path / "a.capture.jsonl").write_bytes(b"\n".join([good[0], good[1], newer, b""]))
    code, out, err = mcc("show", str(tmp_path), "a", "--payloads")
    assert code == 2, err
    assert out.startswith("rollout a: 2 calls") and "line 3: damaged: capture line in" in out
    assert (
        f"mcc show: warning: rollout a read up to capture line in {tmp_path / 'a.capture.jsonl'}"
        ", line 3 has format 'model-call-capture/2', newer than this reader"
    ) in " ".join(err.split())


# -- an early Ctrl-C -------------------------------------------------------------------


def _entry_points(tmp_path: Path) -> dict[str, list[str]]:
    # The script pip writes for `mcc` (console_scripts), run by this interpreter.
    script = tmp_path / "bin" / "mcc"
    script.parent.mkdir()
    script.write_text(
        "import re\nimport sys\nfrom model_call_capture.cli import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n"
    )
    return {
        "script": [str(script)],
        "-m cli": ["-m", "model_call_capture.cli"],
        "-m package": ["-m", "model_call_capture"],
    }


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file `mcc validate` takes seconds over: 20,000 lines that are not capture lines,
    each explained (the JSON Schema run on it) and printed."""
    path = tmp_path_factory.mktemp("big") / "r.capture.jsonl"
    path.write_bytes(b'{"a": 1}\n' * 20_000)
    return path


# When the signal is sent: once a module's import ends (`-X importtime` reports each as it
# ends; the first of this package's is the moment its own code runs), then after a delay.
_MOMENTS = {
    "first module": ("model_call_capture.", 0.0),
    "first module + 50 ms": ("model_call_capture.", 0.05),
    "first module + 100 ms": ("model_call_capture.", 0.1),
    "records": ("model_call_capture.records", 0.0),
    "package": ("model_call_capture", 0.0),
    "cli": ("model_call_capture.cli", 0.0),
}


@pytest.mark.parametrize("entry", ["script", "-m cli", "-m package"])
@pytest.mark.parametrize("moment", list(_MOMENTS))
def test_ctrl_c_while_mcc_starts_is_one_line_and_130_without_a_traceback(
    entry: str, moment: str, tmp_path: Path, big_file: Path
) -> None:
    """SIGINT sent while the command imports its modules, before `main()` runs.

    The interpreter's own start before this package's first module (its `site` module) is
    Python's to report. The command validates a large file in its own process, so it is
    still running whenever the signal lands, and a late one lands in `main()`.
    """
    marker, delay = _MOMENTS[moment]
    command = [sys.executable, "-X", "importtime", *_entry_points(tmp_path)[entry]]
    seen = []
    with subprocess.Popen(
        [*command, "validate", "--jobs", "1", str(big_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        try:
            for line in proc.stderr:
                seen.append(line)
                name = line.rpartition("|")[2].strip()  # import time: us | us | name
                if name == marker or (marker.endswith(".") and name.startswith(marker)):
                    break
            time.sleep(delay)
            proc.send_signal(signal.SIGINT)
            rest = proc.stderr.read()
            code = proc.wait(timeout=60)
        finally:
            proc.kill()
    err = "".join(seen) + rest
    said = [line for line in err.splitlines() if line and not line.startswith("import time:")]
    assert "Traceback" not in err, said
    assert (code, said[-1:]) == (130, ["mcc: interrupted"]), said
