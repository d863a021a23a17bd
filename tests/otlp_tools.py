"""An OTLP/HTTP receiver for the tests: it decodes what the SDK's exporter posts and counts
every span id it receives, and may relay each request to a real backend (Phoenix).

    receiver = Receiver(relay_to=phoenix_url)
    with serve(receiver) as server:
        export(..., format_options={"endpoint": server.url})
    assert receiver.span_ids == [...]   # in the order received, repeats kept

So a test sees what was sent (a backend that keys spans by id, as Phoenix does, stores a
span sent twice once, and cannot tell). The requests are real: the OpenTelemetry SDK's
exporter over HTTP to a real uvicorn server; the protobuf is decoded by
`opentelemetry-proto`, the exporter's own dependency.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx

__all__ = ["Receiver"]


class Receiver:
    """An ASGI app taking OTLP/HTTP trace exports: `span_ids` (hex), `trace_ids` by span id."""

    def __init__(self, *, relay_to: str | None = None) -> None:
        self.relay_to = relay_to
        """A backend's base URL each request is posted on to (its answer is the answer)."""
        self.span_ids: list[str] = []
        """Every span id received, in order, repeats kept."""
        self.trace_ids: dict[str, str] = {}
        """The trace id of each span id received."""
        self.refuse = False
        """Answer 400 to every request, taking nothing (an endpoint that fails the send)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, reply = 400, b""
        if not self.refuse:
            status, reply = await self._take(bytes(body), dict(scope["headers"]))
        headers = [(b"content-type", b"application/x-protobuf")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": reply})

    async def _take(self, body: bytes, headers: dict[bytes, bytes]) -> tuple[int, bytes]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        status, reply = 200, b""
        if self.relay_to is not None:
            relayed = {
                k.decode(): headers[k].decode()
                for k in (b"content-type", b"content-encoding")
                if k in headers
            }
            async with httpx.AsyncClient() as client:
                answer = await client.post(
                    f"{self.relay_to}/v1/traces", content=body, headers=relayed, timeout=30
                )
            status, reply = answer.status_code, answer.content
        if status == 200:
            if headers.get(b"content-encoding") == b"gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        span_id = span.span_id.hex()
                        self.span_ids.append(span_id)
                        self.trace_ids[span_id] = span.trace_id.hex()
        return status, reply
