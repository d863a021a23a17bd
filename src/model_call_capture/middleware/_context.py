"""What the middleware tells the app about a captured call, and what the app may tell it.

Two things travel from the app to the capture line, both through the `CaptureContext` at
`scope["extensions"]["model_call_capture"]`:

- `error_category`, set on the context itself, overrides the derived category;
- the execution facts of schema 1.1 (`upstream_attempted`, `response_source`,
  `upstream_status_code`, `local_response_reason`), set on the `ModelExecutionOutcome` that
  `start_model_execution(request_or_scope, upstream_attempted=...)` returns, as in NeMo
  Gym 0.7.0. The middleware reads them when it builds the line (after the response ended)
  and writes all four when the app started an execution, none when it did not.

The app's values are not trusted: `execution_facts` keeps a value only when it has the
type the schema gives it (checked by exact type, so no code of the app's runs while the
line is built) and records a `field_dropped` gap naming each value it refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..contracts import Dialect, ObservationGap, ResponseSource

__all__ = [
    "CAPTURE_EXTENSION",
    "CONTEXT_LENGTH_EXCEEDED",
    "CaptureContext",
    "ExecutionFacts",
    "ModelExecutionOutcome",
    "execution_facts",
    "start_model_execution",
]

CAPTURE_EXTENSION = "model_call_capture"
"""Key of the `CaptureContext` in `scope["extensions"]` of a captured request."""

CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
"""The `local_response_reason` that also makes the call's `error_category` this value (Gym)."""

MAX_REASON_CHARS = 256
"""Longest `local_response_reason` kept; a longer one is dropped with a gap (a reason, not a body)."""

_FIELDS = ("upstream_attempted", "response_source", "upstream_status_code", "local_response_reason")
_SOURCES: tuple[ResponseSource, ...] = ("upstream", "local")


class ModelExecutionOutcome:
    """How the model server executed one call: what the app says, for the capture line.

    Returned by `start_model_execution`; the handler fills it in while it serves the call
    and the middleware reads it when the call ends (set it before the response ends).
    Attributes and, for code written for NeMo Gym (which hands out a mapping), items
    (`execution["response_source"] = "local"`) both work; only the four names below exist.
    The types are checked again when the line is built: a value of another type is
    written as null, with a `field_dropped` gap.
    """

    __slots__ = _FIELDS

    def __init__(self, *, upstream_attempted: bool) -> None:
        self.upstream_attempted: bool | None = upstream_attempted
        """Whether the server tried its upstream for this call."""
        self.response_source: ResponseSource | None = None
        """`"upstream"` when the upstream answered, `"local"` when the server answered itself."""
        self.upstream_status_code: int | None = None
        """The upstream's HTTP status (it may differ from the status the client got)."""
        self.local_response_reason: str | None = None
        """Why the server answered locally, e.g. `"context_length_exceeded"`."""

    def __getitem__(self, name: str) -> Any:
        if name not in _FIELDS:
            raise KeyError(name)
        return getattr(self, name)

    def __setitem__(self, name: str, value: Any) -> None:
        if name not in _FIELDS:
            raise KeyError(name)
        setattr(self, name, value)

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"ModelExecutionOutcome({values})"


class CaptureContext:
    """Per-request capture facts handed to the app at `scope["extensions"]["model_call_capture"]`.

    An app (for example a reverse proxy) may set `error_category` to say why a call
    failed when the status alone cannot, e.g. `"connection"` or `"timeout"` when its
    upstream failed and it answered 502 or 504 itself. The value it sets wins over the
    category the middleware would derive. The execution facts go through
    `start_model_execution`.
    """

    __slots__ = ("dialect", "error_category", "execution", "model_call_id", "rollout_id")

    def __init__(self, rollout_id: str, model_call_id: str, dialect: Dialect) -> None:
        self.rollout_id = rollout_id
        """The rollout the call is captured under."""
        self.model_call_id = model_call_id
        """The id its capture line will carry."""
        self.dialect: Dialect = dialect
        """The dialect of the observed path."""
        self.error_category: str | None = None
        """Set by the app to override the derived `error_category`; None to derive it."""
        self.execution: ModelExecutionOutcome | None = None
        """What `start_model_execution` handed out for this call; None until it is called."""


def start_model_execution(
    request_or_scope: Any, *, upstream_attempted: bool
) -> ModelExecutionOutcome:
    """Start the execution record of the current model call and return it for the handler to fill.

    `request_or_scope` is the Starlette / FastAPI `Request` of the call (anything with a
    `scope` mapping) or its raw ASGI scope. The returned `ModelExecutionOutcome` starts with
    `upstream_attempted` and nothing else known; set `response_source`,
    `upstream_status_code` and `local_response_reason` as the call unfolds. The capture
    middleware writes the four fields on the call's line (a `local_response_reason` of
    `context_length_exceeded` also makes `error_category` `context_length_exceeded`, as
    in NeMo Gym). A second call for the same request returns the same object with
    `upstream_attempted` replaced. For a request that is not captured (no prefix, capture
    off, an unobserved path) it returns an object nobody reads, so handlers need no branch.
    """
    try:
        scope = getattr(request_or_scope, "scope", request_or_scope)
    except Exception:  # a request object that cannot give its scope: nothing to attach to
        scope = None
    context = _context_of(scope)
    if context is None:
        return ModelExecutionOutcome(upstream_attempted=upstream_attempted)
    execution = context.execution
    if (
        type(execution) is not ModelExecutionOutcome
    ):  # none yet (or the app put something else there)
        execution = context.execution = ModelExecutionOutcome(upstream_attempted=upstream_attempted)
    else:
        execution.upstream_attempted = upstream_attempted
    return execution


def _context_of(scope: Any) -> CaptureContext | None:
    if not isinstance(scope, Mapping):
        return None
    extensions = scope.get("extensions")
    if not isinstance(extensions, Mapping):
        return None
    context = extensions.get(CAPTURE_EXTENSION)
    return context if isinstance(context, CaptureContext) else None


@dataclass(slots=True, frozen=True)
class ExecutionFacts:
    """The execution fields of a line, each a valid value or None, and the gaps of the rest."""

    upstream_attempted: bool | None = None
    response_source: ResponseSource | None = None
    upstream_status_code: int | None = None
    local_response_reason: str | None = None
    gaps: tuple[ObservationGap, ...] = ()


def execution_facts(execution: Any) -> ExecutionFacts | None:
    """The valid values of what the app set (None when it started no execution); pure.

    A value of the wrong type or outside its set is dropped (null on the line) with a
    `field_dropped` gap; types are checked exactly (`type(v) is bool`), so a subclass
    with its own `__eq__` or `__str__` is never called.
    """
    if execution is None:
        return None
    if type(execution) is not ModelExecutionOutcome:  # replaced by the app: nothing of it is read
        detail = f"execution: expected a ModelExecutionOutcome, got {_type_name(type(execution))}"
        return ExecutionFacts(gaps=(ObservationGap(code="field_dropped", detail=detail),))
    values: dict[str, Any] = {}
    gaps: list[ObservationGap] = []
    for name in _FIELDS:
        value = _slot(execution, name)
        why = _invalid(name, value)
        if why is None:
            values[name] = value
        else:
            gaps.append(ObservationGap(code="field_dropped", detail=f"{name}: {why}"))
    return ExecutionFacts(**values, gaps=tuple(gaps))


def _slot(execution: ModelExecutionOutcome, name: str) -> Any:
    try:
        return object.__getattribute__(execution, name)
    except AttributeError:  # the app deleted it
        return None


def _invalid(name: str, value: Any) -> str | None:
    """Why `value` cannot be field `name` (None when it can)."""
    if value is None:
        return None
    kind = type(value)
    if name == "upstream_attempted":
        return None if kind is bool else _got("true or false", kind)
    if name == "response_source":
        if kind is str and value in _SOURCES:
            return None
        return _got('"upstream" or "local"', kind, value if kind is str else None)
    if name == "upstream_status_code":
        if kind is int and 100 <= value <= 999:
            return None
        return _got("an HTTP status (100-999)", kind, value if kind is int else None)
    if kind is not str:
        return _got("a string", kind)
    if len(value) > MAX_REASON_CHARS:
        return f"expected at most {MAX_REASON_CHARS} characters, got {len(value)}"
    return None


def _got(expected: str, kind: type, value: str | int | None = None) -> str:
    if value is None:
        return f"expected {expected}, got {_type_name(kind)}"
    shown = repr(value[:40] + "...") if isinstance(value, str) and len(value) > 40 else repr(value)
    return f"expected {expected}, got {shown}"


def _type_name(kind: type) -> str:
    # The C-level name: a metaclass's own `__name__` (app code) is never called.
    name = type.__dict__["__name__"].__get__(kind, type)
    return name if name.isidentifier() and len(name) <= 60 else "object"
