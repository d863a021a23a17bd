# Generated from schemas/v1/dialects/openai-completions.schema.json by `python codegen/generate.py`; do not edit by hand.
from __future__ import annotations

from typing import Annotated, Any

from .._base import JsonModel
from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
from typing_extensions import TypeAliasType

OpenAICompletions = TypeAliasType(
    "OpenAICompletions", Annotated[Any, Field(title="OpenAICompletions")]
)
"""
(1.2) OpenAI legacy Completions (`POST /v1/completions`), as far as model-call-capture reads it: the request (`prompt` as a text, texts, token ids or token-id lists), the `text_completion` response (also the object reassembled from a stream) with the legacy log-probs (`tokens`, `token_logprobs`, `top_logprobs`, `text_offset`) and vLLM's `return_token_ids` fields on each choice, the error envelope, and the stream's chunks and error payloads. Usage, the error envelope and the stream options are those of Chat Completions. Every object is open: servers add fields (`stop_reason`, `prompt_logprobs`, `kv_transfer_params`, ...) and a capture must never reject one. Bootstrapped from `msgspec.json.schema` of the Structs in `model_call_capture.dialects.completions`; tests/dialects/test_completions.py proves the two agree.
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


class Logprobs(JsonModel):
    """
    Log-probabilities of a choice's tokens, as parallel lists (the legacy shape).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    tokens: list[StrictStr] | None = None
    """
    Each token's text (vLLM `return_tokens_as_token_ids`: `token_id:N`).
    """
    token_logprobs: list[StrictFloat | None] | None = None
    """
    Each token's log-probability; null where none is known (the first token of an echoed prompt).
    """
    top_logprobs: list[dict[str, StrictFloat] | None] | None = None
    """
    The most likely tokens at each position, token text -> log-probability.
    """
    text_offset: list[StrictInt] | None = None
    """
    Each token's character offset in the choice's text.
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


class StreamChoice(JsonModel):
    """
    One choice of a stream chunk: what it adds.
    """

    model_config = ConfigDict(
        extra="allow",
    )
    index: StrictInt
    """
    Which choice the chunk belongs to.
    """
    text: StrictStr
    """
    A fragment of the text; fragments are concatenated.
    """
    finish_reason: StrictStr | None = None
    """
    Set on the choice's last chunk.
    """
    logprobs: Logprobs | None = None
    """
    Log-probabilities of this chunk's tokens; lists are concatenated.
    """
    stop_reason: StrictInt | StrictStr | None = None
    """
    vLLM: the stop string or token id that ended generation (last chunk).
    """
    prompt_token_ids: list[StrictInt] | None = None
    """
    vLLM `return_token_ids`: the prompt's token ids, in the choice's first chunk only.
    """
    token_ids: list[StrictInt] | None = None
    """
    vLLM `return_token_ids`: the token ids generated in this chunk.
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
    A `POST /v1/completions` request body (the fields capture reads; others pass).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    model: StrictStr | None = None
    """
    The model to use.
    """
    prompt: StrictStr | list[Any] | None = None
    """
    The prompt(s): a text, a list of texts, a list of token ids, or a list of token-id lists.
    """
    suffix: StrictStr | None = None
    """
    Text that comes after the completion (insertion).
    """
    echo: StrictBool | None = None
    """
    Return the prompt before the completion, in `text` and in the log-probs.
    """
    n: StrictInt | None = None
    """
    How many choices to generate per prompt.
    """
    best_of: StrictInt | None = None
    """
    Candidates generated server-side per prompt, of which `n` are returned.
    """
    max_tokens: StrictInt | None = None
    """
    Cap on generated tokens.
    """
    temperature: StrictFloat | None = None
    """
    Sampling temperature.
    """
    logprobs: StrictInt | None = None
    """
    Return the log-probabilities of this many most likely tokens at each position.
    """
    stream: StrictBool | None = None
    """
    Stream the answer as Server-Sent Events.
    """
    stream_options: StreamOptions | None = None
    """
    Options of a streamed request.
    """
    stop: StrictStr | list[StrictStr] | None = None
    """
    Sequences where generation stops.
    """
    return_token_ids: StrictBool | None = None
    """
    vLLM: return the prompt's and each choice's generated token ids.
    """
    return_tokens_as_token_ids: StrictBool | None = None
    """
    vLLM: spell the log-probs' tokens as `token_id:N`.
    """
    prompt_logprobs: StrictInt | None = None
    """
    vLLM: return the log-probabilities of the prompt's tokens (JSON replies only).
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
    Position of the choice (prompt index x `n` + choice number).
    """
    text: StrictStr
    """
    The generated text (with `echo`, the prompt first).
    """
    finish_reason: StrictStr | None = None
    """
    Why generation stopped: `stop`, `length`, `content_filter`, ...
    """
    logprobs: Logprobs | None = None
    """
    Log-probabilities, when requested.
    """
    stop_reason: StrictInt | StrictStr | None = None
    """
    vLLM: the stop string or token id that ended generation.
    """
    prompt_token_ids: list[StrictInt] | None = None
    """
    vLLM `return_token_ids`: the prompt's token ids.
    """
    token_ids: list[StrictInt] | None = None
    """
    vLLM `return_token_ids`: the generated token ids.
    """
    prompt_logprobs: list[dict[str, Any] | None] | None = None
    """
    vLLM `prompt_logprobs`: per prompt token, its candidates by token id (null for the first).
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


class CompletionChunk(JsonModel):
    """
    One chunk of a stream (also a `text_completion` object).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr
    """
    The completion's id, the same in every chunk.
    """
    object: StrictStr
    """
    `text_completion`.
    """
    created: StrictInt
    """
    Unix seconds when the completion was created.
    """
    model: StrictStr
    """
    The model.
    """
    choices: list[StreamChoice]
    """
    Choice fragments; empty in the final usage chunk.
    """
    usage: Usage | None = None
    """
    Token usage, in the last chunk (`stream_options.include_usage`).
    """
    system_fingerprint: StrictStr | None = None
    """
    Backend configuration fingerprint.
    """
    error: ErrorObject | None = None
    """
    An in-stream error carried in an ordinary chunk.
    """


CompletionStreamEvent = TypeAliasType(
    "CompletionStreamEvent",
    Annotated[
        CompletionChunk | ErrorChunk | dict[str, Any],
        Field(
            examples=[{"id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": "Qwen/Qwen3-0.6B", "choices": [{"index": 0, "text": " Paris", "logprobs": None, "finish_reason": None, "stop_reason": None, "prompt_token_ids": [785, 6722, 315, 9625, 374], "token_ids": [12095]}]}, {"error": {"message": "The model generated an invalid token.", "type": "InternalServerError", "code": 500, "param": None}}]
        ),
    ],
)
"""
The JSON payload of one `data:` line of a Completions stream (the `data: [DONE]` sentinel that ends a stream is not JSON and not described here). A chunk, an error payload (an object with an `error` member, as vLLM sends when generation fails mid-stream), or any other object: unknown events are accepted, never rejected.
"""


class Response(JsonModel):
    """
    A `text_completion` response body (also the object reassembled from a stream).
    """

    model_config = ConfigDict(
        extra="allow",
    )
    id: StrictStr
    """
    The completion's id (`cmpl-...`).
    """
    object: StrictStr
    """
    `text_completion`.
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
    The generated choices: `n` per prompt.
    """
    usage: Usage | None = None
    """
    Token usage, summed over every prompt and choice.
    """
    system_fingerprint: StrictStr | None = None
    """
    Backend configuration fingerprint.
    """
