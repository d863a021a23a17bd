"""The pure-ASGI capture middleware: every prefixed model call, recorded without changing it.

`CaptureMiddleware` sits in front of a model server (any ASGI app). For each request it

- strips `/ng-rollout/<rollout_id>` from the path, always (also when capture is off), so
  the app routes `/v1/...` as usual; `root_path` is left alone;
- captures only prefixed calls with a valid rollout id to an observed path
  (`/v1/responses`, `/v1/chat/completions`, `/v1/messages`); everything else passes
  through untouched;
- tees the request body from `receive` and the response from `send`, forwarding every
  message as it comes (same bytes, same order, no buffering), and holds only the end of
  the response until the call's line is durable;
- keeps what it captures bounded: each body decoded (both directions) and cut at
  `capture_max_bytes`, each raw text cut at the same written size, and all calls together
  within `capture_memory_budget_bytes`; what a line leaves out, it names in `gaps`;
- writes one `CaptureLine` per call to the `CaptureStore` in a worker thread, never on the
  event loop; a capture failure is logged once per rollout, marks the rollout incomplete
  where it can, and never fails the call.

An app may override the derived `error_category` through the `CaptureContext` at
`scope["extensions"]["model_call_capture"]`, and say how it executed the call
(`upstream_attempted`, `response_source`, `upstream_status_code`,
`local_response_reason`) through the `ModelExecutionOutcome` that
`start_model_execution(request, upstream_attempted=...)` returns. The line also carries
the request's `client_session_id` (its one distinct `x-session-id` value), and a 3xx
`Location` pointing at this server keeps the rollout prefix (`_redirect`).

The modules, one concern each:

- `_app`: the ASGI shell (`CaptureMiddleware`, `install_model_call_capture`);
- `_context`: `CaptureContext`, what the app sees of a captured call, and
  `start_model_execution` / `ModelExecutionOutcome`, what the app may tell the line;
- `_redirect`: a redirect's `Location` kept under the rollout prefix (pure);
- `_call`: one call's ASGI routing, the tee of its messages and the hold of its end (the
  durability promise and failures are described there), and its `CallFacts`;
- `_response`: the response's capture buffer, decoded, bounded, reassembled (no ASGI);
- `_ends`: whether a stream chunk may complete its terminal event (the marker search);
- `_request`: the request side of a call, its body decoded and bounded;
- `_budget`: the memory budget all captures in flight share;
- `_decoding`: content decoding of captured bodies, one decoder per encoding;
- `_outcome`: the `error_category` of a status, an exception, a reassembled stream (pure);
- `_line`: `CallFacts`, what a line is built from, and the `CaptureLine` it makes, raw
  texts bounded (pure);
- `_writer`: the handoff of finished calls to the write threads, and log-once.
"""

from __future__ import annotations

from ..rollout_ids import ROLLOUT_PREFIX
from ._app import CaptureMiddleware, install_model_call_capture
from ._context import (
    CAPTURE_EXTENSION,
    CaptureContext,
    ModelExecutionOutcome,
    start_model_execution,
)
from ._outcome import error_category_for_status

__all__ = [
    "CAPTURE_EXTENSION",
    "ROLLOUT_PREFIX",
    "CaptureContext",
    "CaptureMiddleware",
    "ModelExecutionOutcome",
    "error_category_for_status",
    "install_model_call_capture",
    "start_model_execution",
]
