"""What the README and the docs tell a user to type: the set-up commands (CI runs the
second one), and every `mcc` option, each on docs/cli.md with its default and each one a
page names an option of its command."""

from __future__ import annotations

import re

import click
import pytest

from conftest import REPO
from model_call_capture.cli import cli

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
