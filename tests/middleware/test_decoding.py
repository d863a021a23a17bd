"""Content decoding: each decoder alone (bounded output, bad input), then through the middleware."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any

import brotli
import pytest

from memory_tools import traced_peak
from model_call_capture.middleware._decoding import (
    BrotliDecoder,
    ContentDecoder,
    DecodeError,
    DeflateDecoder,
    GzipDecoder,
    content_encodings,
    decoders_for,
)

from .conftest import (
    DIALECTS,
    TERMINALS,
    body_for,
    capturing,
    chat_body,
    new_rollout,
    only_line,
    post,
    read_lines,
)

TEXT = b'{"text":"' + b"All work and no play makes a dull model. " * 200 + b'"}'
ENCODE = {
    "gzip": lambda data: gzip.compress(data, mtime=0),
    "deflate": zlib.compress,
    "raw deflate": lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS),
    "br": brotli.compress,
}
DECODER = {
    "gzip": GzipDecoder,
    "deflate": DeflateDecoder,
    "raw deflate": DeflateDecoder,
    "br": BrotliDecoder,
}


def decode_in_pieces(decoder: ContentDecoder, data: bytes, size: int, limit: int) -> bytes:
    out = bytearray()
    for start in range(0, len(data), size):
        out += decoder.decode(data[start : start + size], limit)
    return bytes(out)


# Raw deflate is told from zlib-wrapped deflate by the first piece, so it needs 2 bytes.
PIECES = [(c, p) for c in ENCODE for p in (1, 7, 1 << 20) if (c, p) != ("raw deflate", 1)]


@pytest.mark.parametrize(("coding", "piece"), PIECES)
def test_a_decoder_gives_back_the_body_in_any_pieces(coding: str, piece: int) -> None:
    decoder = DECODER[coding]()
    assert decode_in_pieces(decoder, ENCODE[coding](TEXT), piece, len(TEXT) + 1) == TEXT


@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw deflate"])
def test_a_zlib_decoder_gives_at_most_one_byte_past_its_limit(coding: str) -> None:
    # A body that expands far past the limit: the decoder signals "past" with one more byte.
    bomb = ENCODE[coding](b"\0" * (4 << 20))
    out = DECODER[coding]().decode(bomb, 1000)
    assert len(out) == 1001


def test_the_brotli_decoder_stops_within_one_output_block_past_its_limit() -> None:
    # brotli's output limit is soft: it finishes the block it is writing.
    bomb = brotli.compress(b"\0" * (4 << 20))
    out = BrotliDecoder().decode(bomb, 1000)
    assert 1000 < len(out) <= 64 * 1024


@pytest.mark.parametrize("coding", list(ENCODE))
def test_a_body_that_is_not_in_its_encoding_raises_decode_error(coding: str) -> None:
    with pytest.raises(DecodeError):
        DECODER[coding]().decode(b"\xff\xfe this is not compressed at all \xff" * 4, 1 << 20)


def test_deflate_falls_back_to_raw_deflate_only_at_the_start() -> None:
    decoder = DeflateDecoder()
    wrapped = zlib.compress(TEXT)
    assert decoder.decode(wrapped[:10], 1 << 20) + decoder.decode(wrapped[10:], 1 << 20) == TEXT
    decoder = DeflateDecoder()
    decoder.decode(wrapped[:10], 1 << 20)
    with pytest.raises(DecodeError):
        decoder.decode(b"\xff" * 20, 1 << 20)


@pytest.mark.parametrize(
    ("encodings", "decoders"),
    [
        ([], []),
        ([b"identity"], []),
        ([b"gzip"], [GzipDecoder]),
        ([b"x-gzip"], [GzipDecoder]),
        ([b"deflate"], [DeflateDecoder]),
        ([b"br"], [BrotliDecoder]),
        ([b"gzip", b"br"], [BrotliDecoder, GzipDecoder]),  # applied last, undone first
        ([b"gzip", b"zstd"], None),
        ([b"compress"], None),
        ([b"gzip", b"identity"] * 4, [GzipDecoder] * 4),
        ([b"gzip"] * 5, None),  # more codings than any server applies: not decoded
    ],
)
def test_decoders_for_a_content_encoding(
    encodings: list[bytes], decoders: list[type[ContentDecoder]] | None
) -> None:
    found = decoders_for(encodings)
    assert (None if found is None else [type(d) for d in found]) == decoders


# -- through the middleware ------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
@pytest.mark.parametrize("dialect", DIALECTS)
def test_encoded_responses_are_decoded_for_capture_and_forwarded_encoded(
    coding: str, dialect: str, tmp_path: Path
) -> None:
    app = capturing(tmp_path)
    rollout = new_rollout()
    decode = {"gzip": gzip.decompress, "deflate": zlib.decompress, "br": brotli.decompress}[coding]
    decoded = []
    for stream in (False, True):
        reply = post(app, rollout, body_for(dialect, coding, stream=stream), dialect)
        assert reply.headers["content-encoding"] == coding
        decoded.append(decode(reply.body))  # the client got encoded bytes
    first, second = read_lines(tmp_path, rollout)
    assert first["response"] == json.loads(decoded[0])
    assert first["error_category"] is None and second["error_category"] is None
    assert second["response"] is not None and "response_raw" not in second
    assert TERMINALS[dialect] in decoded[1]


def test_gzip_stream_raw_text_is_the_decoded_sse(tmp_path: Path) -> None:
    rollout = new_rollout()
    app = capturing(tmp_path, capture_stream_raw="always")
    reply = post(app, rollout, chat_body("gzip+split", stream=True))
    line = only_line(tmp_path, rollout)
    assert line["response_raw"] == gzip.decompress(reply.body).decode()
    assert line["response"]["choices"][0]["message"]["content"].startswith("It is 18")


def test_an_unknown_content_encoding_is_forwarded_and_recorded_without_a_body(
    tmp_path: Path,
) -> None:
    payload = b"\x28\xb5\x2f\xfd not really zstd"

    async def zstd_app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-encoding", b"zstd")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    rollout = new_rollout()
    reply = post(capturing(tmp_path, app=zstd_app), rollout, chat_body())
    assert reply.body == payload
    line = only_line(tmp_path, rollout)
    assert (line["status_code"], line["error_category"], line["response"]) == (
        200,
        "capture_parse_error",
        None,
    )
    assert "response_raw" not in line
    assert line["latency_ttft_ms"] is not None
    assert line["gaps"] == [
        {"code": "response_undecodable", "detail": "content-encoding zstd is not supported"}
    ]


def test_content_encodings_are_read_from_every_header_in_order() -> None:
    headers = [
        (b"Content-Encoding", b"gzip, BR"),
        (b"content-type", b"application/json"),
        (b"content-encoding", b" identity ,"),
    ]
    assert content_encodings(headers) == [b"gzip", b"br", b"identity"]
    assert content_encodings(None) == []


# -- encoded requests ------------------------------------------------------------------------


class EchoApp:
    """Reads the whole request (recording its bytes as received), then replies with JSON."""

    def __init__(self) -> None:
        self.received = bytearray()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            self.received += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b'{"id":"c1"}'})


def _pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize(("coding", "piece"), [(c, p) for c in ENCODE for p in (3, 1 << 20)])
def test_encoded_requests_are_decoded_for_capture_and_reach_the_app_encoded(
    coding: str, piece: int, tmp_path: Path
) -> None:
    request = chat_body(metadata={"note": "All work and no play. " * 50})
    encoded = ENCODE[coding](json.dumps(request).encode())
    app = EchoApp()
    rollout = new_rollout()
    header = b"deflate" if "deflate" in coding else coding.encode()
    reply = post(
        capturing(tmp_path, app=app),
        rollout,
        _pieces(encoded, piece),
        headers=[(b"content-encoding", header)],
    )
    assert reply.status == 200 and bytes(app.received) == encoded
    line = only_line(tmp_path, rollout)
    assert line["request"] == request
    assert "request_raw" not in line and "gaps" not in line


@pytest.mark.parametrize(
    ("body", "header", "detail"),
    [
        (b"\x28\xb5\x2f\xfd\x00 zstd frame", b"zstd", "content-encoding zstd is not supported"),
        (b"\x28\xb5\x2f\xfd", b"gzip, zstd", "content-encoding gzip, zstd is not supported"),
        (
            b"\x1f\x8b\x08\x00 not deflate data",
            b"gzip",
            "content-encoding gzip does not decode: Error -3 while decompressing data: "
            "invalid code lengths set",
        ),
    ],
    ids=["zstd", "gzip then zstd", "corrupt gzip"],
)
def test_an_undecodable_request_is_recorded_as_such_without_its_bytes(
    body: bytes, header: bytes, detail: str, tmp_path: Path
) -> None:
    app = EchoApp()
    rollout = new_rollout()
    reply = post(
        capturing(tmp_path, app=app), rollout, body, headers=[(b"content-encoding", header)]
    )
    assert reply.status == 200 and bytes(app.received) == body
    line = only_line(tmp_path, rollout)
    assert (line["request"], line["response"], line["error_category"]) == (None, {"id": "c1"}, None)
    assert "request_raw" not in line
    assert line["gaps"] == [{"code": "request_undecodable", "detail": detail}]


@pytest.mark.parametrize("coding", list(ENCODE))
def test_an_encoded_request_bomb_is_cut_at_the_cap(coding: str, tmp_path: Path) -> None:
    bomb = ENCODE[coding](b'{"pad":"' + b"a" * (8 << 20) + b'"}')
    app = EchoApp()
    rollout = new_rollout()
    header = b"deflate" if "deflate" in coding else coding.encode()
    cap = 64 * 1024
    post(
        capturing(tmp_path, app=app, capture_max_bytes=cap),
        rollout,
        bomb,
        headers=[(b"content-encoding", header)],
    )
    assert bytes(app.received) == bomb
    line = only_line(tmp_path, rollout)
    assert line["capture_cut"] is True and line["request"] is None
    assert line["request_raw"] == '{"pad":"' + "a" * (cap - 8)


def _nested(data: bytes, layers: int) -> bytes:
    for _ in range(layers):
        data = gzip.compress(data, compresslevel=1, mtime=0)
    return data


LAYERS = 3000
TOO_MANY = (
    "content-encoding gzip, gzip, gzip, gzip, ... (3000 codings, more than the 4 the "
    "capture decodes) is not supported"
)


def test_a_request_of_thousands_of_content_codings_is_not_decoded(tmp_path: Path) -> None:
    # Each coding is one decoder with its own window (about 40 KB for gzip, more for br):
    # a 94 KB request of 3,000 nested gzip layers (an 18 KB header) took 69 MB of the
    # server's memory, outside the capture memory budget, for as long as the call lasted.
    body = _nested(json.dumps(chat_body()).encode(), LAYERS)
    app = EchoApp()
    rollout = new_rollout()
    headers = [(b"content-encoding", b", ".join([b"gzip"] * LAYERS))]
    reply, peak = traced_peak(
        lambda: post(capturing(tmp_path, app=app), rollout, body, headers=headers)
    )
    assert reply.status == 200 and bytes(app.received) == body
    line = only_line(tmp_path, rollout)
    assert (line["request"], line["response"]) == (None, {"id": "c1"})
    assert line["gaps"] == [{"code": "request_undecodable", "detail": TOO_MANY}]
    assert peak < 16 << 20


def test_a_response_of_thousands_of_content_codings_is_not_decoded(tmp_path: Path) -> None:
    payload = _nested(b'{"id":"c1"}', LAYERS)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json")]
        headers += [(b"content-encoding", b"gzip")] * LAYERS
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    rollout = new_rollout()
    reply, peak = traced_peak(lambda: post(capturing(tmp_path, app=app), rollout, chat_body()))
    assert reply.body == payload
    line = only_line(tmp_path, rollout)
    assert (line["error_category"], line["response"]) == ("capture_parse_error", None)
    assert line["gaps"] == [{"code": "response_undecodable", "detail": TOO_MANY}]
    assert peak < 16 << 20
