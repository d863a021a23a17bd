"""A rollout's conversation (`viewer.Conversation`) as rich panels, for `mcc show`.

The same model as the web page's, printed: each call's new input turns, then a panel
for the call (its figures in the title, its output inside), damaged lines where they
are. Every captured string goes through `literal` (escaped, never markup).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from ..viewer import CallView, Conversation, PartView, SetupView, ToolView, TurnView
from ._common import fmt_int, fmt_ms, literal, safe_text

__all__ = ["conversation_renderables"]

_ROLE_STYLES = {
    "system": "magenta",
    "developer": "magenta",
    "user": "cyan",
    "assistant": "white",
    "tool": "green",
}
_REASONING_CHARS = 100  # reasoning is shown collapsed: its start, on one line
_SCHEMA_CHARS = 300  # of a tool's schema: its start, on one line (--payloads has it whole)


def _cut(part: PartView) -> Text | None:
    if not part.cut:
        return None
    return Text(f"… {part.cut:,} more characters not shown (--payloads has them)", style="yellow")


def _part(part: PartView) -> list[RenderableType]:
    out: list[RenderableType] = []
    if part.kind == "text":
        out.append(literal(part.text, multiline=True))
    elif part.kind == "reasoning":
        first = " ".join(part.text.split())
        more = "…" if len(first) > _REASONING_CHARS else ""
        line = Text("▸ reasoning: ", style="dim")
        line.append_text(literal(first[:_REASONING_CHARS] + more))
        line.stylize("dim italic")
        out.append(line)
    elif part.kind == "tool_call":
        head = Text("tool call ", style="bold blue")
        head.append_text(literal(part.name or "?"))
        head.append_text(Text(safe_text(f"  {part.call_id or ''}"), style="dim"))
        out += [head, literal(part.arguments or "", multiline=True)]
    elif part.kind == "tool_result":
        head = Text("tool error " if part.error else "tool result ", style="bold green")
        head.append_text(literal(part.answers or ""))
        head.append_text(Text(safe_text(f"  {part.call_id or ''}"), style="dim"))
        out += [head, literal(part.text, multiline=True)]
    elif part.kind == "attachment":
        text = f"[{part.name or 'attachment'}{': ' + part.text if part.text else ''}]"
        out.append(Text(literal(text).plain, style="dim"))
    else:
        head = Text("item ", style="dim")
        head.append_text(literal(part.name or "?"))
        out += [head, literal(part.text, multiline=True)]
    cut = _cut(part)
    if cut is not None:
        out.append(cut)
    return out


def _turn(turn: TurnView) -> Panel:
    style = _ROLE_STYLES.get(turn.role, "white")
    body = [r for part in turn.parts for r in _part(part)]
    return Panel(
        Group(*body) if body else Text("(empty)", style="dim"),
        title=literal(turn.role),
        title_align="left",
        border_style=style,
        padding=(0, 1),
    )


def _figures(call: CallView) -> Text:
    pairs = [
        ("model", call.model or "?"),
        ("dialect", call.dialect or "?"),
        ("status", fmt_int(call.status_code)),
        ("finish", call.finish_reason or call.response_status or "-"),
        ("in", fmt_int(call.tokens_in)),
        ("out", fmt_int(call.tokens_out)),
        ("TTFT", f"{fmt_ms(call.ttft_ms)} ms"),
        ("latency", f"{fmt_ms(call.latency_ms)} ms"),
    ]
    if call.error_category:
        pairs.insert(3, ("error", call.error_category))
    text = Text()
    for name, value in pairs:
        text.append(f"{name} ", style="dim")
        text.append_text(literal(value))
        text.append("  ")
    if call.capture_cut:
        text.append("capture cut at the byte cap", style="yellow")
    return text


def _error(call: CallView) -> list[RenderableType]:
    """The error the call got, as its API stated it: the message, then its kind and code
    (the status is in the call's figures)."""
    error = call.error
    assert error is not None
    head = Text("error: ", style="bold red")
    head.append_text(literal(error.message or "(no message)", multiline=True))
    facts = Text()
    for name, value in (
        ("type", error.type),
        ("code", error.code),
        ("param", error.param),
    ):
        if value is not None:
            facts.append(f"{name} ", style="dim")
            facts.append_text(literal(value))
            facts.append("  ")
    return [head, facts] if facts.plain else [head]


def _tool(tool: ToolView) -> list[RenderableType]:
    head = Text("tool ", style="bold blue")
    head.append_text(literal(tool.name or tool.kind))
    if tool.name and tool.kind != "function":
        head.append_text(Text(safe_text(f"  ({tool.kind})"), style="dim"))
    out: list[RenderableType] = [head]
    if tool.description:
        out.append(literal(tool.description, multiline=True))
    if tool.parameters:
        flat = " ".join(tool.parameters.split())
        more = "…" if len(flat) > _SCHEMA_CHARS or tool.cut else ""
        out.append(Text(literal(flat[:_SCHEMA_CHARS] + more).plain, style="dim"))
    return out


def _setup(setup: SetupView, note: str | None) -> Panel:
    """The system prompt and the tools, once (and again where a call changes them)."""
    body: list[RenderableType] = [_turn(t) for t in setup.system]
    for tool in setup.tools:
        body += _tool(tool)
    if setup.tools_left_out:
        body.append(Text(f"{setup.tools_left_out:,} more tools not shown", style="yellow"))
    if not body:
        body.append(Text("no system prompt, no tools", style="dim"))
    title = "setup: system prompt and tools" + (f" ({note})" if note else "")
    return Panel(Group(*body), title=title, title_align="left", border_style="magenta")


def _call(call: CallView) -> list[RenderableType]:
    out: list[RenderableType] = []
    if call.setup is not None:
        out.append(_setup(call.setup, call.setup_note))
    out += [_turn(t) for t in call.input]
    if call.input_note:
        out.append(Text(call.input_note, style="dim italic"))
    body: list[RenderableType] = [_figures(call)]
    for gap in call.gaps:
        line = Text("gap: ", style="yellow")
        line.append_text(literal(gap.code + (f": {gap.detail}" if gap.detail else "")))
        body.append(line)
    if call.error is not None:
        body += _error(call)
    for turn in call.output:
        body += [r for part in turn.parts for r in _part(part)]
    if not call.output and call.error is None:
        body.append(Text("no response", style="dim"))
    failed = call.error_category is not None
    out.append(
        Panel(
            Group(*body),
            title=Text(f"call {call.index}", style="bold"),
            title_align="left",
            border_style="red" if failed else "blue",
            padding=(0, 1),
        )
    )
    return out


def conversation_renderables(conversation: Conversation) -> list[RenderableType]:
    """The conversation as rich renderables, in file order."""
    out: list[RenderableType] = []
    if conversation.incomplete:
        out.append(
            Text("gap: model_call_capture_incomplete (a capture of this rollout failed)", "yellow")
        )
    if conversation.setup is not None:
        out.append(_setup(conversation.setup, None))
    for item in conversation.items:
        if isinstance(item, CallView):
            out += _call(item)
        else:
            line = Text(f"line {item.line}: damaged: ", style="bold yellow")
            line.append_text(literal(item.reason))
            out.append(line)
    out += [Text(note, style="yellow") for note in conversation.notes]
    return out
