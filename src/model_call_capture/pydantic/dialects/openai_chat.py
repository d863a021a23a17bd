# Generated from schemas/v1/dialects/openai-chat.schema.json by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated, Any

from .._base import JsonModel
from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from typing_extensions import TypeAliasType

OpenAIChat = TypeAliasType("OpenAIChat", Annotated[Any, Field(title="OpenAIChat")])
"""
OpenAI Chat Completions (`POST /v1/chat/completions`), as far as model-call-capture reads it: the request, the `chat.completion` response (also the object reassembled from a stream), the error envelope, and the stream's `chat.completion.chunk` and error payloads. Every object is open: providers add fields (`reasoning_details`, `x_groq`, `prompt_filter_results`, ...) and a capture must never reject one. Bootstrapped from `msgspec.json.schema` of the Structs in `model_call_capture.dialects.chat`; tests/dialects/test_chat.py proves the two agree.
"""


class StreamOptions(JsonModel):
    """
    Options of a streamed request.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    include_usage: StrictBool | None = None
    """
    Send a last chunk with `usage` (and empty `choices`) before `[DONE]`.
    """


class FunctionCall(JsonModel):
    """
    The function a tool call invokes.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    name: StrictStr | None = None
    """
    The function's name.
    """
    arguments: StrictStr | None = None
    """
    The arguments as JSON text, as generated (possibly invalid JSON).
    """


class TopLogprob(JsonModel):
    """
    One of the most likely tokens at a position.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    token: StrictStr
    """
    The token.
    """
    logprob: StrictFloat
    """
    Its log probability.
    """
    bytes: list[StrictInt] | None = None
    """
    Its UTF-8 bytes.
    """


class PromptTokensDetails(JsonModel):
    """
    Breakdown of the prompt tokens.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    cached_tokens: StrictInt | None = None
    """
    Prompt tokens served from the prompt cache (counted inside `prompt_tokens`).
    """
    audio_tokens: StrictInt | None = None
    """
    Audio input tokens.
    """


class CompletionTokensDetails(JsonModel):
    """
    Breakdown of the completion tokens.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    reasoning_tokens: StrictInt | None = None
    """
    Reasoning tokens (counted inside `completion_tokens`).
    """
    audio_tokens: StrictInt | None = None
    """
    Audio output tokens.
    """
    accepted_prediction_tokens: StrictInt | None = None
    """
    Predicted-output tokens that appeared in the completion.
    """
    rejected_prediction_tokens: StrictInt | None = None
    """
    Predicted-output tokens that did not appear in the completion.
    """


class ErrorObject(JsonModel):
    """
    An error reported by the API or a compatible server.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    message: StrictStr | None = None
    """
    Human-readable description.
    """
    type: StrictStr | None = None
    """
    Error class (`invalid_request_error`, `server_error`, ...); Groq's stream omits it.
    """
    code: StrictStr | StrictInt | None = None
    """
    Machine-readable code; a string at OpenAI, a number at OpenRouter.
    """
    param: StrictStr | None = None
    """
    The request parameter at fault.
    """


class FunctionCallDelta(JsonModel):
    """
    A fragment of a tool call's function.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    name: StrictStr | None = None
    """
    The function's name, usually in the first fragment only.
    """
    arguments: StrictStr | None = None
    """
    A fragment of the arguments text; fragments are concatenated.
    """


class ErrorChunk(JsonModel):
    """
    The data of an in-stream error event (Groq's `event: error`, an error-only chunk).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    error: ErrorObject
    """
    The error.
    """


class Request(JsonModel):
    """
    A `POST /v1/chat/completions` request body (the fields capture reads; others pass).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    model: StrictStr | None = None
    """
    The model to use.
    """
    messages: list[dict[str, Any]] = []
    """
    The conversation so far.
    """
    tools: list[dict[str, Any]] | None = None
    """
    Tools the model may call.
    """
    tool_choice: StrictStr | dict[str, Any] | None = None
    """
    How the model must choose a tool.
    """
    stream: StrictBool | None = None
    """
    Stream the answer as Server-Sent Events.
    """
    stream_options: StreamOptions | None = None
    """
    Options of a streamed request.
    """
    n: StrictInt | None = None
    """
    How many choices to generate.
    """
    max_tokens: StrictInt | None = None
    """
    Legacy cap on generated tokens.
    """
    max_completion_tokens: StrictInt | None = None
    """
    Cap on generated tokens, reasoning included.
    """
    temperature: StrictFloat | None = None
    """
    Sampling temperature.
    """
    logprobs: StrictBool | None = None
    """
    Return log probabilities of the output tokens.
    """
    response_format: dict[str, Any] | None = None
    """
    Structured-output format.
    """


class MessageToolCall(JsonModel):
    """
    A tool call in a complete message.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr | None = None
    """
    The call's id (`call_...`); some compatible servers omit it.
    """
    type: StrictStr | None = None
    """
    `function` (or `custom`).
    """
    function: FunctionCall | None = None
    """
    The function called.
    """


class TokenLogprob(JsonModel):
    """
    Log probability of one output token.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    token: StrictStr
    """
    The token.
    """
    logprob: StrictFloat
    """
    Its log probability.
    """
    bytes: list[StrictInt] | None = None
    """
    Its UTF-8 bytes.
    """
    top_logprobs: Annotated[list[TopLogprob], Field(validate_default=True)] = []
    """
    The most likely tokens at this position.
    """


class Usage(JsonModel):
    """
    Token usage of a completion.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    prompt_tokens: StrictInt | None = None
    """
    Input tokens, cached ones included.
    """
    completion_tokens: StrictInt | None = None
    """
    Generated tokens, reasoning included.
    """
    total_tokens: StrictInt | None = None
    """
    prompt_tokens + completion_tokens.
    """
    prompt_tokens_details: PromptTokensDetails | None = None
    """
    Breakdown of the prompt tokens.
    """
    completion_tokens_details: CompletionTokensDetails | None = None
    """
    Breakdown of the completion tokens.
    """


class ErrorResponse(JsonModel):
    """
    An error envelope sent instead of a completion (HTTP 4xx/5xx body).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    error: ErrorObject
    """
    The error.
    """


class ToolCallDelta(JsonModel):
    """
    A fragment of one tool call, joined to the others by `index`.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    index: StrictInt | None = None
    """
    Which tool call of the choice this fragment belongs to.
    """
    id: StrictStr | None = None
    """
    The call's id, usually in the first fragment only.
    """
    type: StrictStr | None = None
    """
    `function`, usually in the first fragment only.
    """
    function: FunctionCallDelta | None = None
    """
    The function fragment.
    """


class Message(JsonModel):
    """
    The assistant message of a choice.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    role: StrictStr | None = None
    """
    `assistant`.
    """
    content: StrictStr | None = None
    """
    The text, null when the model only called tools or refused.
    """
    refusal: StrictStr | None = None
    """
    The refusal text, when the model refused.
    """
    reasoning_content: StrictStr | None = None
    """
    Reasoning text (DeepSeek, vLLM, SGLang).
    """
    reasoning: StrictStr | None = None
    """
    Reasoning text (OpenRouter, Groq).
    """
    tool_calls: list[MessageToolCall] | None = None
    """
    Tool calls the model asked for.
    """
    function_call: FunctionCall | None = None
    """
    Deprecated single function call.
    """
    annotations: list[dict[str, Any]] | None = None
    """
    URL citations and other annotations of the content.
    """


class ChoiceLogprobs(JsonModel):
    """
    Log probabilities of a choice's content and refusal tokens.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    content: list[TokenLogprob] | None = None
    """
    Per content token.
    """
    refusal: list[TokenLogprob] | None = None
    """
    Per refusal token.
    """


class Delta(JsonModel):
    """
    What one chunk adds to a choice's message.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    role: StrictStr | None = None
    """
    `assistant`, usually in the first chunk only.
    """
    content: StrictStr | None = None
    """
    A fragment of the text.
    """
    refusal: StrictStr | None = None
    """
    A fragment of the refusal.
    """
    reasoning_content: StrictStr | None = None
    """
    A fragment of reasoning text (DeepSeek, vLLM, SGLang).
    """
    reasoning: StrictStr | None = None
    """
    A fragment of reasoning text (OpenRouter, Groq).
    """
    tool_calls: list[ToolCallDelta] | None = None
    """
    Tool-call fragments.
    """
    function_call: FunctionCallDelta | None = None
    """
    Deprecated single function-call fragment.
    """


class Choice(JsonModel):
    """
    One choice of a complete response.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    index: StrictInt
    """
    Position of the choice (0 .. n-1).
    """
    message: Message
    """
    The generated message.
    """
    finish_reason: StrictStr | None = None
    """
    Why generation stopped: `stop`, `length`, `tool_calls`, `content_filter`, ...
    """
    logprobs: ChoiceLogprobs | None = None
    """
    Log probabilities, when requested.
    """


class ChunkChoice(JsonModel):
    """
    One choice of a stream chunk.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    index: StrictInt
    """
    Which choice the delta belongs to.
    """
    delta: Delta
    """
    What the chunk adds to the message.
    """
    finish_reason: StrictStr | None = None
    """
    Set on the choice's last content chunk.
    """
    logprobs: ChoiceLogprobs | None = None
    """
    Log probabilities of the tokens in this delta.
    """


class Response(JsonModel):
    """
    A `chat.completion` response body (also the object reassembled from a stream).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr
    """
    The completion's id (`chatcmpl-...`).
    """
    object: StrictStr
    """
    `chat.completion`.
    """
    created: StrictInt
    """
    Unix seconds when the completion was created.
    """
    model: StrictStr
    """
    The model that generated it.
    """
    choices: list[Choice]
    """
    The generated choices, one per `n`.
    """
    usage: Usage | None = None
    """
    Token usage.
    """
    system_fingerprint: StrictStr | None = None
    """
    Backend configuration fingerprint.
    """
    service_tier: StrictStr | None = None
    """
    The service tier that served the request.
    """


class ChatCompletionChunk(JsonModel):
    """
    One `chat.completion.chunk` of a stream.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr
    """
    The completion's id, the same in every chunk; empty in Azure's first chunk.
    """
    object: StrictStr
    """
    `chat.completion.chunk` (empty in Azure's first chunk).
    """
    created: StrictInt
    """
    Unix seconds when the completion was created (0 in Azure's first chunk).
    """
    model: StrictStr
    """
    The model; empty in Azure's first chunk.
    """
    choices: list[ChunkChoice]
    """
    Choice deltas; empty in the final usage chunk.
    """
    usage: Usage | None = None
    """
    Token usage, in the last chunk (OpenAI) or the finish chunk (DeepSeek).
    """
    system_fingerprint: StrictStr | None = None
    """
    Backend configuration fingerprint.
    """
    service_tier: StrictStr | None = None
    """
    The service tier that served the request.
    """
    error: ErrorObject | None = None
    """
    An in-stream error (OpenRouter puts it in an ordinary chunk).
    """


ChatStreamEvent = TypeAliasType(
    "ChatStreamEvent",
    Annotated[
        ChatCompletionChunk | ErrorChunk | dict[str, Any],
        Field(
            examples=[{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "gpt-4o", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":'}}]}, "finish_reason": None}]}, {"error": {"message": "Tool choice is required, but model did not call a tool", "type": "invalid_request_error", "code": "tool_use_failed"}}]
        ),
    ],
)
"""
The JSON payload of one `data:` line of a Chat Completions stream (the `data: [DONE]` sentinel that ends a stream is not JSON and not described here). A chunk, an error payload (a chunk or an `event: error` whose data has an `error` member), or any other object: unknown events are accepted, never rejected.
"""
