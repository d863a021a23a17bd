"""The rollout page in a real browser (Debian's chromium through playwright, `mcc view` as a
subprocess): the system prompt and tools, previous/next, and search from the index page.
The browser and the watch for captured text that runs are `test_browser`'s."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from model_call_capture.store import CaptureStore

from .conftest import (
    HOSTILE_FIELD,
    HOSTILE_TOOL,
    IMG,
    SCRIPT,
    chat_line,
    mcc_view,
    rollout_row,
    write_hostile_dir,
    write_hostile_rollouts,
)
from .test_browser import Watch, _text, browser, pytestmark, watch
from .test_rollnav import NATURAL, write_ids
from .test_setup import PIRATE, _chat, write_setup_dir

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["browser", "pytestmark", "watch"]  # the fixtures and the timeout, used here

COUNTS = "() => document.querySelector('.counts').textContent"
NO_MATCH = (
    "() => (document.querySelector('#found .note') || {}).textContent?.startsWith('0 rollouts')"
)


def _open_all(watch: Watch, selector: str) -> None:
    for details in watch.page.query_selector_all(selector):
        details.evaluate("d => d.open = true")


def test_the_system_prompt_and_tools_of_each_dialect(tmp_path: Path, watch: Watch) -> None:
    root = write_setup_dir(tmp_path / "calls")
    page = watch.page
    with mcc_view(root) as url:
        page.goto(url + "rollouts/chat")
        page.wait_for_selector("#setup .system-prompt")
        assert page.is_visible("#setup")
        assert page.eval_on_selector("#setup .system-prompt", "d => d.open")  # short: open
        assert PIRATE in _text(page, "#setup .system-prompt")  # as text, never HTML
        tools = page.eval_on_selector_all(
            "#setup .tool-def > summary > b", "bs => bs.map(b => b.textContent)"
        )
        assert tools == ["get_weather", HOSTILE_TOOL]
        assert not page.is_visible("#setup .tool-def pre.args")  # schemas start collapsed
        _open_all(watch, "#setup details")
        assert '"city"' in _text(page, "#setup .tool-def pre.args")
        assert SCRIPT in _text(page, "#setup")
        page.hover("#setup .tool-def > summary > b")  # would fire an onmouseover, were there one
        # Call 1 keeps them (nothing shown); call 2 changes them, noted where it does.
        changes = page.query_selector_all("#conversation .setup-change")
        assert len(changes) == 1 and changes[0].get_attribute("data-call") == "2"
        change = _text(page, "#conversation .setup-change")
        assert "call 2: the system prompt and the tools changed" in change
        assert "Now you are a parrot." in change
        # The system prompt is not repeated as an input turn.
        roles = page.eval_on_selector_all(
            "#conversation .input > .turn > .role", "rs => rs.map(r => r.textContent)"
        )
        assert "system" not in roles
        for rollout_id, system, tool in (
            ("responses", "Answer in one line.", "lookup"),
            ("messages", "System, as blocks.", "search_docs"),
        ):
            page.goto(url + "rollouts/" + rollout_id)
            page.wait_for_selector("#setup .system-prompt")
            assert system in _text(page, "#setup .system-prompt")
            assert tool in _text(page, "#setup .tools")
        page.goto(url + "rollouts/completions")
        page.wait_for_selector("article.call")
        assert not page.is_visible("#setup")  # a prompt has no setup
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_a_long_system_prompt_starts_collapsed(tmp_path: Path, watch: Watch) -> None:
    long = "Rule. " * 400
    messages = [{"role": "system", "content": long}, {"role": "user", "content": "Hi"}]
    CaptureStore(tmp_path).append("long", _chat(messages, None, "ok", 1.7e9))
    page = watch.page
    with mcc_view(tmp_path) as url:
        page.goto(url + "rollouts/long")
        page.wait_for_selector("#setup .system-prompt")
        assert not page.eval_on_selector("#setup .system-prompt", "d => d.open")
        assert "2,400 characters" in _text(page, "#setup .system-prompt > summary")
        watch.ran_nothing()


def test_previous_and_next_follow_natural_order_by_link_and_key(
    tmp_path: Path, watch: Watch
) -> None:
    page = watch.page
    with mcc_view(write_ids(tmp_path)) as url:

        def at(rollout_id: str) -> None:
            page.wait_for_url(url + "rollouts/" + rollout_id)
            page.wait_for_function(
                "id => document.getElementById('rid').textContent === id", arg=rollout_id
            )
            page.wait_for_selector("#next-rollout[href], #prev-rollout[href]")

        page.goto(url + "rollouts/1-0")
        at("1-0")
        assert "disabled" in (page.get_attribute("#prev-rollout", "class") or "")  # the first
        assert page.get_attribute("#prev-rollout", "href") is None
        page.keyboard.press("k")  # nothing before the first: stays
        for rollout_id, key in zip(NATURAL[1:], ["j", "ArrowRight", "j", "j"], strict=True):
            page.keyboard.press(key)
            at(rollout_id)
        assert page.get_attribute("#next-rollout", "href") is None  # the last
        page.keyboard.press("j")
        page.keyboard.press("ArrowLeft")
        at("10-0")
        page.click("#prev-rollout")
        at("2-1")
        page.click("#next-rollout")
        at("10-0")
        watch.ran_nothing()


def test_the_search_box_finds_text_in_messages(demo_calls: Path, watch: Watch) -> None:
    page = watch.page
    with mcc_view(demo_calls) as url:
        page.goto(url)
        page.wait_for_selector("#rollouts tbody tr[data-id]")
        page.fill("#q", "amsterdam")
        page.wait_for_selector("#found li[data-id]")
        found = page.eval_on_selector_all("#found li[data-id]", "ls => ls.map(l => l.dataset.id)")
        assert found == ["3-0"]
        assert _text(page, "#found li mark") == "Amsterdam"
        assert "searched 4 of 4 rollouts" in _text(page, "#found .note")
        page.fill("#q", "Zanzibar")
        page.wait_for_function(NO_MATCH)
        page.fill("#q", "")
        page.wait_for_selector("#found", state="hidden")
        page.fill("#q", "AMSTERDAM")
        page.wait_for_selector("#found li[data-id='3-0'] a")
        page.click("#found li[data-id='3-0'] a")
        page.wait_for_url(url + "rollouts/3-0#call-0")
        page.wait_for_selector("#call-0")
        page.goto(url + "rollouts/3-0#call-5")  # a call far down: scrolled to once it exists
        page.wait_for_selector("#call-5")
        page.wait_for_function("() => window.scrollY > 0")
        watch.ran_nothing()


def test_a_hostile_query_and_hostile_matches_render_as_text(tmp_path: Path, watch: Watch) -> None:
    root = write_hostile_dir(tmp_path / "calls")
    page = watch.page
    with mcc_view(root) as url:
        page.goto(url)
        page.wait_for_selector("#rollouts tbody tr[data-id]")
        page.fill("#q", IMG)  # the query is itself markup, and the message holds it
        page.wait_for_selector("#found li[data-id='evil']")
        assert _text(page, "#found li mark") == IMG
        assert SCRIPT in _text(page, "#found") or IMG in _text(page, "#found")
        page.fill("#q", "(a+)+$" + "\\" * 50)
        page.wait_for_function(NO_MATCH)
        counts = page.evaluate("({imgs: document.images.length, scripts: document.scripts.length})")
        assert counts["imgs"] == 0
        watch.ran_nothing()


def test_the_count_line_answers_for_the_table_and_the_messages(
    demo_calls: Path, watch: Watch
) -> None:
    """One search box, one answer: the count says what the table matched on and how many
    rollouts hold the text in their messages (listed under "Found in messages")."""
    page = watch.page
    with mcc_view(demo_calls) as url:
        page.goto(url)
        page.wait_for_selector("#rollouts tbody tr[data-id]")
        page.fill("#q", "Amsterdam")
        page.wait_for_selector("#found li[data-id='3-0']")
        wanted = "0 of 4 rollouts by id, model or error · 1 found in messages"
        page.wait_for_function(f"() => ({COUNTS})() === {wanted!r}")
        assert _text(page, "#rollouts tbody tr.empty") == (
            "No rollout id, model or error holds this text."
        )
        page.click("#found-count")  # the count leads to the list
        assert page.url.endswith("#found")
        page.fill("#q", "3-0")  # an id: in the table, and in no message
        page.wait_for_function(
            f"() => ({COUNTS})() === '1 of 4 rollouts by id, model or error"
            " · none found in messages'"
        )
        page.fill("#q", "")
        page.wait_for_function(f"() => ({COUNTS})() === '4 of 4 rollouts'")
        assert not page.is_visible("#found-count")
        watch.ran_nothing()


def _outcome(page: Page) -> list[list[str]]:
    return [
        [str(name), str(value)]
        for name, value in page.eval_on_selector_all(
            "#outcome .field",
            "fs => fs.map(f => [f.querySelector('.name').textContent.trim(),"
            " f.querySelector('b').textContent])",
        )
    ]


def test_the_rollout_header_shows_its_reward_and_fields(tmp_path: Path, watch: Watch) -> None:
    rollouts = write_hostile_rollouts(tmp_path, 64 * 1024)
    CaptureStore(tmp_path).append("11-0", chat_line())  # its row comes later
    page = watch.page
    with mcc_view(tmp_path, "--max-line-bytes", str(64 * 1024)) as url:
        page.goto(url + "rollouts/0-0")
        page.wait_for_selector("#outcome .field")
        assert _outcome(page) == [["reward", "0.25"], ["note", "again"]]  # the later row
        page.goto(url + "rollouts/2-0")
        page.wait_for_selector("#outcome .field")
        (reward, note) = _outcome(page)
        assert reward == ["reward", "1"]
        assert note[0] == "note" and note[1].startswith(HOSTILE_FIELD)  # as text, cut
        assert len(note[1]) < 1000
        page.goto(url + "rollouts/1-0")
        page.wait_for_selector("#outcome .field")
        assert _outcome(page) == [["reward", "high"]]
        assert "warn" in (page.get_attribute("#outcome .reward", "class") or "")
        page.goto(url + "rollouts/11-0")
        page.wait_for_selector("article.call")
        assert _outcome(page) == []  # no row yet
        with rollouts.open("ab") as f:  # the collector writes the row as the rollout ends
            f.write(rollout_row(11, reward=0.5, task="late"))
        page.wait_for_selector("#outcome .field")
        assert _outcome(page) == [["reward", "0.5"], ["task", "late"]]
        counts = page.evaluate("({imgs: document.images.length, scripts: document.scripts.length})")
        assert counts == {"imgs": 0, "scripts": 2}
        watch.ran_nothing()
