"""Make `gym/`: NeMo Gym 0.7.0's own ATIF export of `captures/` (the differential test's goldens).

Runs in a Python where `nemo-gym==0.7.0` is installed (it needs Python >= 3.13.14; its
ATIF path runs on 3.13.0 with `pip install --ignore-requires-python`). Every step is
Gym's code: `merge_model_call_capture_into_record` reads the capture files with Gym's own
reader and joins the agent's observations, `_attach_trajectory_record` projects
`ng_trajectory` as Gym's rollout collection does, and `gym_rollout_to_atif` maps it. The
only input made here is what an agent reports to Gym (`ng_agent_observations`: one
invocation whose conversation is the call's input and output, as the agent saw it).
From the repository root:

    /path/to/gym-venv/bin/python tests/data/atif/make_gym_goldens.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import nemo_gym
from nemo_gym.atif_export import gym_rollout_to_atif
from nemo_gym.base_responses_api_model import merge_model_call_capture_into_record
from nemo_gym.rollout_collection import _attach_trajectory_record

HERE = Path(__file__).parent
CAPTURES = HERE / "captures"
OUT = HERE / "gym"
SESSION_ID = "golden-session"
AGENT_VERSION = "0.1.0"
AGENT_NAME = "demo-agent"


def _row(path: Path) -> dict[str, Any]:
    line = json.loads(path.read_text().splitlines()[0])
    task, rollout = (int(n) for n in path.name.removesuffix(".capture.jsonl").split("-"))
    conversation = [{"type": "message", **item} for item in line["request"]["input"]]
    conversation += line["response"]["output"]
    invocation = {
        "kind": "agent_invocation",
        "invocation_id": f"inv-{task}-{rollout}",
        "status": "completed",
        "model_calls": [{"model_call_id": line["model_call_id"]}],
        "conversation": conversation,
    }
    return {
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "agent_ref": {"type": "responses_api_agents", "name": AGENT_NAME},
        "ng_agent_observations": {"source": "demo", "records": [invocation]},
    }


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    for path in sorted(CAPTURES.glob("*.capture.jsonl")):
        row = _row(path)
        result = dict(row)
        merge_model_call_capture_into_record(result, [CAPTURES], include_payloads=True)
        _attach_trajectory_record(row, result)
        trajectory = gym_rollout_to_atif(result, session_id=SESSION_ID, agent_version=AGENT_VERSION)
        name = path.name.removesuffix(".capture.jsonl") + ".json"
        text = trajectory.model_dump_json(indent=2, exclude_none=True) + "\n"
        (OUT / name).write_text(text)
    print(
        f"nemo-gym {nemo_gym.__version__ if hasattr(nemo_gym, '__version__') else ''}: wrote {OUT}"
    )


if __name__ == "__main__":
    main()
