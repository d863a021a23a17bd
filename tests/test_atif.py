"""`mcc export --format atif`: ATIF-v1.7 trajectories, validated by nvidia-nat-atif and
compared with NeMo Gym 0.7.0's own export of the same captures."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
from nat.atif import Trajectory
from pydantic import ValidationError

from model_call_capture import CaptureStore
from model_call_capture.atif import rollout_to_atif
from model_call_capture.errors import AtifMappingError
from model_call_capture.records import read_model_call_records

DATA = Path(__file__).parent / "data" / "atif"


def _export(directory: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "model_call_capture.cli", "export", str(directory)]
    command += ["--format", "atif", "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def demo_atif(demo_calls: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("atif") / "out"
    run = _export(demo_calls, out, "--agent-name", "demo-agent", "--agent-version", "1.0")
    return out, run.stdout + run.stderr + f"\nrc={run.returncode}"


def test_every_exported_file_validates_with_nat_atif(demo_atif: tuple[Path, str]) -> None:
    out, _ = demo_atif
    files = sorted(out.glob("*.json"))
    assert files
    for path in files:
        trajectory = Trajectory.model_validate_json(path.read_bytes())
        assert trajectory.schema_version == "ATIF-v1.7"
        assert trajectory.agent.name == "demo-agent"


def test_manifest_names_every_file_with_its_sha256(demo_atif: tuple[Path, str]) -> None:
    out, _ = demo_atif
    entries = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert sorted(e["trajectory_path"] for e in entries) == sorted(
        p.name for p in out.glob("*.json")
    )
    for entry in entries:
        assert list(entry) == sorted(entry)  # as Gym writes it
        data = (out / entry["trajectory_path"]).read_bytes()
        assert entry["expected_sha256"] == sha256(data).hexdigest()
        task, rollout = entry["trajectory_path"].removesuffix(".json").split("-")
        assert (entry["_ng_task_index"], entry["_ng_rollout_index"]) == (int(task), int(rollout))


def test_an_unmappable_rollout_is_reported_and_the_exit_code_says_so(
    demo_atif: tuple[Path, str],
) -> None:
    out, output = demo_atif
    # The demo's rollout 3-0 starts with a call the server refused (429).
    assert "skipped 3-0: call 0" in output and "failed (rate_limit)" in output
    assert output.endswith("rc=2")
    assert not (out / "3-0.json").exists() and (out / "0-0.json").exists()


def test_an_existing_out_is_refused(tmp_path: Path, demo_calls: Path) -> None:
    (tmp_path / "out").mkdir()
    run = _export(demo_calls, tmp_path / "out")
    assert run.returncode == 1 and "exists" in run.stderr


def _normalized(value: Any) -> Any:
    """A message that is a list of one text part is that text (ATIF: a string is text-only
    content); Gym keeps a Responses message's part list, this library writes the string."""
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], dict) and set(value[0]) == {"type", "text"}:
            return value[0]["text"]
        return [_normalized(v) for v in value]
    return value


def _without_extra(value: Any) -> Any:
    """Every field but `extra`, the namespaced provenance each exporter writes for itself
    (`extra.nemo_gym` there, `extra.model_call_capture` here)."""
    if isinstance(value, dict):
        return {k: _without_extra(v) for k, v in value.items() if k != "extra"}
    if isinstance(value, list):
        return [_without_extra(v) for v in value]
    return value


def _fields(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_fields(item, f"{prefix}.{key}" if prefix else key))
        return out
    if isinstance(value, list) and value and isinstance(value[0], dict):
        out = {}
        for index, item in enumerate(value):
            out.update(_fields(item, f"{prefix}[{index}]"))
        return out
    return {prefix: value}


def test_agrees_with_nemo_gym_on_every_field_gym_writes(tmp_path: Path) -> None:
    captures = tmp_path / "captures"
    shutil.copytree(DATA / "captures", captures)
    out = tmp_path / "out"
    run = _export(
        captures,
        out,
        "--session-id",
        "golden-session",
        "--agent-name",
        "demo-agent",
        "--agent-version",
        "0.1.0",
    )
    assert run.returncode == 0, run.stderr
    goldens = sorted((DATA / "gym").glob("*.json"))
    assert [p.name for p in goldens] == sorted(p.name for p in out.glob("*.json"))
    for golden in goldens:
        gym = _fields(_normalized(_without_extra(json.loads(golden.read_text()))))
        ours = _fields(_normalized(json.loads((out / golden.name).read_text())))
        assert {k: ours.get(k) for k in gym} == gym, golden.name
        # What this library adds is only the documented superset.
        added = {k.split(".")[-1] for k in set(ours) - set(gym)}
        assert added <= {
            "model_call_capture",
            "rollout_id",
            "calls",
            "model_call_id",
            "call_index",
            "response_id",
            "dialect",
            "finish_reason",
        } | {k.split(".")[-1] for k in ours if ".extra." in k}, added


def _records(directory: Path, rollout_id: str) -> list[Any]:
    return read_model_call_records(CaptureStore(directory), rollout_id)


def _mapped(demo_calls: Path, rollout_id: str = "0-0") -> dict[str, Any]:
    return rollout_to_atif(
        _records(demo_calls, rollout_id),
        rollout_id=rollout_id,
        session_id="s",
        agent_name="a",
        agent_version="1",
    )


def test_token_ids_and_logprobs_go_into_step_metrics(tmp_path: Path) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "model_call_capture.cli",
            "demo",
            "--tokens",
            "--rollouts",
            "1",
            "--dir",
            str(tmp_path / "d"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    calls = tmp_path / "d" / "model-calls"
    records = _records(calls, "0-0")
    trajectory = _mapped(calls)
    agent = [s for s in trajectory["steps"] if s["source"] == "agent"]
    assert len(agent) == len(records)
    for step, record in zip(agent, records, strict=True):
        assert step["metrics"]["prompt_token_ids"] == record.prompt_token_ids
        assert step["metrics"]["completion_token_ids"] == record.generation_token_ids
        assert step["metrics"]["logprobs"] == record.generation_log_probs
    Trajectory.model_validate(trajectory)


def test_tool_results_become_the_observation_of_the_step_that_called(demo_calls: Path) -> None:
    trajectory = _mapped(demo_calls)
    calling = [s for s in trajectory["steps"] if s.get("tool_calls")]
    assert calling
    for step in calling:
        ids = {c["tool_call_id"] for c in step["tool_calls"]}
        results = step["observation"]["results"]
        assert {r["source_call_id"] for r in results} <= ids and results
    assert [s["step_id"] for s in trajectory["steps"]] == list(
        range(1, len(trajectory["steps"]) + 1)
    )


def test_a_tool_result_answering_no_call_is_refused(demo_calls: Path) -> None:
    records = _records(demo_calls, "0-0")
    records[1].request["messages"][2]["tool_call_id"] = "call_nobody"
    with pytest.raises(AtifMappingError, match="answers no tool call"):
        rollout_to_atif(
            records, rollout_id="0-0", session_id="s", agent_name="a", agent_version="1"
        )


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda t: t["steps"][1].update(step_id=5), "sequential from 1"),
        (lambda t: t["steps"][0].update(model_name="m"), "only applicable when source is 'agent'"),
        (
            lambda t: next(s for s in t["steps"] if s.get("observation"))["observation"]["results"][
                0
            ].update(source_call_id="call_other"),
            "not found in step",
        ),
    ],
    ids=["step-ids", "agent-only-field", "tool-call-reference"],
)
def test_harbor_rules_reject_a_broken_trajectory(
    demo_calls: Path, break_it: Any, message: str
) -> None:
    trajectory = _mapped(demo_calls)
    Trajectory.model_validate(trajectory)  # as exported: valid
    break_it(trajectory)
    with pytest.raises(ValidationError, match=message):
        Trajectory.model_validate(trajectory)


def _completion_line(prompt: str, text: str, index: int) -> Any:
    from model_call_capture import build_model_call_record
    from model_call_capture.contracts import CaptureLine

    line = CaptureLine(
        model_call_id=f"cc-{index}",
        dialect="completions",
        started_at=1_800_000_000.0 + index,
        completed_at=1_800_000_000.5 + index,
        status_code=200,
        request={"model": "base", "prompt": prompt},
        response={
            "id": f"cmpl-{index}",
            "object": "text_completion",
            "model": "base",
            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        },
    )
    return build_model_call_record(line, index)


def test_completion_prompts_add_only_what_is_new_to_the_conversation() -> None:
    records = [
        _completion_line("Q: hi\nA:", " Hello.", 0),
        _completion_line("Q: hi\nA: Hello.\nQ: more\nA:", " Sure.", 1),
    ]
    trajectory = rollout_to_atif(
        records, rollout_id="c", session_id="s", agent_name="a", agent_version="1"
    )
    assert [(s["source"], s["message"]) for s in trajectory["steps"]] == [
        ("user", "Q: hi\nA:"),
        ("agent", " Hello."),
        ("user", "\nQ: more\nA:"),
        ("agent", " Sure."),
    ]
    Trajectory.model_validate(trajectory)


def test_token_in_token_out_completions_keep_their_ids(completions_rollout: Any) -> None:
    store = CaptureStore(completions_rollout.directory)
    records = read_model_call_records(store, completions_rollout.rollout_id)
    trajectory = rollout_to_atif(
        records,
        rollout_id=completions_rollout.rollout_id,
        session_id="s",
        agent_name="a",
        agent_version="1",
    )
    steps = trajectory["steps"]
    assert [s["source"] for s in steps] == ["agent"] * len(completions_rollout.seen)
    for step, (prompt, generated, log_probs) in zip(steps, completions_rollout.seen, strict=True):
        assert step["metrics"]["prompt_token_ids"] == prompt
        assert step["metrics"]["completion_token_ids"] == generated
        assert step["metrics"]["logprobs"] == pytest.approx(log_probs)
    Trajectory.model_validate(trajectory)
