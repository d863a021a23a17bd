"""Content decoding of captured bodies: one incremental decoder per encoding.

Request and response bodies alike: the app and the client always get the encoded bytes;
only the capture decodes them. A decoder stops once its output passes `limit` (brotli
within one output block), so a small compressed body never expands in memory far past
the capture cap. `zstd` is not decoded (the `zstandard` package is not a dependency): a
body in it is recorded as undecodable, and so is a body of more than `MAX_CODINGS`
codings: each is a decoder with its own window (about 40 KB for gzip), so a small body
with a long `content-encoding` took memory no budget counts (3,000 layers: 69 MB).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import brotli

__all__ = [
    "MAX_CODINGS",
    "BrotliDecoder",
    "ContentDecoder",
    "DecodeError",
    "DeflateDecoder",
    "GzipDecoder",
    "coding_names",
    "content_encodings",
    "decode_chain",
    "decoders_for",
]


MAX_CODINGS = 4
"""The most content-codings a captured body is decoded through (servers apply one)."""


class DecodeError(Exception):
    """A response body that does not decode with its content-encoding."""


class ContentDecoder:
    """Incremental decoder of one content-encoding, with bounded output per call."""

    __slots__ = ()

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode the next chunk; returns at most `limit` bytes (more means: past the cap)."""
        raise NotImplementedError


class _ZlibDecoder(ContentDecoder):
    """A zlib stream of the given window bits, falling back once to `fallback_wbits`."""

    __slots__ = ("_d", "_fallback", "_started")

    def __init__(self, wbits: int, fallback_wbits: int | None = None) -> None:
        self._d = zlib.decompressobj(wbits)
        self._fallback = fallback_wbits
        self._started = False

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode the next chunk; returns at most `limit` bytes (more means: past the cap)."""
        try:
            out = self._d.decompress(data, limit)
        except zlib.error as exc:
            if self._started or self._fallback is None:
                raise DecodeError(str(exc)) from exc
            self._d = zlib.decompressobj(self._fallback)
            self._fallback = None
            try:
                out = self._d.decompress(data, limit)
            except zlib.error as exc2:
                raise DecodeError(str(exc2)) from exc2
        self._started = True
        if self._d.unconsumed_tail:
            return out + b"\0"  # more output is waiting: signal "past the limit"
        return out


class GzipDecoder(_ZlibDecoder):
    """`gzip` (and `x-gzip`): a zlib stream with the gzip header."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(16 + zlib.MAX_WBITS)


class DeflateDecoder(_ZlibDecoder):
    """`deflate`: the zlib wrapper the RFC asks for, or raw deflate, which some servers send."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(zlib.MAX_WBITS, -zlib.MAX_WBITS)


class BrotliDecoder(ContentDecoder):
    """`br`."""

    __slots__ = ("_d",)

    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode the next chunk; returns at most `limit` bytes (more means: past the cap)."""
        try:
            out: bytes = self._d.process(data, output_buffer_limit=max(limit, 1))
        except brotli.error as exc:
            raise DecodeError(str(exc)) from exc
        if not self._d.can_accept_more_data():
            return out + b"\0"
        return out


def content_encodings(headers: Iterable[tuple[bytes, bytes]] | None) -> list[bytes]:
    """The `content-encoding` tokens of a message's headers, in order, lowercased."""
    encodings: list[bytes] = []
    for name, value in headers or ():
        if bytes(name).lower() == b"content-encoding":
            encodings += [e.strip().lower() for e in bytes(value).split(b",") if e.strip()]
    return encodings


def decoders_for(encodings: list[bytes]) -> list[ContentDecoder] | None:
    """Decoders in the order to apply them (the reverse of the header's), None if unknown.

    `encodings` are the `content-encoding` tokens as sent, lowercased; `identity` needs
    no decoder, so an unencoded body gets an empty list.
    """
    decoders: list[ContentDecoder] = []
    if sum(encoding != b"identity" for encoding in encodings) > MAX_CODINGS:
        return None
    for encoding in reversed(encodings):
        if encoding in (b"gzip", b"x-gzip"):
            decoders.append(GzipDecoder())
        elif encoding == b"deflate":
            decoders.append(DeflateDecoder())
        elif encoding == b"br":
            decoders.append(BrotliDecoder())
        elif encoding != b"identity":
            return None
    return decoders


def coding_names(encodings: list[bytes]) -> str:
    """How a gap names a body's content-encoding: its tokens, a long list shortened."""
    shown = b", ".join(encodings[:MAX_CODINGS]).decode("latin-1")
    if len(encodings) <= MAX_CODINGS:
        return shown
    more = f"{len(encodings)} codings, more than the {MAX_CODINGS} the capture decodes"
    return f"{shown}, ... ({more})"


def decode_chain(decoders: list[ContentDecoder], data: bytes, bound: int) -> bytes:
    """`data` through every decoder in order, each output bounded by `bound` bytes."""
    for decoder in decoders:
        data = decoder.decode(data, bound)
    return data
