"""The official SDKs' stream accumulators, driven the way their stream classes drive them.

Each function takes the same chunks as our `StreamReassembler` and goes through the
SDK's own path: its SSE decoder, `json.loads` of each event (`sse.json()`), the event
model built as the client builds it (`construct_type`, the non-strict default), and the
accumulator. The HTTP client itself is left out, which only flatters the SDKs. The final
object is the SDK's own (a pydantic model); converting it to a dict is not charged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anthropic._streaming
import openai._streaming
from anthropic._models import construct_type as a_construct
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent
from openai import omit
from openai._models import construct_type as o_construct
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.lib.streaming.responses._responses import ResponseStreamState
from openai.types.chat import ChatCompletionChunk
from openai.types.responses.response_stream_event import ResponseStreamEvent

__all__ = ["SDK_REASSEMBLERS"]


def chat(chunks: Iterable[bytes]) -> Any:
    """openai `ChatCompletionStreamState` (what `ChatCompletionStream` does per chunk)."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for sse in openai._streaming.SSEDecoder().iter_bytes(iter(chunks)):
        if sse.data.startswith("[DONE]"):
            break
        data = sse.json()
        if data.get("object") != "chat.completion.chunk":
            continue
        state.handle_chunk(o_construct(type_=ChatCompletionChunk, value=data))  # type: ignore[arg-type]
    try:
        return state.get_final_completion()
    except Exception:  # raises on finish_reason length / content_filter: take the snapshot
        return state.current_completion_snapshot


def responses(chunks: Iterable[bytes]) -> Any:
    """openai `ResponseStreamState` (what `ResponseStream` does per event)."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    for sse in openai._streaming.SSEDecoder().iter_bytes(iter(chunks)):
        if sse.data.startswith("[DONE]"):
            break
        state.handle_event(o_construct(type_=ResponseStreamEvent, value=sse.json()))  # type: ignore[arg-type]
    return state._completed_response


def messages(chunks: Iterable[bytes]) -> Any:
    """anthropic `accumulate_event` (what `MessageStream` does per event)."""
    snapshot = None
    json_bufs: dict[int, bytes] = {}
    for sse in anthropic._streaming.SSEDecoder().iter_bytes(iter(chunks)):
        # As `anthropic.Stream`: events without a name and pings are skipped.
        if sse.event is None or sse.event == "ping" or not sse.data:
            continue
        if sse.event == "error":
            break
        event = a_construct(type_=RawMessageStreamEvent, value=sse.json())
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)  # type: ignore[arg-type]
    return snapshot


SDK_REASSEMBLERS = {"responses": responses, "chat": chat, "messages": messages}
"""The SDK accumulator of each dialect, fed the chunks of one stream."""
