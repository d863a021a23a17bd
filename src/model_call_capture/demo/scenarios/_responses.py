"""What the scripted model says in the OpenAI Responses dialect."""

from __future__ import annotations

from typing import Any

from ._reply import CREATED, REASONING, Event, Reply

__all__ = ["ResponsesReply"]


class _Events:
    """Responses stream events, numbered by `sequence_number` in the order added."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, kind: str, **fields: Any) -> None:
        self.items.append({"type": kind, "sequence_number": len(self.items), **fields})

    def framed(self) -> list[Event]:
        return [(e["type"], e) for e in self.items]


class ResponsesReply(Reply):
    """A reply of `POST /v1/responses`: reasoning, a message and a function call as output items."""

    def json(self) -> dict[str, Any]:
        """The response object, completed (or incomplete)."""
        status = "incomplete" if self.incomplete else "completed"
        return self._object(status, self._output(), self._usage())

    def events(self) -> list[Event]:
        """`response.created` to `response.completed`, or to the scripted failure."""
        events = _Events()
        events.add("response.created", response=self._object("in_progress", [], None))
        events.add("response.in_progress", response=self._object("in_progress", [], None))
        output = self._output()
        self._add_reasoning(events, output[0])
        self._add_message_start(events)
        if self.incomplete:
            events.add(
                "response.incomplete",
                response=self._object("incomplete", output, self._usage()),
            )
            return events.framed()
        self._add_message_done(events, output[1])
        if "error_event" in self.script:
            events.add(
                "error",
                code="server_error",
                message="The server had an error while processing your request.",
                param=None,
            )
            return events.framed()
        if self.tool:
            self._add_function_call(events, output[2])
        if "failed" in self.script:
            failed = self._object("failed", output, None)
            failed["error"] = {"code": "server_error", "message": "The model failed to finish."}
            events.add("response.failed", response=failed)
        else:
            events.add("response.completed", response=self.json())
        return events.framed()

    def delta_event(self, text: str, n: int) -> Event:
        """One more `response.output_text.delta` of the message."""
        return "response.output_text.delta", {
            "type": "response.output_text.delta",
            "sequence_number": 100 + n,
            "item_id": self._id("msg"),
            "output_index": 1,
            "content_index": 0,
            "delta": text,
            "logprobs": [],
        }

    def _ends_with_tool_result(self, request: dict[str, Any]) -> bool:
        items = request.get("input")
        last = items[-1] if isinstance(items, list) and items else None
        return isinstance(last, dict) and last.get("type") == "function_call_output"

    # The stream, item by item ---------------------------------------------------------

    def _add_reasoning(self, events: _Events, done: dict[str, Any]) -> None:
        rs = {"id": self._id("rs"), "type": "reasoning", "summary": []}
        events.add("response.output_item.added", output_index=0, item=rs)
        part = {"type": "summary_text", "text": ""}
        at = {"item_id": rs["id"], "output_index": 0, "summary_index": 0}
        events.add("response.reasoning_summary_part.added", **at, part=part)
        events.add("response.reasoning_summary_text.delta", **at, delta=REASONING)
        events.add("response.reasoning_summary_text.done", **at, text=REASONING)
        done_part = {"type": "summary_text", "text": REASONING}
        events.add("response.reasoning_summary_part.done", **at, part=done_part)
        events.add("response.output_item.done", output_index=0, item=done)

    def _add_message_start(self, events: _Events) -> None:
        msg_id = self._id("msg")
        item = {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        events.add("response.output_item.added", output_index=1, item=item)
        empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        at = {"item_id": msg_id, "output_index": 1, "content_index": 0}
        events.add("response.content_part.added", **at, part=empty)
        for delta in self.deltas():
            events.add("response.output_text.delta", **at, delta=delta, logprobs=[])

    def _add_message_done(self, events: _Events, done: dict[str, Any]) -> None:
        at = {"item_id": self._id("msg"), "output_index": 1, "content_index": 0}
        events.add("response.output_text.done", **at, text=self.text, logprobs=[])
        events.add("response.content_part.done", **at, part=done["content"][0])
        events.add("response.output_item.done", output_index=1, item=done)

    def _add_function_call(self, events: _Events, done: dict[str, Any]) -> None:
        fc_id = self._id("fc")
        item = self._function_call("in_progress", "")
        events.add("response.output_item.added", output_index=2, item=item)
        for piece in self.argument_pieces:
            events.add(
                "response.function_call_arguments.delta",
                item_id=fc_id,
                output_index=2,
                delta=piece,
            )
        events.add(
            "response.function_call_arguments.done",
            item_id=fc_id,
            output_index=2,
            arguments=self.arguments,
        )
        events.add("response.output_item.done", output_index=2, item=done)

    # The response object ----------------------------------------------------------------

    def _usage(self) -> dict[str, Any]:
        return {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 12},
            "total_tokens": 160,
        }

    def _output(self) -> list[dict[str, Any]]:
        output: list[dict[str, Any]] = [
            {
                "id": self._id("rs"),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": REASONING}],
            },
            {
                "id": self._id("msg"),
                "type": "message",
                "role": "assistant",
                "status": "incomplete" if self.incomplete else "completed",
                "content": [
                    {"type": "output_text", "text": self.text, "annotations": [], "logprobs": []}
                ],
            },
        ]
        if self.tool:
            output.append(self._function_call("completed"))
        return output

    def _function_call(self, status: str, arguments: str | None = None) -> dict[str, Any]:
        return {
            "id": self._id("fc"),
            "type": "function_call",
            "call_id": self._id("call"),
            "name": self.tool,
            "arguments": self.arguments if arguments is None else arguments,
            "status": status,
        }

    def _object(self, status: str, output: list[dict[str, Any]], usage: Any) -> dict[str, Any]:
        return {
            "id": self._id("resp"),
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"}
            if status == "incomplete"
            else None,
            "instructions": None,
            "max_output_tokens": None,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": True,
            "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": False,
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": [],
            "top_p": 1.0,
            "truncation": "disabled",
            "usage": usage,
            "metadata": {},
        }
