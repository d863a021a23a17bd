"""Make `captures/`: real captures of Responses calls that NeMo Gym's ATIF export accepts.

The demo's scripted model server behind the capture middleware on a real uvicorn server,
called by the openai SDK: each rollout is one call whose input is a list of messages (Gym
exports only conversations of Responses items, one agent answer per call). Run from the
repository root:

    PYTHONPATH=src:tests python tests/data/atif/make_captures.py
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import openai

from model_call_capture import CaptureConfig, install_model_call_capture
from model_call_capture.demo.model_server import create_app
from servers import serve

HERE = Path(__file__).parent / "captures"


def main() -> None:
    shutil.rmtree(HERE, ignore_errors=True)
    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=str(HERE.resolve()))
    app = install_model_call_capture(create_app(), config, model_server_name="demo-model")
    with serve(app) as server:
        for rollout, stream in (("0-0", False), ("1-0", True), ("1-1", False)):
            client = openai.OpenAI(
                base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="unused"
            )
            kwargs: dict[str, Any] = {
                "model": "demo-gpt",
                "input": [{"role": "user", "content": f"Say hello ({rollout})."}],
                "extra_headers": {"x-mcc-scenario": "text"},
            }
            if stream:
                with client.responses.stream(**kwargs) as events:
                    events.until_done()
            else:
                client.responses.create(**kwargs)


if __name__ == "__main__":
    main()
