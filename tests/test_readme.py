"""What the README and the docs tell a user to type: the set-up commands (CI runs the
second one), every `mcc` option (each on docs/cli.md with its default, and each one a
page names an option of its command), and the README's Python blocks, run as written.

docs/engines.md's blocks run in tests/test_engines.py.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import openai
import pytest

from conftest import REPO
from model_call_capture.cli import cli
from servers import serve

CLI_PAGE = REPO / "docs" / "cli.md"
# The pages a user reads; the performance pages quote past runs' command lines.
USER_PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
USER_PAGES = [p for p in USER_PAGES if not p.name.startswith("performance")]


def _fenced_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)


def test_readme_opens_with_demo_and_test_commands() -> None:
    first, second = _fenced_commands()[:2]
    assert first.startswith("python3 -m venv .venv && ") and first.endswith("mcc demo")
    assert second.startswith("python3 -m venv .venv && ") and second.endswith("-m pytest")
    assert "'.[dev]'" in second


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    pattern = re.search(r'grep -m1 -E "(.*?)" README.md', ci)
    assert pattern is not None
    second = _fenced_commands()[1]
    assert re.search(pattern.group(1), second)


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    commands = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    return {name: command for name, command in commands.items() if command is not None}


def _options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and p.name != "help"]


def _section(name: str) -> str:
    text = CLI_PAGE.read_text(encoding="utf-8")
    found = re.search(rf"^## `mcc {name}\b.*?(?=^## |\Z)", text, flags=re.S | re.M)
    assert found is not None, f"docs/cli.md has no section for mcc {name}"
    return found.group()


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_option_is_on_the_cli_page_with_its_default(name: str) -> None:
    section = _section(name)
    rows = [line for line in section.splitlines() if line.startswith("| `-")]
    for option in _options(_commands()[name]):
        for opt in [*option.opts, *option.secondary_opts]:
            row = [r for r in rows if re.search(rf"`{re.escape(opt)}[ `]", r.split("|")[1])]
            assert len(row) == 1, f"mcc {name} {opt}: {len(row)} rows on docs/cli.md"
        shown = option.show_default and option.default is not None and not option.is_flag
        if shown:
            assert f"`{option.default}`" in row[0], f"mcc {name} {option.opts}: default"
    documented = set(re.findall(r"`(--?[a-z][a-z-]*)", "\n".join(r.split("|")[1] for r in rows)))
    actual = {
        o for option in _options(_commands()[name]) for o in option.opts + option.secondary_opts
    }
    assert documented <= actual, f"mcc {name}: the page names options it does not have"


def test_every_option_a_page_names_exists() -> None:
    commands = _commands()
    options = {
        name: {o for p in _options(c) for o in p.opts + p.secondary_opts}
        for name, c in commands.items()
    }
    wrong = []
    for page in USER_PAGES:
        text = page.read_text(encoding="utf-8")
        # `mcc CMD ...` in code spans and in the lines of code blocks, up to a comment.
        for name, rest in re.findall(r"\bmcc ([a-z]+)((?: [^`\n#|]*)?)", text):
            if name not in commands:
                continue
            for flag in re.findall(r"(?<![\w-])--?[a-z][a-z-]*", rest):
                if flag not in options[name] | {"-h", "--help"}:
                    wrong.append(f"{page.name}: mcc {name} {flag}")
    assert wrong == []


def _python_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def _block(needle: str) -> str:
    """The README's one Python block that holds `needle`."""
    (block,) = [code for code in _python_blocks() if needle in code]
    return block


def test_readme_server_snippets_capture_a_call_that_the_reading_snippets_read_back(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The FastAPI, execution, redaction, SDK and reading blocks, run in order as written.

    Only `/data/model-calls` becomes a temporary directory, and the SDK's address the
    real uvicorn server's.
    """
    captures = tmp_path / "model-calls"
    server_code = "\n".join(
        _block(needle).replace("/data/model-calls", str(captures))
        for needle in ("app = FastAPI()", "start_model_execution(request", "redact=Redactor(")
    )
    namespace: dict[str, Any] = {}
    exec(compile(server_code, "README.md", "exec"), namespace)
    with serve(namespace["app"]) as server:
        clients: dict[str, Any] = {}
        exec(_block("Anthropic(base_url=").replace("http://127.0.0.1:8000", server.url), clients)
        with pytest.raises(openai.BadRequestError) as refused:
            clients["openai"].with_options(max_retries=0).responses.create(model="m", input="hi")
    assert refused.value.status_code == 400

    reading: dict[str, Any] = {}
    exec(
        _block("aggregate_model_call_metrics(store").replace("/data/model-calls", str(captures)),
        reading,
    )
    # call_index, dialect, model, tokens in and out, finish reason, tool names, TTFT: the
    # handler reads no body (the README says so), so no model is known.
    printed = capsys.readouterr().out.split()
    assert printed[:7] == ["0", "responses", "None", "None", "None", "None", "[]"]
    assert float(printed[7]) > 0
    assert reading["totals"].num_calls == 1
    assert reading["totals"].error_categories == {"context_length_exceeded": 1}

    raw: dict[str, Any] = {
        "raw_line_bytes": (captures / "17-0.capture.jsonl").read_bytes().splitlines()[0]
    }
    exec(_block("raw_line_bytes, type=CaptureLine"), raw)
    line, record = raw["line"], raw["record"]
    assert (line.request, line.status_code, line.response_source) == (None, 400, "local")
    assert (line.upstream_attempted, line.local_response_reason) == (
        False,
        "context_length_exceeded",
    )
    assert [gap.code for gap in line.gaps] == ["request_unread"]  # the README says why
    assert (record.call_index, record.error_category) == (0, "context_length_exceeded")


def test_readme_correlation_snippet_prefixes_the_base_url(tmp_path: Path) -> None:
    """The run config of the README's YAML block, then its correlation block as written."""
    (yaml_block,) = re.findall(
        r"^```yaml\n(.*?)^```$", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S | re.M
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml_block, encoding="utf-8")
    code = _block("RolloutCorrelation.from_config").replace("/etc/run/config.yaml", str(config))
    namespace: dict[str, Any] = {"run_body": {"_ng_task_index": 17, "_ng_rollout_index": 0}}
    exec(code, namespace)
    # The block's own comment says what it gives.
    assert namespace["base_url"] == "http://127.0.0.1:8000/ng-rollout/17-0/v1"


def test_readme_token_snippet_prints_each_trajectory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The token-trajectory block as written, on a real `mcc demo --tokens` directory."""
    demo = tmp_path / "demo"
    command = [sys.executable, "-m", "model_call_capture.cli", "demo", "--tokens"]
    run = subprocess.run(
        [*command, "--rollouts", "1", "--dir", str(demo)], capture_output=True, timeout=240
    )
    assert run.returncode == 0, run.stderr
    captures = demo / "model-calls"
    code = _block("build_token_trajectories(records").replace("/data/model-calls", str(captures))
    exec(code.replace('"17-0"', '"0-0"'), {})
    # The oracle: the capture lines themselves, read with the standard library. The demo's
    # calls chain into one trajectory: the last call's prompt and generated ids, with every
    # call's generated ids in the loss mask.
    lines = [json.loads(line) for line in (captures / "0-0.capture.jsonl").read_text().splitlines()]
    generated = [len(line["response"]["choices"][0]["token_ids"]) for line in lines]
    last = lines[-1]["response"]
    tokens = len(last["prompt_token_ids"]) + generated[-1]
    assert capsys.readouterr().out == f"{tokens} {sum(generated)} []\n"


# The README's first install (`pip install .`) has no pyarrow: what it shows next must work there.
_FIRST_INSTALL = (
    "import sys; sys.modules['pyarrow'] = None\n"  # its import fails, as uninstalled
    "from model_call_capture.cli import main; main(sys.argv[1:])"
)


def _first_install_mcc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _FIRST_INSTALL, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_the_readme_export_example_works_from_the_first_install(tmp_path: Path) -> None:
    demo = _first_install_mcc("demo", "--rollouts", "1", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = re.search(r"`mcc export DIR ([^`]*)`", text)
    assert first is not None
    export = _first_install_mcc("export", "mcc-demo", *first.group(1).split(), cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert export.stdout.startswith("wrote 6 calls to ")


def test_the_demo_names_an_export_that_works_where_it_ran(tmp_path: Path) -> None:
    demo = _first_install_mcc("demo", "--tokens", "--rollouts", "1", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    (line,) = [x for x in demo.stdout.splitlines() if x.startswith("export:")]
    command = line.removeprefix("export:").split()
    assert command[:2] == ["mcc", "export"]
    export = _first_install_mcc(*command[1:], cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert export.stdout.startswith("wrote 1 token trajectories to trajectories.jsonl")


def test_git_ignores_the_directory_the_readme_demo_leaves() -> None:
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "mcc-demo/" in ignored or "/mcc-demo/" in ignored
