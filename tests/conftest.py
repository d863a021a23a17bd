"""Shared fixtures: where the recorded data lives, JSON snapshots, and the session setup.

The recorded corpus and NeMo Gym's reference files live in `../shared` beside the repository
(or in `$MCC_SHARED_DIR`). A clone without them uses the small sample vendored in
`tests/data/` instead (provenance and licences in tests/data/corpus/README.md): tests
parametrized over the data run over the sample, figures that count the whole data are checked
only on it (`FULL_CORPUS`, `FULL_GYM_REFERENCE`), and tests that check nothing but such figures
skip with `needs_full_corpus` / `needs_full_gym_reference`, which say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from hypothesis import strategies as st
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from model_call_capture.dialects import get_dialect
from model_call_capture.dialects.base import Derived, decode_view
from model_call_capture.dialects.chat import _derive as chat_derive
from model_call_capture.dialects.completions import _derive as completions_derive

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MCC_SHARED_DIR", REPO.parent / "shared"))
SAMPLES = REPO / "tests" / "data"


def _shared_or_sample(name: str) -> tuple[Path, bool]:
    """`../shared/<name>` and True when it is there, else the vendored sample and False."""
    whole = SHARED / name
    return (whole, True) if whole.is_dir() else (SAMPLES / name, False)


CORPUS, FULL_CORPUS = _shared_or_sample("corpus")
"""Recorded streams and JSON bodies of the three dialects: the whole corpus, or the sample."""
GYM_REFERENCE, FULL_GYM_REFERENCE = _shared_or_sample("gym-reference")
"""Capture files NeMo Gym 0.7.0 wrote, with what it derived: all of them, or the sample."""

needs_full_corpus = pytest.mark.skipif(
    not FULL_CORPUS,
    reason=f"counts over the whole recorded corpus, not found at {SHARED / 'corpus'} "
    "(the sample in tests/data/corpus runs the other corpus tests)",
)
needs_full_gym_reference = pytest.mark.skipif(
    not FULL_GYM_REFERENCE,
    reason=f"needs every NeMo Gym reference file, not found at {SHARED / 'gym-reference'} "
    "(the sample in tests/data/gym-reference runs the other Gym tests)",
)


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


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The recorded corpus (`../shared/corpus`, or the sample in tests/data/corpus)."""
    return CORPUS


@pytest.fixture(scope="session")
def gym_reference_dir() -> Path:
    """NeMo Gym 0.7.0's capture files (`../shared/gym-reference`, or the sample)."""
    return GYM_REFERENCE


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """Syrupy snapshots stored as JSON files, one per test."""
    return snapshot.use_extension(JSONSnapshotExtension)


def pytest_configure(config: pytest.Config) -> None:
    """On the sample data, report the snapshots it does not use without failing the run."""
    if not (FULL_CORPUS and FULL_GYM_REFERENCE):
        # The snapshots of streams and Gym files outside the sample are not used on this run:
        # warn instead of failing, and never delete them (even under --snapshot-update).
        # With ../shared present an unused snapshot still fails the run.
        config.option.warn_unused_snapshots = True
        config.option.no_cleanup = True


@pytest.hookimpl(trylast=True)  # after Hypothesis's plugin has finished initializing
def pytest_sessionstart(session: pytest.Session) -> None:
    """Build Hypothesis's Unicode tables before the first test draws text."""
    # Hypothesis builds its table of UTF-8 encodable characters the first time a test draws
    # text, which takes seconds on a clone without a .hypothesis/ cache; inside a test that
    # time counts as drawing its first inputs and trips the too_slow health check.
    st.text().validate()


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

    chat's and completions' `derive` turn any exception into a record with only the model
    (a record must survive a bug); a "never raises" test of them could not fail, so it
    calls the function inside that net, on the same view. The other dialects have no net:
    their `derive` is called as it is.
    """
    inner: Any = {"chat": chat_derive, "completions": completions_derive}.get(dialect)
    if inner is not None:
        view = decode_view(response, inner._response_view) or inner._ResponseView()
        derived: Derived = inner._derive(request, view)
        return derived
    return get_dialect(dialect).derive(request, response)


@pytest.fixture(scope="session")
def demo_calls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The capture directory of a real `mcc demo` run (three dialects, streams, tool calls).

    Shared by the session: tests read it and write their outputs elsewhere.
    """
    root = tmp_path_factory.mktemp("demo")
    run = subprocess.run(
        [sys.executable, "-m", "model_call_capture.cli", "demo", "--dir", str(root / "d")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    return root / "d" / "model-calls"


@dataclass(frozen=True)
class CompletionsRollout:
    """A token-in/token-out rollout over the legacy Completions dialect, and what its client saw."""

    directory: Path
    """The capture directory."""
    rollout_id: str
    seen: list[tuple[list[int], list[int], list[float]]]
    """Per call, as the openai client got them: prompt ids, generated ids, generated log-probs."""


COMPLETIONS_QUESTIONS = ("What should I wear in Paris today?", "And tomorrow?", "One word?", "Why?")


@pytest.fixture(scope="session")
def completions_rollout(tmp_path_factory: pytest.TempPathFactory) -> CompletionsRollout:
    """Four calls of `POST /v1/completions` as an RL stack makes them (vLLM's
    `return_token_ids`, `logprobs: 1`): each prompt is the previous prompt's ids, the
    generated ids, then the next question's; JSON and streamed in turn, the third with
    `echo`. The real openai SDK through the middleware on uvicorn, against the demo server.
    """
    from model_call_capture import CaptureConfig, install_model_call_capture
    from model_call_capture.demo.model_server import create_app
    from servers import serve

    root = tmp_path_factory.mktemp("completions")
    config = CaptureConfig(observability_enabled=True, model_call_capture_dir=str(root))
    app = install_model_call_capture(create_app(), config, model_server_name="policy")
    rollout = "c-0"
    seen: list[tuple[list[int], list[int], list[float]]] = []
    vllm = {"return_token_ids": True}
    with serve(app) as server:
        client = openai.OpenAI(
            base_url=f"{server.url}/ng-rollout/{rollout}/v1", api_key="k", max_retries=0
        )
        prompt: list[int] = []
        for turn, question in enumerate(COMPLETIONS_QUESTIONS):
            prompt = prompt + list(f"Q: {question}\nA:".encode())
            ids: list[int] = []
            values: list[float] = []
            first: list[int] = []
            if turn % 2 == 0:
                reply = client.completions.create(
                    model="demo-gpt",
                    prompt=prompt,
                    logprobs=1,
                    echo=turn == 2,
                    extra_body=vllm,
                )
                choice = reply.choices[0]
                extra = choice.model_extra or {}
                first, ids = extra["prompt_token_ids"], extra["token_ids"]
                every = (choice.logprobs.token_logprobs if choice.logprobs else None) or []
                values = every[len(every) - len(ids) :]  # with echo, the prompt's come first
            else:
                for chunk in client.completions.create(
                    model="demo-gpt",
                    prompt=prompt,
                    logprobs=1,
                    stream=True,
                    stream_options={"include_usage": True},
                    extra_body=vllm,
                ):
                    for part in chunk.choices:
                        extra = part.model_extra or {}
                        first = first or extra.get("prompt_token_ids") or []
                        ids += extra["token_ids"]
                        values += (part.logprobs.token_logprobs if part.logprobs else None) or []
            seen.append((first, ids, values))
            prompt = seen[-1][0] + seen[-1][1]
        client.close()
    return CompletionsRollout(root, rollout, seen)


@pytest.fixture(scope="module")
def both_layouts(demo_calls: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`demo_calls` (each rollout in one shared file), and the same calls written in both
    layouts at once: each rollout's lines dealt, in append order, to its shared file, to a
    segment this process writes, and to a segment of another host (settled: untouched for
    two minutes). Readers must give the same calls in the same order from both."""
    from model_call_capture.store import CaptureStore

    split = tmp_path_factory.mktemp("split")
    shared, segments = CaptureStore(split, layout="shared"), CaptureStore(split, layout="segments")
    for rollout in CaptureStore(demo_calls).rollouts():
        lines = rollout.files[0].read_bytes().splitlines()
        completed = [json.loads(line)["completed_at"] for line in lines]
        assert completed == sorted(set(completed))  # the one-file order is the completion order
        other = split / f"{rollout.id}.capture.segments" / "other-host.77.0123abcd.jsonl"
        for i, line in enumerate(lines):
            if i % 3 == 0:
                shared.append(rollout.id, line)
            elif i % 3 == 1:
                segments.append(rollout.id, line)
            else:
                other.parent.mkdir(mode=0o700, exist_ok=True)
                with other.open("ab") as f:
                    f.write(line + b"\n")
        if other.exists():
            settled = time.time() - 120
            os.utime(other, (settled, settled))
    return demo_calls, split


Run = Callable[..., tuple[int, str, str]]
"""The `mcc` fixture's runner: (exit code, stdout, stderr)."""


@pytest.fixture
def mcc(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run `mcc`'s `main(argv)` in-process: (exit code, stdout, stderr), piped without COLUMNS."""
    from model_call_capture.cli import main

    monkeypatch.delenv("COLUMNS", raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        out, err = capsys.readouterr()
        code = exited.value.code
        return (code if isinstance(code, int) else 1), out, err

    return run
