"""The `mcc` command line, tested against the output of a real `mcc demo` run.

`mcc demo` runs once per module as a subprocess in a temporary directory (a real uvicorn
server, the real SDK clients, the real collector). The other commands run in-process through
`main()` (the same entry point as the `mcc` script) against its output, and read it with
the standard library as an independent oracle.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.parquet as pq
import pytest

from conftest import CompletionsRollout, Run
from model_call_capture.store import CaptureStore

ROLLOUT_IDS = ["0-0", "1-0", "2-0", "3-0"]
SAMPLE = Path(__file__).parent / "data" / "schema-1.0"  # a directory with one capture file
# One rollout: chat JSON (tool call), chat stream, responses JSON, responses stream,
# messages JSON, messages stream. Rollout 3-0 starts with one call the server rate-limits.
ROLLOUT_DIALECTS = ["chat", "chat", "responses", "responses", "messages", "messages"]


def _mcc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    # Piped without COLUMNS: tables at their natural width, whatever the caller's terminal.
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "model_call_capture.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """A directory a real `mcc demo` run (default options, default --dir) wrote, and the run."""
    cwd = tmp_path_factory.mktemp("cwd")
    run = _mcc("demo", cwd=cwd)
    assert run.returncode == 0, run.stderr
    return cwd / "mcc-demo", run


def _capture_lines(demo_dir: Path, rollout_id: str) -> list[dict[str, Any]]:
    text = (demo_dir / "model-calls" / f"{rollout_id}.capture.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def _nearest_rank(values: list[float], p: int) -> float:
    ordered = sorted(values)
    index = -(-p * len(ordered) // 100) - 1  # ceil(p * n / 100) - 1
    return ordered[max(index, 0)]


# -- mcc demo ------------------------------------------------------------------------


def test_demo_leaves_one_capture_file_per_rollout_and_the_rollouts(demo: tuple[Path, Any]) -> None:
    demo_dir, _ = demo
    assert sorted(p.name for p in (demo_dir / "model-calls").glob("*.capture.jsonl")) == [
        f"{rid}.capture.jsonl" for rid in ROLLOUT_IDS
    ]
    for rid in ROLLOUT_IDS:
        lines = _capture_lines(demo_dir, rid)
        expected = (["chat"] if rid == "3-0" else []) + ROLLOUT_DIALECTS
        assert [line["dialect"] for line in lines] == expected
        assert {line["model_ref"]["name"] for line in lines} == {"demo-model"}
        assert [line["status_code"] for line in lines] == ([429] if rid == "3-0" else []) + [
            200
        ] * 6
        assert [line.get("stream", False) for line in lines[-6:]] == [False, True] * 3
    rows = [json.loads(line) for line in (demo_dir / "rollouts.jsonl").read_text().splitlines()]
    attachments = sorted(
        (row["ng_model_call_capture"] for row in rows), key=lambda a: a["rollout_id"]
    )
    assert [(a["rollout_id"], a["metrics"]["num_calls"]) for a in attachments] == [
        ("0-0", 6),
        ("1-0", 6),
        ("2-0", 6),
        ("3-0", 7),
    ]
    assert [row["reward"] for row in rows] == [1.0] * 4
    first_chat = attachments[0]["calls"][0]
    assert first_chat["tool_calls"] == [
        {
            "call_id": first_chat["tool_calls"][0]["call_id"],
            "name": "get_weather",
            "arguments": {"city": "Paris"},
        }
    ]
    assert (
        "request" not in first_chat or first_chat["request"] is None
    )  # attached calls omit payloads


def test_demo_prints_a_summary_and_where_the_files_are(demo: tuple[Path, Any]) -> None:
    demo_dir, run = demo
    out = run.stdout
    assert "mcc demo: 4 rollouts, 25 model calls captured in " in out
    assert "chat 9, messages 8, responses 8" in out
    assert "2,880 / 960 (192 reasoning)" in out
    assert "rate_limit 1" in out
    for label in ("latency p50 / p95", "TTFT p50 / p95", "error categories"):
        assert label in out
    assert f"{demo_dir.resolve()}/model-calls/<rollout_id>.capture.jsonl" in out
    assert f"{demo_dir.resolve()}/rollouts.jsonl" in out
    assert run.stderr == ""


def test_demo_rerun_in_the_same_dir_replaces_the_earlier_captures(tmp_path: Path, mcc: Run) -> None:
    stale = tmp_path / "model-calls" / "9-0.capture.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    (tmp_path / "rollouts.jsonl").write_text('{"old": true}\n')
    code, out, _ = mcc("demo", "--dir", str(tmp_path), "--rollouts", "1")
    assert code == 0
    assert "mcc demo: 1 rollouts, 6 model calls" in out
    assert sorted(p.name for p in (tmp_path / "model-calls").glob("*.capture.jsonl")) == [
        "0-0.capture.jsonl"
    ]
    assert len((tmp_path / "rollouts.jsonl").read_text().splitlines()) == 1


# -- mcc validate --------------------------------------------------------------------


def test_validate_passes_on_the_demo_output(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, err = mcc("validate", str(demo_dir / "model-calls"))
    assert (code, out, err) == (0, "ok: 25 lines in 4 files are valid\n", "")


def test_validate_names_file_and_line_of_each_problem_in_a_damaged_copy(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    copy = tmp_path / "damaged"
    shutil.copytree(demo_dir / "model-calls", copy)
    torn = copy / "1-0.capture.jsonl"
    lines = torn.read_bytes().splitlines(keepends=True)
    torn.write_bytes(b"".join(lines[:5]) + lines[5][:40])  # line 6 torn by a crash
    typed = copy / "2-0.capture.jsonl"
    docs = [json.loads(line) for line in typed.read_text().splitlines()]
    docs[2]["status_code"] = "200"
    docs[4]["dialect"] = "gemini"
    typed.write_text("".join(json.dumps(d) + "\n" for d in docs))

    code, out, _ = mcc("validate", str(copy))
    assert code == 1
    assert out.splitlines() == [
        f"{torn}:6: invalid JSON: Input data was truncated (the last line has no newline: a torn write?)",
        f"{typed}:3: schema: '200' is not of type 'integer', 'null' - at `$.status_code`",
        f"{typed}:3: contract: Expected `int | null`, got `str` - at `$.status_code`",
        f"{typed}:5: schema: 'gemini' is not valid under any of the given schemas - at `$.dialect`",
        f"{typed}:5: contract: Invalid enum value 'gemini' - at `$.dialect`",
        "3 of 25 lines invalid in 2 of 4 files",
    ]


def test_lines_that_are_not_captures_are_unreadable_to_every_command(
    demo: tuple[Path, Any], mcc: Run, tmp_path: Path
) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("validate", str(demo_dir / "rollouts.jsonl"))
    assert code == 1
    assert out.count("contract: not a capture line") == 4 and "4 of 4 lines invalid" in out
    copy = tmp_path / "calls"
    copy.mkdir()
    lines = (demo_dir / "model-calls" / "0-0.capture.jsonl").read_bytes().splitlines()
    (copy / "r.capture.jsonl").write_bytes(b"\n".join([lines[0], b'{"a":1}', lines[1], b""]))
    code, out, _ = mcc("validate", str(copy))
    assert code == 1 and f"{copy / 'r.capture.jsonl'}:2: contract: not a capture line" in out
    code, out, _ = mcc("stats", str(copy), "--json")
    assert code == 0 and sum(row["calls"] for row in json.loads(out)["rows"]) == 2
    code, out, err = mcc("stats", str(copy))
    assert code == 0 and "unreadable" not in out  # notes go to stderr, one spelling
    assert f"1 unreadable line skipped (mcc validate {copy} lists them)" in " ".join(err.split())
    code, out, err = mcc("show", str(copy), "r")
    assert code == 0 and out.startswith("rollout r: 2 calls") and "1 unreadable line" in err
    code, out, _ = mcc("show", str(copy), "r", "--raw")
    assert [c["call_index"] for c in json.loads(out)["calls"]] == [0, 2]


def test_validate_refuses_a_missing_path_in_one_line(mcc: Run, tmp_path: Path) -> None:
    code, out, err = mcc("validate", str(tmp_path / "nope"))
    assert (code, out, err) == (
        1,
        "",
        f"mcc validate: error: {tmp_path / 'nope'}: no such file or directory\n",
    )


# -- mcc stats / show ----------------------------------------------------------------


def test_stats_json_per_model_and_dialect(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("stats", str(demo_dir), "--json")
    assert code == 0
    rows = json.loads(out)["rows"]
    lines = [line for rid in ROLLOUT_IDS for line in _capture_lines(demo_dir, rid)]
    for row in rows:
        mine = [ln for ln in lines if ln["dialect"] == row["dialect"]]
        latencies = [ln["latency_ms"] for ln in mine]
        ttfts = [ln["latency_ttft_ms"] for ln in mine]
        assert row["latency_p50_ms"] == _nearest_rank(latencies, 50)
        assert row["latency_p95_ms"] == _nearest_rank(latencies, 95)
        assert row["ttft_p50_ms"] == _nearest_rank(ttfts, 50)
        assert row["ttft_p95_ms"] == _nearest_rank(ttfts, 95)
    figures = [
        {
            k: v
            for k, v in row.items()
            if k not in ("latency_p50_ms", "latency_p95_ms", "ttft_p50_ms", "ttft_p95_ms")
        }
        for row in rows
    ]
    assert figures == [
        {"model": "demo-claude", "dialect": "messages", "calls": 8, "errors": 0, "error_categories": {},
         "tokens_in": 960, "tokens_out": 320, "tokens_reasoning": None, "tokens_total": 1280, "cached_tokens": 560},
        {"model": "demo-gpt", "dialect": "chat", "calls": 9, "errors": 1, "error_categories": {"rate_limit": 1},
         "tokens_in": 960, "tokens_out": 320, "tokens_reasoning": 96, "tokens_total": 1280, "cached_tokens": 512},
        {"model": "demo-gpt", "dialect": "responses", "calls": 8, "errors": 0, "error_categories": {},
         "tokens_in": 960, "tokens_out": 320, "tokens_reasoning": 96, "tokens_total": 1280, "cached_tokens": 512},
    ]  # fmt: skip
    # Per call: chat/responses 120 in (64 cached), 40 out (12 reasoning); messages 20 in +
    # 30 cache writes + 70 cache reads = 120 in (70 cached), 40 out, no reasoning count.


def test_stats_table(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("stats", str(demo_dir))
    assert code == 0
    assert out.startswith("25 calls in 4 rollouts")
    table_rows = [line for line in out.splitlines() if line.startswith("│ demo-")]
    assert [row.split("│")[1:4] for row in table_rows] == [
        [" demo-claude ", " messages  ", "     8 "],
        [" demo-gpt    ", " chat      ", "     9 "],
        [" demo-gpt    ", " responses ", "     8 "],
    ]
    assert "rate_limit 1" in table_rows[1]


def test_show_lists_the_calls_of_one_rollout(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("show", str(demo_dir), "3-0")
    assert code == 0
    assert out.startswith("rollout 3-0: 7 calls")
    table = out[: out.index("└")]  # the table of calls; the conversation's panels follow it
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]
    assert [(r[0], r[1], r[2], r[3], r[4], r[10], r[11]) for r in rows] == [
        ("0", "chat", "demo-gpt", "429", "-", "-", "rate_limit"),
        ("1", "chat", "demo-gpt", "200", "tool_calls", "get_weather", "-"),
        ("2", "chat", "demo-gpt", "200", "stop", "-", "-"),
        # A Responses call has no finish reason: its status stands in, as on the call's panel.
        ("3", "responses", "demo-gpt", "200", "completed", "-", "-"),
        ("4", "responses", "demo-gpt", "200", "completed", "-", "-"),
        ("5", "messages", "demo-claude", "200", "end_turn", "-", "-"),
        ("6", "messages", "demo-claude", "200", "end_turn", "-", "-"),
    ]


def test_the_demo_answers_the_question_each_rollout_asked(demo: tuple[Path, Any]) -> None:
    demo_dir, _ = demo
    for rollout_id, city in zip(ROLLOUT_IDS, ["Paris", "Lyon", "Berlin", "Amsterdam"], strict=True):
        lines = _capture_lines(demo_dir, rollout_id)
        assert city in json.dumps(lines[0]["request"])  # the question asked
        chat = [ln for ln in lines if ln["dialect"] == "chat" and ln["status_code"] == 200]
        call = chat[0]["response"]["choices"][0]["message"]["tool_calls"][0]
        assert json.loads(call["function"]["arguments"]) == {"city": city}
        for line in lines[len(chat) :]:  # the answers of the other dialects
            text = json.dumps(line["response"], ensure_ascii=False)
            assert f"with light rain in {city}:" in text, (rollout_id, line["dialect"])


def test_show_prints_the_error_a_call_got(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("show", str(demo_dir), "3-0")
    assert code == 0
    call0 = out[out.index("─ call 0 ─") : out.index("─ call 1 ─")]
    # As the line holds it: {"error": {"message": "scripted error", "type": ..., "code": ...}}
    assert "error: scripted error" in call0
    assert "type rate_limit_error  code rate_limit_exceeded" in call0
    assert "no response" not in call0


def test_show_prints_the_conversation_in_order(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("show", str(demo_dir), "1-0")
    assert code == 0
    conversation = out[out.index("└") :]
    # The first call's user turn, its tool call, the tool result that answered it, the
    # answer; then later calls (three dialects) and the follow-up user turn.
    wanted = [
        "─ user ─",
        "Is it a good day for a picnic in Lyon?",
        "─ call 0 ─",
        "▸ reasoning: The user asks about the weather",
        "tool call get_weather",
        '"city": "Lyon"',
        "─ tool ─",
        "tool result get_weather",
        "Lyon: 18 C, light rain",
        "─ call 1 ─",
        "It is 18 °C with light rain in Lyon",
        "─ call 2 ─",
        "Shorter, please.",
        "─ call 3 ─",
        "─ call 5 ─",
    ]
    positions = [conversation.find(text) for text in wanted]
    assert -1 not in positions, [t for t, p in zip(wanted, positions, strict=True) if p < 0]
    assert positions == sorted(positions)
    # The call's figures, as its panel wraps them at 80 columns.
    words = " ".join(out.replace("│", " ").split())
    assert "model demo-claude dialect messages status 200 finish end_turn in 120 out 40" in words


def test_show_json_is_the_attachment_with_payloads_on_request(
    demo: tuple[Path, Any], mcc: Run
) -> None:
    demo_dir, _ = demo
    lines = _capture_lines(demo_dir, "0-0")
    code, out, _ = mcc("show", str(demo_dir), "0-0", "--json")
    assert code == 0
    attachment = json.loads(out)
    assert attachment["rollout_id"] == "0-0"
    assert attachment["metrics"]["num_calls"] == 6
    assert [c["model_call_id"] for c in attachment["calls"]] == [
        line["model_call_id"] for line in lines
    ]
    assert {c.get("request") for c in attachment["calls"]} == {None}
    code, out, _ = mcc("show", str(demo_dir), "0-0", "--raw", "--payloads")
    assert [c["request"] for c in json.loads(out)["calls"]] == [line["request"] for line in lines]
    assert (
        mcc("show", str(demo_dir), "0-0", "--raw")[1]
        == mcc("show", str(demo_dir), "0-0", "--json")[1]
    )


def test_show_payloads_prints_request_and_response(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, _ = mcc("show", str(demo_dir), "1-0", "--payloads")
    assert code == 0
    assert out.count("request\n") == 6 and out.count("response\n") == 6
    assert '"get_weather"' in out


def test_view_of_a_missing_directory_is_one_line(tmp_path: Path, mcc: Run) -> None:
    missing = tmp_path / "nope"
    assert mcc("view", str(missing)) == (1, "", f"mcc view: error: {missing}: no such directory\n")


def test_show_an_unknown_rollout_is_one_line(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    code, out, err = mcc("show", str(demo_dir), "7-0")
    root = demo_dir / "model-calls"
    assert (code, out, err) == (
        1,
        "",
        f"mcc show: error: {root}: no capture for rollout '7-0'; found: 0-0, 1-0, 2-0, 3-0\n",
    )


# -- mcc export ----------------------------------------------------------------------


def test_export_parquet_reads_back_with_duckdb_equal_to_the_records(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    out_file = tmp_path / "calls.parquet"
    code, out, _ = mcc("export", str(demo_dir), "--out", str(out_file))
    assert (code, out) == (0, f"wrote 25 calls to {out_file} (parquet)\n")
    con = duckdb.connect()
    columns = [row[0] for row in con.execute(f"describe select * from '{out_file}'").fetchall()]
    assert columns == [
        "rollout_id", "model_call_id", "response_id", "call_index", "model_ref", "model", "dialect",
        "status_code", "response_status", "finish_reason", "started_at", "completed_at", "tokens_in",
        "tokens_out", "tokens_reasoning", "tokens_total", "cached_tokens", "cache_hit",
        "cache_creation_tokens", "tool_calls", "reasoning_content", "error_category", "latency_total_ms",
        "latency_ttft_ms", "capture_cut", "client_session_id", "upstream_attempted", "response_source",
        "upstream_status_code", "local_response_reason", "prompt_token_ids", "generation_token_ids",
        "generation_log_probs", "derivation_problems",
    ]  # fmt: skip
    # The demo's model server says nothing of its execution and its agent sends no session.
    unknown = con.execute(
        f"select count(*) from '{out_file}' where client_session_id is null and"
        " upstream_attempted is null and response_source is null and upstream_status_code is null"
        " and local_response_reason is null"
    ).fetchone()
    assert unknown == (25,)
    got = con.execute(
        f"select rollout_id, call_index, model_call_id, dialect, status_code, error_category, started_at,"
        f" latency_total_ms, latency_ttft_ms, model_ref.name from '{out_file}' order by rollout_id, call_index"
    ).fetchall()
    expected = [
        (rid, i, line["model_call_id"], line["dialect"], line["status_code"], line.get("error_category"),
         line["started_at"], line["latency_ms"], line["latency_ttft_ms"], "demo-model")
        for rid in ROLLOUT_IDS
        for i, line in enumerate(_capture_lines(demo_dir, rid))
    ]  # fmt: skip
    assert got == expected
    tool_calls = con.execute(
        f"select tool_calls from '{out_file}' where rollout_id = '0-0' and call_index = 0"
    ).fetchone()
    assert tool_calls is not None
    (call,) = tool_calls[0]
    assert (call["name"], json.loads(call["arguments"])) == ("get_weather", {"city": "Paris"})
    assert (
        call["call_id"]
        == _capture_lines(demo_dir, "0-0")[0]["response"]["choices"][0]["message"]["tool_calls"][0][
            "id"
        ]
    )


def test_export_parquet_with_payloads_has_them_as_json_strings(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    out_file = tmp_path / "calls.parquet"
    assert mcc("export", str(demo_dir), "--out", str(out_file), "--payloads")[0] == 0
    table = pq.read_table(out_file).to_pylist()
    expected = [line for rid in ROLLOUT_IDS for line in _capture_lines(demo_dir, rid)]
    assert [json.loads(row["request"]) for row in table] == [line["request"] for line in expected]
    assert [json.loads(row["response"]) for row in table] == [line["response"] for line in expected]
    assert [row["response_raw"] for row in table] == [line.get("response_raw") for line in expected]


def test_export_jsonl_rows_are_the_records_with_rollout_id(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    out_file = tmp_path / "calls.jsonl"
    assert mcc("export", str(demo_dir), "--out", str(out_file))[0] == 0
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert len(rows) == 25
    assert list(rows[0])[:3] == ["rollout_id", "model_call_id", "response_id"]
    assert "request" not in rows[0]
    assert [(r["rollout_id"], r["call_index"], r["dialect"]) for r in rows[:7]] == [
        ("0-0", i, d) for i, d in enumerate(ROLLOUT_DIALECTS)
    ] + [("1-0", 0, "chat")]


def test_export_without_pyarrow_is_one_clear_line(demo: tuple[Path, Any], tmp_path: Path) -> None:
    demo_dir, _ = demo
    # pyarrow is installed here; a None entry in sys.modules makes its import fail.
    code = "import sys; sys.modules['pyarrow'] = None; from model_call_capture.cli import main; main(sys.argv[1:])"
    run = subprocess.run(
        [sys.executable, "-c", code, "export", str(demo_dir), "--out", str(tmp_path / "x.parquet")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (
        "mcc export: error: Parquet export needs pyarrow: pip install 'model-call-capture[arrow]' (or use --format jsonl)\n"
    )
    assert not (tmp_path / "x.parquet").exists()


def test_export_into_a_missing_directory_is_one_line(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    code, _, err = mcc("export", str(demo_dir), "--out", str(tmp_path / "no" / "x.jsonl"))
    assert (code, err) == (1, f"mcc export: error: {tmp_path / 'no'}: no such directory\n")


# -- mcc schema ----------------------------------------------------------------------


def test_schema_out_writes_the_packaged_schemas(tmp_path: Path, mcc: Run) -> None:
    from model_call_capture import schemas

    code, out, _ = mcc("schema", "--out", str(tmp_path))
    names = schemas.schema_names()
    assert "v1/capture-line.schema.json" in names
    assert (code, out) == (0, f"wrote {len(names)} schemas to {tmp_path}\n")
    for name in names:
        assert (tmp_path / name).read_bytes() == (schemas.schema_dir() / name).read_bytes()


def test_schema_lists_the_schemas(mcc: Run) -> None:
    code, out, _ = mcc("schema")
    assert code == 0
    assert "v1/capture-line.schema.json" in out and "CaptureLine" in out


# -- every command -------------------------------------------------------------------

COMMANDS = ["demo", "serve", "validate", "show", "stats", "export", "schema", "view", "compact"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str, mcc: Run) -> None:
    code, out, _ = mcc(command, "--help")
    assert code == 0
    assert f"Usage: mcc {command}" in out
    assert "Example:\n    mcc " + command in out


def test_a_command_imports_its_own_module_not_the_others() -> None:
    # Every `mcc` process, and the fork server of its workers, pays only for its command.
    code = (
        "import sys, click; from model_call_capture.cli import cli; "
        "cli.get_command(click.Context(cli), 'export'); "
        "print(sorted(m for m in ('model_call_capture.cli.serve', 'model_call_capture.cli.view', "
        "'model_call_capture.cli.demo', 'model_call_capture.proxy', 'uvicorn') if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert run.stdout.strip() == "[]"
    listed = subprocess.run(
        [sys.executable, "-m", "model_call_capture.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert [line.split()[0] for line in listed.split("Commands:\n")[1].splitlines()] == sorted(
        COMMANDS
    )


@pytest.mark.parametrize(
    ("args", "code", "err"),
    [
        (["stats"], 2, "mcc stats: error: Missing argument 'PATH...'. (see 'mcc stats --help')\n"),
        (["nope"], 2, "mcc: error: No such command 'nope'. (see 'mcc --help')\n"),
        (["demo", "--rollouts", "0"], 2, "mcc demo: error: Invalid value for '--rollouts': 0 is not in the range 1<=x<=1000. (see 'mcc demo --help')\n"),
        (["serve", "--upstream", "ftp://x", "--capture-dir", "/tmp/mcc-unused"], 1, "mcc serve: error: upstream must be an http(s) URL, got 'ftp://x'\n"),
        (["stats", sys.executable], 1, f"mcc stats: error: {sys.executable}: not a capture file (<rollout_id>.capture.jsonl)\n"),
        (["stats", ".", "--jobs", "0"], 2, "mcc stats: error: Invalid value for '--jobs' / '-j': 0 is not in the range x>=1. (see 'mcc stats --help')\n"),
        (["export", str(SAMPLE), "--out", "/nonexistent-mcc-out/calls.parquet"], 1, "mcc export: error: /nonexistent-mcc-out: no such directory\n"),
    ],
)  # fmt: skip
def test_errors_are_one_line_and_a_non_zero_exit(
    args: list[str], code: int, err: str, mcc: Run
) -> None:
    assert mcc(*args) == (code, "", err)


def test_the_installed_script_reports_errors_without_a_traceback(tmp_path: Path) -> None:
    run = _mcc("stats", str(tmp_path / "missing"))
    assert (run.returncode, run.stdout, run.stderr) == (
        1,
        "",
        f"mcc stats: error: {tmp_path / 'missing'}: no such file or directory\n",
    )


def test_a_file_system_error_is_one_line(tmp_path: Path, mcc: Run) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, out, err = mcc("demo", "--dir", str(blocker / "demo"))
    assert (code, out, err) == (
        1,
        "",
        f"mcc demo: error: {blocker / 'demo' / 'model-calls'}: Not a directory\n",
    )


def test_stats_and_show_cover_the_completions_dialect(
    completions_rollout: CompletionsRollout, mcc: Run
) -> None:
    directory = str(completions_rollout.directory)
    code, out, _ = mcc("stats", directory, "--json")
    assert code == 0
    (row,) = json.loads(out)["rows"]
    prompts = sum(len(seen[0]) for seen in completions_rollout.seen)
    generated = sum(len(seen[1]) for seen in completions_rollout.seen)
    assert (row["model"], row["dialect"], row["calls"], row["errors"]) == (
        "demo-gpt",
        "completions",
        4,
        0,
    )
    assert (row["tokens_in"], row["tokens_out"]) == (prompts, generated)
    code, out, _ = mcc("show", directory, completions_rollout.rollout_id)
    assert code == 0
    assert out.count("dialect completions") == 4 and out.count("\u2500 prompt \u2500") == 4
    assert out.count("It is 18 \u00b0C with light rain in Paris") == 4


def test_export_into_a_missing_directory_is_named_before_a_missing_pyarrow(
    demo: tuple[Path, Any], tmp_path: Path
) -> None:
    demo_dir, _ = demo
    code = "import sys; sys.modules['pyarrow'] = None; from model_call_capture.cli import main; main(sys.argv[1:])"
    out = tmp_path / "no" / "x.parquet"
    run = subprocess.run(
        [sys.executable, "-c", code, "export", str(demo_dir), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == f"mcc export: error: {tmp_path / 'no'}: no such directory\n"


def test_export_tokens_of_calls_without_token_ids_says_why_and_how(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    out = tmp_path / "t.jsonl"
    code, stdout, stderr = mcc("export", str(demo_dir), "--tokens", "--out", str(out))
    assert (code, stdout) == (0, f"wrote 0 token trajectories to {out} (jsonl)\n")
    assert stderr == (
        "mcc export: note: no token trajectories: none of the 25 calls carried token ids (prompt_token_ids and"
        " generation_token_ids). Capture them from a server that returns them, e.g. vLLM with"
        ' "return_token_ids": true in the request (docs/formats.md, "Token trajectories")\n'
    )


# -- a capture file wherever a directory is read ---------------------------------------------


def test_stats_reads_capture_files_as_it_reads_their_directory(
    demo: tuple[Path, Any], mcc: Run
) -> None:
    demo_dir, _ = demo
    files = [str(demo_dir / "model-calls" / f"{r}.capture.jsonl") for r in ROLLOUT_IDS]
    one = mcc("stats", files[0], "--json")
    assert one[0] == 0, one[2]
    assert sum(row["calls"] for row in json.loads(one[1])["rows"]) == len(
        _capture_lines(demo_dir, "0-0")
    )
    code, by_files, _ = mcc("stats", *files, "--json")
    assert code == 0
    assert json.loads(by_files) == json.loads(mcc("stats", str(demo_dir), "--json")[1])


def test_show_reads_a_capture_file_as_its_rollout(demo: tuple[Path, Any], mcc: Run) -> None:
    demo_dir, _ = demo
    path = str(demo_dir / "model-calls" / "3-0.capture.jsonl")
    for flags in ([], ["--raw"], ["--raw", "--payloads"]):
        by_file = mcc("show", path, *flags)
        assert by_file[0] == 0, by_file[2]
        assert by_file == mcc("show", str(demo_dir), "3-0", *flags)
    assert mcc("show", path, "3-0")[1] == mcc("show", path)[1]
    code, out, err = mcc("show", path, "1-0")
    assert (code, out, err) == (1, "", f"mcc show: error: {path}: holds rollout '3-0', not '1-0'\n")


def test_show_without_a_rollout_id_shows_the_only_one_or_names_them(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    shutil.copy(demo_dir / "model-calls" / "2-0.capture.jsonl", tmp_path)
    assert mcc("show", str(tmp_path))[1] == mcc("show", str(tmp_path), "2-0")[1]
    code, _, err = mcc("show", str(demo_dir))
    root = demo_dir / "model-calls"
    assert (code, err) == (
        1,
        f"mcc show: error: {root}: name a rollout; found: 0-0, 1-0, 2-0, 3-0\n",
    )


def test_export_reads_capture_files_as_it_reads_their_directory(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    files = [str(demo_dir / "model-calls" / f"{r}.capture.jsonl") for r in ROLLOUT_IDS]
    assert mcc("export", *files, "--out", str(tmp_path / "files.jsonl"))[0] == 0
    assert mcc("export", str(demo_dir), "--out", str(tmp_path / "dir.jsonl"))[0] == 0
    by_files = (tmp_path / "files.jsonl").read_bytes()
    assert by_files == (tmp_path / "dir.jsonl").read_bytes() and by_files.count(b"\n") == 25


@pytest.mark.parametrize("command", ["stats", "show", "export"])
def test_a_file_that_is_not_a_capture_file_is_one_error_line(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run, command: str
) -> None:
    demo_dir, _ = demo
    path = demo_dir / "rollouts.jsonl"
    extra = ["--out", str(tmp_path / "x.jsonl")] if command == "export" else []
    code, out, err = mcc(command, str(path), *extra)
    assert (code, out) == (1, "")
    assert err == f"mcc {command}: error: {path}: not a capture file (<rollout_id>.capture.jsonl)\n"


def test_show_of_a_capture_file_reports_its_incomplete_marker(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    path = tmp_path / "0-0.capture.jsonl"
    shutil.copy(demo_dir / "model-calls" / "0-0.capture.jsonl", path)
    assert "gaps" not in json.loads(mcc("show", str(path), "--raw")[1])
    (tmp_path / "0-0.capture.incomplete").touch()
    attachment = json.loads(mcc("show", str(path), "--raw")[1])
    assert attachment["gaps"] == [{"code": "model_call_capture_incomplete"}]
    assert attachment == json.loads(mcc("show", str(tmp_path), "0-0", "--raw")[1])


def test_stats_and_show_read_a_segment_file_as_its_rollout(
    demo: tuple[Path, Any], tmp_path: Path, mcc: Run
) -> None:
    demo_dir, _ = demo
    store = CaptureStore(tmp_path, layout="segments")
    lines = (demo_dir / "model-calls" / "1-0.capture.jsonl").read_bytes().splitlines()
    for line in lines:
        store.append("1-0", line)
    (segment,) = store.segment_files("1-0")
    assert mcc("show", str(segment), "--raw") == mcc("show", str(tmp_path), "1-0", "--raw")
    code, out, _ = mcc("stats", str(segment), "--json")
    assert code == 0 and sum(row["calls"] for row in json.loads(out)["rows"]) == len(lines)


def test_export_tokens_of_one_call_without_token_ids_says_so_in_english(
    tmp_path: Path, mcc: Run
) -> None:
    store = CaptureStore(tmp_path / "caps")
    store.append(
        "r-0",
        (Path(__file__).parent / "data" / "schema-1.0" / "0-0.capture.jsonl")
        .read_bytes()
        .splitlines()[0],
    )
    code, _, stderr = mcc(
        "export", str(tmp_path / "caps"), "--tokens", "--out", str(tmp_path / "t.jsonl")
    )
    assert code == 0, stderr
    assert "no token trajectories: the one call carried no token ids (prompt_token_ids" in stderr
