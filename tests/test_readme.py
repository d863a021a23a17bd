"""The README opens with the two set-up commands, and CI runs the second one."""

from __future__ import annotations

import re

from conftest import REPO


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
