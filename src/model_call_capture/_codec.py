"""The one JSON codec of model-call-capture.

Everything that is read from the wire or from a capture file is decoded here, and
everything that is written is encoded here, with msgspec. One codec in both directions
means a line can always be written back once it was read: msgspec keeps integers of any
size exactly and refuses what it cannot encode at decode time (NaN, lone surrogates), so
such bodies are kept as raw text instead of being lost at write time.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import msgspec

__all__ = [
    "DecodeError",
    "ascii_int",
    "bulk_decoding",
    "decode",
    "decode_object",
    "encode",
    "encode_line",
    "kept_heap",
    "raw_text",
    "to_builtins",
]

DecodeError = msgspec.DecodeError


def ascii_int(text: str, max_digits: int) -> int | None:
    """The number that `text` spells in at most `max_digits` ASCII digits, else None.

    For numbers in untrusted text (a format's major, a name's pid, a page number):
    `str.isdigit` also takes superscripts and other scripts' digits, which `int`
    refuses, and `int` refuses more than 4,300 digits; neither then raises here.
    """
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()


def decode(data: bytes | bytearray | memoryview | str) -> Any:
    """Decode one JSON document; raises `DecodeError` on invalid JSON."""
    return _decoder.decode(data)


def decode_object(data: bytes | bytearray | memoryview | str) -> dict[str, Any] | None:
    """Decode a JSON document that should be an object; None when it is not one.

    Never raises: invalid JSON, a non-object document or an encoding problem all
    give None, so callers keep the raw text instead.
    """
    try:
        value = _decoder.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def encode(value: Any) -> bytes:
    """Encode a value (dicts, lists, msgspec Structs, ...) as compact JSON bytes."""
    return _encoder.encode(value)


def encode_line(value: Any) -> bytearray:
    """Encode a value as one JSONL line, newline included.

    The encoder's own buffer is returned, not a `bytes` copy of it: a line can be as big as
    a whole reassembled response, and a copy would double its peak memory.
    """
    buf = bytearray()
    _encoder.encode_into(value, buf)
    buf += b"\n"
    return buf


def _decode_raw(value: Any) -> Any:
    if type(value) is msgspec.Raw:
        return decode_object(value)  # as `ModelCallRecord` reads it
    raise TypeError(f"Encoding objects of type {type(value).__qualname__} is unsupported")


def to_builtins(value: Any) -> Any:
    """`msgspec.to_builtins`, with the `msgspec.Raw` JSON text a record holds decoded.

    A record read from a capture file keeps its payloads as JSON objects' text until they
    are read (`contracts.ModelCallRecord`), and msgspec's own `to_builtins` refuses
    `msgspec.Raw`; the text becomes the dict the record would give (null if not an object).
    """
    return msgspec.to_builtins(value, enc_hook=_decode_raw)


def raw_text(data: bytes | bytearray | memoryview) -> str:
    """Text form of a body that could not be parsed, for `request_raw` / `response_raw`.

    Invalid UTF-8 bytes become backslash escapes rather than lone surrogates, which no
    JSON encoder can write.
    """
    return bytes(data).decode("utf-8", errors="backslashreplace")


# glibc `mallopt` parameters: free memory kept on top of the heap; the size from which a
# block gets its own mapping.
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_KEPT_MMAP_THRESHOLD = 4 << 20
_GLIBC_TOP_PAD = 128 * 1024  # its default
_KEPT_TOP_PAD = 16 << 20
_kept_depth = 0  # blocks running (in any thread)
_kept_lock = threading.Lock()


@functools.cache
def _mallopt() -> Callable[[int, int], int] | None:
    tuned = ("MALLOC_TOP_PAD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
    if any(name in os.environ for name in tuned):
        return None  # the user tuned the allocator: leave it
    try:
        return cast("Callable[[int, int], int]", ctypes.CDLL(None).mallopt)
    except (AttributeError, OSError):  # not glibc
        return None


@contextmanager
def kept_heap() -> Iterator[None]:
    """While the block runs, keep freed C heap for the next line instead of giving it back.

    Reading capture files makes a new buffer of tens of kilobytes per line, freed before
    the next: glibc gave the top of its heap back to the system after nearly every line,
    and served each 1 MiB read chunk with a fresh `mmap`, then faulted the same pages in
    again (docs/performance-history.md, "Reading faster": about 40% of the time of an
    export without payloads). In the block glibc keeps 16 MiB of free heap on top (`M_TOP_PAD`, default
    128 KiB) and serves blocks up to 4 MiB from the heap (`M_MMAP_THRESHOLD`, default
    128 KiB); a longer line still gets its own mapping, given back when freed. Blocks
    nest, in any thread; the pad comes back to its default when the last ends. The 4 MiB
    threshold stays: glibc raises its threshold by itself (up to 32 MiB) as big blocks are
    freed, but stops once a parameter was set, and 4 MiB is nearer where it would be than
    its 128 KiB start. Elsewhere than glibc, or when the user tuned the allocator
    (`MALLOC_*_` variables, `GLIBC_TUNABLES`), a no-op.
    """
    global _kept_depth
    mallopt = _mallopt()
    with _kept_lock:
        if mallopt is not None and _kept_depth == 0:
            mallopt(_M_TOP_PAD, _KEPT_TOP_PAD)
            mallopt(_M_MMAP_THRESHOLD, _KEPT_MMAP_THRESHOLD)
        _kept_depth += 1
    try:
        yield
    finally:
        with _kept_lock:
            _kept_depth -= 1
            if mallopt is not None and _kept_depth == 0:
                mallopt(_M_TOP_PAD, _GLIBC_TOP_PAD)


@contextmanager
def bulk_decoding() -> Iterator[None]:
    """Pause the cyclic garbage collector while many documents are decoded (and `kept_heap`).

    Decoding a capture file allocates millions of containers, none of them in a cycle; the
    collector's generational passes over them took about 70% of a 100,000-line read
    (docs/performance.md, row 2'). Reference counting still frees everything; the
    collector resumes, as it was, when the block ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with kept_heap():
            yield
    finally:
        if was_enabled:
            gc.enable()
