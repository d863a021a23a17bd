"""The capturing reverse proxy behind `mcc serve`.

`ProxyApp` is a plain ASGI app that forwards every HTTP request to an upstream OpenAI- or
Anthropic-compatible server and streams the response back chunk by chunk, byte for byte
(compressed bodies stay compressed: it forwards `aiter_raw()`), and the request body to
the upstream as it arrives. `create_proxy_app` wraps it in `CaptureMiddleware`, which
strips `/ng-rollout/<id>` and records the prefixed calls, behind `TargetGuard`; the proxy
itself never records anything. What it trusts and what it bounds is in docs/security.md.

The modules, one concern each:

- `_app`: `ProxyApp` (forwarding, the replies to upstream failures) and `create_proxy_app`;
- `_upstream`: the operator's upstream URL, its credentials and how it is named (`display`);
- `_target`: which upstream path and query a request target may reach (pure);
- `_guard`: `TargetGuard`, refusing bad targets before the capture sees them;
- `_headers`: the headers that cross, and how a message's length is framed;
- `_body`: the request body, streamed and bounded (size, idle time);
- `_reply`: the error replies the proxy makes itself;
- `_admission`: which connections stay open (the cap, derived from the descriptor limit),
  decided at accept; accept failures counted;
- `_server`: the uvicorn side: admission at accept, a deadline on request heads;
- `_logging`: logs written off the event loop, bounded, query values hidden.
"""

from __future__ import annotations

from ._admission import FDS_PER_CONNECTION, descriptor_cap, descriptor_limit, descriptors_needed
from ._app import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_TIMEOUT_S,
    ProxyApp,
    create_proxy_app,
)
from ._guard import TargetGuard
from ._headers import HOP_BY_HOP_HEADERS
from ._logging import BoundedHandler, HiddenQueryValues
from ._server import (
    DEFAULT_HEAD_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    ProxyServer,
    head_deadline_protocol,
    server_options,
)
from ._upstream import Upstream

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEAD_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_TIMEOUT_S",
    "FDS_PER_CONNECTION",
    "HOP_BY_HOP_HEADERS",
    "BoundedHandler",
    "HiddenQueryValues",
    "ProxyApp",
    "ProxyServer",
    "TargetGuard",
    "Upstream",
    "create_proxy_app",
    "descriptor_cap",
    "descriptor_limit",
    "descriptors_needed",
    "head_deadline_protocol",
    "server_options",
]
