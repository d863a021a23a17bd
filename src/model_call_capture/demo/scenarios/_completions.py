"""What the scripted model says in the OpenAI legacy Completions dialect (`/v1/completions`).

One choice per prompt (a text, a list of texts, token ids, or a list of token-id lists)
and per `n`, each the reply's text (after the prompt with `echo`). Shaped like vLLM's
replies: with `"return_token_ids": true` each choice carries its `prompt_token_ids` (in a
stream, in the choice's first chunk only) and its generated `token_ids` (in a stream, each
chunk's); with `logprobs` (a number) the legacy lists `tokens`, `token_logprobs`,
`top_logprobs` and `text_offset`, which under `echo` cover the prompt's tokens first (the
first without a log-prob). Ids and log-probs come from the demo tokenizer (`_tokens`). A
stream sends the usage chunk when `stream_options.include_usage` asks for it.
"""

from __future__ import annotations

from typing import Any

from . import _tokens
from ._reply import CREATED, Event, Reply
from ._script import Script

__all__ = ["CompletionsReply"]


def _prompts(prompt: object) -> list[str | list[int]]:
    """The request's prompts, each a text or a list of ids."""
    if isinstance(prompt, list) and prompt and all(type(p) is int for p in prompt):
        return [list(prompt)]
    if isinstance(prompt, list) and prompt:
        return [
            p
            if isinstance(p, str)
            else [i for i in p if type(i) is int]
            if isinstance(p, list)
            else ""
            for p in prompt
        ]
    return [prompt if isinstance(prompt, str) else ""]


class CompletionsReply(Reply):
    """A reply of `POST /v1/completions`: `n` choices per prompt."""

    def __init__(self, request: dict[str, Any], body: bytes, script: Script) -> None:
        super().__init__(request, body, script)
        self.token_mode = request.get("return_token_ids") is True
        logprobs = request.get("logprobs")
        self.logprobs = logprobs if type(logprobs) is int and logprobs >= 0 else None
        self.as_ids = request.get("return_tokens_as_token_ids") is True
        self.echo = request.get("echo") is True
        n = request.get("n")
        self.n = n if type(n) is int and 1 <= n <= 8 else 1
        self.prompts = _prompts(request.get("prompt"))
        options = request.get("stream_options")
        self.usage_chunk = isinstance(options, dict) and options.get("include_usage") is True

    def _ends_with_tool_result(self, request: dict[str, Any]) -> bool:
        return False

    def generation_ids(self) -> list[int]:
        """The generated ids: the text, then `<|im_end|>` when it stopped by itself."""
        return [*_tokens.encode(self.text), *([] if self.incomplete else [_tokens.IM_END])]

    def _prompt_ids(self, prompt: str | list[int]) -> list[int]:
        return prompt if isinstance(prompt, list) else _tokens.encode(prompt)

    def _logprobs(
        self, ids: list[int], start: int, offset: int, echoed: list[int] | None = None
    ) -> Any:
        """The legacy lists of the generated `ids` (the first at generation position
        `start`), after the `echoed` prompt's ids (the first of them without a log-prob)."""
        if self.logprobs is None:
            return None
        prompt = _tokens.logprob_entries(echoed or [], 0, as_ids=self.as_ids)
        entries = prompt + _tokens.logprob_entries(ids, start, as_ids=self.as_ids)
        tokens = [e["token"] for e in entries]
        values: list[float | None] = [e["logprob"] for e in entries]
        if prompt:
            values[0] = None
        offsets = []
        for token in tokens:
            offsets.append(offset)
            offset += len(token)
        tops = [None if v is None else {t: v} for t, v in zip(tokens, values, strict=True)]
        return {
            "text_offset": offsets,
            "token_logprobs": values,
            "tokens": tokens,
            "top_logprobs": tops,
        }

    def _choices(self) -> list[tuple[int, str | list[int]]]:
        return [
            (p * self.n + k, prompt) for p, prompt in enumerate(self.prompts) for k in range(self.n)
        ]

    def json(self) -> dict[str, Any]:
        """The `text_completion`."""
        choices = []
        generated = self.generation_ids()
        for index, prompt in self._choices():
            prompt_ids = self._prompt_ids(prompt)
            echoed = prompt if self.echo and not self.token_mode and isinstance(prompt, str) else ""
            choice: dict[str, Any] = {
                "index": index,
                "text": echoed + self.text,
                "logprobs": self._logprobs(generated, 0, 0, prompt_ids if self.echo else None),
                "finish_reason": self._finish_reason(),
                "stop_reason": None,
            }
            if self.token_mode:
                choice["prompt_token_ids"] = prompt_ids
                choice["token_ids"] = generated
            choices.append(choice)
        return self._object(choices, usage=self._usage())

    def events(self) -> list[Event]:
        """Chunks of every choice, the usage chunk when asked for, `[DONE]`; or the scripted error."""
        chunks: list[Any] = []
        for index, prompt in self._choices():
            prompt_ids = self._prompt_ids(prompt)
            position = offset = 0
            for k, delta in enumerate(self.deltas()):
                ids = _tokens.encode(delta)
                choice: dict[str, Any] = {"index": index, "text": delta}
                if k == 0 and self.echo:
                    echoed = "" if self.token_mode or not isinstance(prompt, str) else prompt
                    choice["text"] = echoed + delta
                    choice["logprobs"] = self._logprobs(ids, 0, 0, prompt_ids)
                else:
                    choice["logprobs"] = self._logprobs(ids, position, offset)
                choice |= {"finish_reason": None, "stop_reason": None}
                if self.token_mode:
                    choice["prompt_token_ids"] = prompt_ids if k == 0 else None
                    choice["token_ids"] = ids
                position += len(ids)
                offset += len(choice["text"])
                chunks.append(self._object([choice]))
            if "error_event" in self.script or "failed" in self.script:
                failed: list[Event] = [(None, c) for c in [*chunks, _ERROR]]
                return [*failed, (None, b"[DONE]")]
            tail = [] if self.incomplete else [_tokens.IM_END]
            last: dict[str, Any] = {"index": index, "text": ""}
            last["logprobs"] = self._logprobs(tail, position, offset)
            last |= {"finish_reason": self._finish_reason(), "stop_reason": None}
            if self.token_mode:
                last |= {"prompt_token_ids": None, "token_ids": tail}
            chunks.append(self._object([last]))
        if self.usage_chunk:
            chunks.append(self._object([], usage=self._usage()))
        return [*[(None, c) for c in chunks], (None, b"[DONE]")]

    def delta_event(self, text: str, n: int) -> Event:
        """One more chunk of text."""
        return None, self._object(
            [{"index": 0, "text": text, "logprobs": None, "finish_reason": None}]
        )

    def _usage(self) -> dict[str, Any]:
        prompt = sum(len(self._prompt_ids(p)) for p in self.prompts)
        generated = len(self.generation_ids()) * self.n * len(self.prompts)
        return {
            "prompt_tokens": prompt,
            "total_tokens": prompt + generated,
            "completion_tokens": generated,
        }

    def _finish_reason(self) -> str:
        return "length" if self.incomplete else "stop"

    def _object(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": f"cmpl-{self.key}",
            "object": "text_completion",
            "created": CREATED,
            "model": self.model,
            "choices": choices,
            **extra,
        }


_ERROR = {
    "error": {
        "message": "The server had an error while processing your request.",
        "type": "InternalServerError",
        "param": None,
        "code": 500,
    }
}
