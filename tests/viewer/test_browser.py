"""`mcc view` in a real browser: Debian's chromium driven by playwright (no browser download),
against `mcc view` started as a subprocess on the demo's directory and on hostile captures.

Execution of captured text is detected three ways: the captures set `window.__pwned` when
they run, an `alert`/`confirm` would open a dialog, and a script error is a page error;
each is collected and must stay empty.
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from conftest import require_capability
from model_call_capture.store import CaptureStore

from .conftest import (
    HOSTILE_ARGS,
    HOSTILE_FIELD,
    HOSTILE_MODEL,
    IMG,
    LINK,
    SCRIPT,
    chat_line,
    mcc_view,
    rollout_row,
    write_hostile_dir,
    write_hostile_rollouts,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Dialog, Page

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_capability(
        "Debian's chromium and the playwright package",
        CHROMIUM is not None and importlib.util.find_spec("playwright") is not None,
        "apt-get install chromium; pip install -e '.[dev]' (.ci/run does both)",
    )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


class Watch:
    """A page, and everything on it that would show captured text ran."""

    def __init__(self, browser: Browser) -> None:
        self.page: Page = browser.new_page(viewport={"width": 1300, "height": 900})
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("console", self._console)

    def _dialog(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":  # a CSP violation is reported here too
            self.errors.append(message.text)

    def ran_nothing(self) -> None:
        assert self.page.evaluate("window.__pwned") is None
        assert (self.dialogs, self.errors) == ([], [])


@pytest.fixture
def watch(browser: Browser) -> Iterator[Watch]:
    w = Watch(browser)
    yield w
    w.page.close()


def _rows(page: Page) -> list[str]:
    page.wait_for_selector("#rollouts tbody tr[data-id]")
    return [
        str(r)
        for r in page.eval_on_selector_all(
            "#rollouts tbody tr[data-id]", "rs => rs.map(r => r.dataset.id)"
        )
    ]


def _wait_rows(page: Page, wanted: list[str]) -> None:
    page.wait_for_function(
        "ids => JSON.stringify(Array.from(document.querySelectorAll('#rollouts tbody tr[data-id]'))"
        ".map(r => r.dataset.id)) === JSON.stringify(ids)",
        arg=wanted,
    )


def test_the_demo_table_and_conversation(demo_calls: Path, watch: Watch) -> None:
    page = watch.page
    with mcc_view(demo_calls) as url:
        page.goto(url)
        assert _rows(page) == ["0-0", "1-0", "2-0", "3-0"]
        page.wait_for_function("document.getElementById('count').textContent.includes('4 of 4')")
        cells = page.eval_on_selector_all(
            "#rollouts tbody tr[data-id='3-0'] td", "tds => tds.map(t => t.textContent)"
        )
        assert cells[:5] == [
            "3-0",
            "1",
            "7",
            "1",
            "0",
        ]  # id, reward (rollouts.jsonl), calls, errors, gaps
        page.click("text=1-0")
        page.wait_for_selector("article.call")
        # In page order: who speaks, and each call's card.
        order = page.eval_on_selector_all(
            "#conversation .input > .turn > .role, #conversation article.call h3",
            "els => els.map(e => e.textContent)",
        )
        assert order == [
            "user", "call 0", "tool", "call 1", "call 2", "user", "call 3", "call 4", "user", "call 5",
        ]  # fmt: skip
        first = page.text_content("#call-0")
        assert first is not None and "tool call" in first.lower() and "get_weather" in first
        assert '"city": "Lyon"' in (page.text_content("#call-0 pre.args") or "")
        result = page.text_content("#conversation .tool-result") or ""
        assert "get_weather" in result and "Lyon: 18 C, light rain" in result
        assert not page.is_visible("#call-0 details.reasoning .text")  # reasoning collapsed
        assert len(page.query_selector_all("#timeline .tl-row:not(.axis)")) == 6
        assert len(page.query_selector_all("#timeline .ttft")) == 6
        figures = page.text_content("#call-4 .figures") or ""
        assert "demo-claude" in figures and "end_turn" in figures and "TTFT" in figures
        page.click("#call-1 .tab:text('raw')")
        page.wait_for_selector("#call-1 .raw-part pre")
        assert '"stream": true' in (page.text_content("#call-1 .raw") or "")
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_a_failed_call_shows_the_error_its_api_stated(demo_calls: Path, watch: Watch) -> None:
    page = watch.page
    with mcc_view(demo_calls) as url:
        page.goto(url)
        page.click("text=3-0")
        page.wait_for_selector("#call-0 .call-error")
        error = page.text_content("#call-0 .call-error") or ""
        assert "scripted error" in error
        assert "rate_limit_error" in error and "rate_limit_exceeded" in error
        assert "no response" not in (page.text_content("#call-0") or "")
        assert page.query_selector("#call-1 .call-error") is None
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_filters_and_sort(tmp_path: Path, watch: Watch) -> None:
    root = write_hostile_dir(tmp_path / "calls")
    store = CaptureStore(root)
    store.append("other", chat_line(model="gpt-other", tokens=(500, 1)))
    page = watch.page
    with mcc_view(root) as url:
        page.goto(url)
        assert _rows(page) == ["evil", "other", "plain"]
        page.select_option("#model", "gpt-other")
        _wait_rows(page, ["other"])
        page.select_option("#model", HOSTILE_MODEL)
        _wait_rows(page, ["evil"])
        page.select_option("#model", "")
        page.select_option("#error", "none")
        _wait_rows(page, ["other", "plain"])
        page.select_option("#error", "")
        page.fill("#q", "pla")
        _wait_rows(page, ["plain"])
        page.fill("#q", "")
        _wait_rows(page, ["evil", "other", "plain"])
        page.click("th[data-sort='tokens_in']")
        _wait_rows(page, ["plain", "evil", "other"])
        page.click("th[data-sort='tokens_in']")
        _wait_rows(page, ["other", "evil", "plain"])
        assert "sort=tokens_in" in page.url and "order=desc" in page.url
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def _text(page: Page, selector: str) -> str:
    return str(page.eval_on_selector(selector, "e => e.textContent"))


def test_hostile_captures_render_as_text_and_run_nothing(tmp_path: Path, watch: Watch) -> None:
    root = write_hostile_dir(tmp_path / "calls")
    page = watch.page
    with mcc_view(root) as url:
        page.goto(url)
        _rows(page)
        assert HOSTILE_MODEL in _text(page, "#rollouts tbody")
        page.goto(url + "rollouts/evil")
        page.wait_for_selector("article.call")
        for details in page.query_selector_all("details"):
            details.evaluate("d => d.open = true")
        text = _text(page, "#conversation")
        for hostile in (SCRIPT, IMG, LINK, HOSTILE_MODEL, '"q": "</pre><script>'):
            assert hostile in text, hostile
        assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in text and "\x1b" not in text  # escaped, shown
        assert "Invalid enum value '<script>window.__pwned = 1</script>'" in text  # damaged line
        assert f"gap: raw_text_cut — {IMG}" in text  # the gap the line records, where it is
        page.hover("#call-0 .tool-head b")  # would fire an onmouseover, were there one
        page.click("#call-0 .tab:text('raw')")
        page.wait_for_selector("#call-0 .raw-part pre")
        for details in page.query_selector_all("#call-0 details"):
            details.evaluate("d => d.open = true")
        assert f"data: {SCRIPT}" in _text(page, "#call-0 .raw")
        assert str(HOSTILE_ARGS.split('"q": ')[1][:10]) in _text(page, "#call-0 .raw")
        # Nothing captured became an element: the page's own scripts, no image, no link out.
        counts: Any = page.evaluate(
            "({scripts: document.scripts.length, imgs: document.images.length,"
            " svgs: document.querySelectorAll('svg').length,"
            " js: Array.from(document.links).filter(a => a.protocol === 'javascript:').length})"
        )
        assert counts == {"scripts": 2, "imgs": 0, "svgs": 0, "js": 0}
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_a_call_appended_while_the_page_is_open_appears(tmp_path: Path, watch: Watch) -> None:
    store = CaptureStore(tmp_path)
    store.append("run", chat_line(user="first"))
    page = watch.page
    with mcc_view(tmp_path) as url:
        page.goto(url + "rollouts/run")
        page.wait_for_selector("#call-0")
        assert page.query_selector("#call-1") is None
        store.append(
            "run", chat_line(user="second", answer="the second answer", started_at=1_700_000_002.0)
        )
        page.wait_for_selector("#call-1", timeout=20_000)  # no reload: the page follows the file
        assert "the second answer" in _text(page, "#call-1")
        assert len(page.query_selector_all("#timeline .tl-row:not(.axis)")) == 2
        page.goto(url)
        assert _rows(page) == ["run"]
        store.append("later", chat_line())
        _wait_rows(page, ["later", "run"])
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_concurrent_calls_are_side_by_side_on_the_timeline(tmp_path: Path, watch: Watch) -> None:
    store = CaptureStore(tmp_path)
    store.append("par", chat_line(user="a", started_at=1_700_000_000.0))  # 0.5 s each
    store.append("par", chat_line(user="b", started_at=1_700_000_000.2))  # overlaps call 0
    store.append("par", chat_line(user="c", started_at=1_700_000_001.0))  # after both
    page = watch.page
    with mcc_view(tmp_path) as url:
        page.goto(url + "rollouts/par")
        page.wait_for_selector("#timeline .bar")
        boxes: Any = page.eval_on_selector_all(
            "#timeline .bar",
            "bs => bs.map(b => { const r = b.getBoundingClientRect();"
            " return [r.left, r.right, r.top, r.bottom]; })",
        )
        (l0, r0, _, b0), (l1, r1, t1, _), (l2, _, _, _) = boxes
        assert l0 < l1 < r0 < r1  # call 1 starts while call 0 runs: the bars overlap in time
        assert b0 <= t1  # on rows of their own
        assert l2 > r1  # call 2 starts after both ended
        marks = page.query_selector_all("#timeline .ttft")
        assert len(marks) == 3  # the first token of each call is marked inside its bar
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def _column(page: Page, index: int) -> list[str]:
    return [
        str(t)
        for t in page.eval_on_selector_all(
            f"#rollouts tbody tr[data-id] td:nth-child({index})",
            "tds => tds.map(t => t.textContent)",
        )
    ]


def test_rewards_sort_and_filter_and_the_header_names_the_directory(
    demo_calls: Path, tmp_path: Path, watch: Watch
) -> None:
    root = tmp_path / "run <b>7</b>"  # the header shows a directory's name as text
    calls = root / "model-calls"
    store = CaptureStore(calls)
    for rollout_id in ("0-0", "1-0", "2-0", "10-0"):
        store.append(rollout_id, chat_line())
    (root / "rollouts.jsonl").write_bytes(
        rollout_row(0, reward=0.5, task="run 10") + rollout_row(1, reward=1, task="run 2")
        + rollout_row(2, reward=-1, task="run 1") + rollout_row(10, reward=0.75, task="run 3")
    )  # fmt: skip
    page = watch.page
    with mcc_view(root) as url:
        page.goto(url)
        assert _rows(page) == ["0-0", "1-0", "2-0", "10-0"]
        page.wait_for_function("() => document.querySelector('#where b') !== null")
        assert _text(page, "#where") == f"{root} → {calls}"
        heads = page.eval_on_selector_all("#rollouts th", "ths => ths.map(t => t.textContent)")
        assert heads[:4] == ["rollout", "reward", "task", "calls"]
        assert _column(page, 2) == ["0.5", "1", "-1", "0.75"]
        assert _column(page, 3) == ["run 10", "run 2", "run 1", "run 3"]
        page.click("th[data-sort='reward']")
        _wait_rows(page, ["2-0", "0-0", "10-0", "1-0"])
        page.click("th[data-sort='reward']")
        _wait_rows(page, ["1-0", "10-0", "0-0", "2-0"])
        page.click("th[data-sort='field:task']")
        _wait_rows(page, ["2-0", "1-0", "10-0", "0-0"])  # run 1, 2, 3, 10
        page.fill("#reward_min", "0.6")
        _wait_rows(page, ["1-0", "10-0"])
        assert "reward_min=0.6" in page.url
        page.wait_for_function("() => document.querySelector('[data-total=mean_reward] .value')"
                               ".textContent === '0.875'")  # fmt: skip
        page.fill("#reward_min", "")
        page.select_option("#error", "any")
        page.wait_for_selector("#rollouts tbody tr.empty")
        page.goto(url + "rollouts/1-0")  # the rollout page's header names it too
        page.wait_for_function("() => document.querySelector('#where b') !== null")
        assert _text(page, "#where") == f"{root} → {calls}"
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def _bars(page: Page, chart: str) -> list[int]:
    return [
        int(c)
        for c in page.eval_on_selector_all(
            f"figure[data-chart='{chart}'] svg rect.bar", "rs => rs.map(r => r.dataset.count)"
        )
    ]


def test_totals_and_histograms_are_drawn_from_the_api(demo_calls: Path, watch: Watch) -> None:
    page = watch.page
    with mcc_view(demo_calls) as url:
        api = page.request.get(url + "api/rollouts").json()
        page.goto(url)
        page.wait_for_selector("figure[data-chart='reward'] svg rect.bar")
        totals = {
            str(k): str(v)
            for k, v in page.eval_on_selector_all(
                "#sums .tile",
                "ts => ts.map(t => [t.dataset.total, t.querySelector('.value').textContent])",
            )
        }
        assert totals == {
            "rollouts": "4", "calls": "25", "errors": "1", "tokens_in": "2,880",
            "tokens_out": "960", "mean_reward": "1",
        }  # fmt: skip
        for histogram in api["overview"]["histograms"]:
            wanted = [b["count"] for b in histogram["bins"]]
            assert wanted and _bars(page, histogram["name"]) == wanted, histogram["name"]
        assert _bars(page, "reward") == [4]  # every demo rollout earned 1.0
        assert sum(_bars(page, "latency_ms")) == 25 and sum(_bars(page, "tokens")) == 24
        assert page.evaluate("document.querySelectorAll('script[src^=\"http\"]').length") == 0
        assert "4 of 4 rows joined" in _text(page, "#rollouts-file")
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused


def test_a_hostile_rollouts_file_is_shown_as_text_and_counted(tmp_path: Path, watch: Watch) -> None:
    write_hostile_rollouts(tmp_path, 64 * 1024)
    page = watch.page
    with mcc_view(tmp_path, "--max-line-bytes", str(64 * 1024)) as url:
        page.goto(url)
        assert _rows(page) == ["0-0", "1-0", "2-0", "10-0"]
        page.wait_for_selector("#rollouts-file details")
        note = _text(page, "#rollouts-file")
        for fact in ("4 of 11 rows joined", "1 for rollouts without captures", "5 damaged lines",
                     "1 duplicate row", "1 reward not a number"):  # fmt: skip
            assert fact in note, fact
        page.click("#rollouts-file summary")
        lines = _text(page, "#rollouts-file ul")
        assert "line 2: JSON is malformed" in lines and "line 6: longer than 65,536 bytes" in lines
        assert _column(page, 2) == ["0.25", "high", "1", "2"]
        assert _column(page, 3)[2].startswith(HOSTILE_FIELD)  # shown, as text
        counts: Any = page.evaluate(
            "({scripts: document.scripts.length, imgs: document.images.length})"
        )
        assert counts == {"scripts": 4, "imgs": 0}  # the page's own (common, charts, table, search)
        watch.ran_nothing()  # while the server runs: a poll after it stops is refused
