"""The incremental SSE decoder against the WHATWG "Parsing an event stream" rules.

Expected events are spelled out. The property tests check that any split of the same
bytes into transport chunks gives the same events, and that the decoder agrees with a
small whole-input oracle written from the specification text (sse_tools.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_tools import traced_peak
from model_call_capture.sse import SseDecoder, SseEvent
from sse_tools import BOM, sse_oracle


def decode_all(
    *chunks: bytes | bytearray | memoryview, event_names: Iterable[str] = ()
) -> list[SseEvent]:
    """Feed `chunks` in order to a decoder told `event_names`, then finish; all events."""
    decoder = SseDecoder(event_names)
    events: list[SseEvent] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.finish()


# --- line ends -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"data: a\n\ndata: b\n\n", id="LF"),
        pytest.param(b"data: a\r\rdata: b\r\r", id="CR"),
        pytest.param(b"data: a\r\n\r\ndata: b\r\n\r\n", id="CRLF"),
        pytest.param(b"data: a\r\n\ndata: b\r\r\n", id="mixed"),
    ],
)
def test_every_line_end_style_gives_the_same_events(body: bytes) -> None:
    assert decode_all(body) == [SseEvent(b"a"), SseEvent(b"b")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    # "\r" ends one chunk and "\n" starts the next: one line end, not a line and a blank line.
    assert decode_all(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SseEvent(b"a\nb")]


def test_cr_then_lf_in_the_next_chunk_does_not_dispatch_twice() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r\n\r") == [SseEvent(b"a")]
    assert decoder.feed(b"\ndata: b\r\n\r\n") == [SseEvent(b"b")]
    assert decoder.finish() == []


def test_lone_cr_at_a_chunk_end_still_ends_the_line() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\r") == [SseEvent(b"a")]


# --- fields ------------------------------------------------------------------------------


def test_comment_lines_are_skipped_and_counted() -> None:
    decoder = SseDecoder()
    events = decoder.feed(b": OPENROUTER PROCESSING\n\n:\ndata: x\n\n")
    assert events == [SseEvent(b"x")]
    assert decoder.comments == 2
    assert decoder.content_seen is True


def test_comments_alone_are_not_content() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b": keep-alive\n\n: keep-alive\n\n") == []
    assert decoder.finish() == []
    assert decoder.content_seen is False
    assert decoder.comments == 2


def test_event_id_and_retry_fields() -> None:
    assert decode_all(b"event: delta\nid: 7\nretry: 3000\ndata: x\n\n") == [
        SseEvent(b"x", event="delta", id="7", retry=3000)
    ]


def test_event_type_and_retry_reset_after_dispatch_but_last_id_persists() -> None:
    assert decode_all(b"event: a\nid: 1\nretry: 10\ndata: x\n\ndata: y\n\n") == [
        SseEvent(b"x", event="a", id="1", retry=10),
        SseEvent(b"y", event="", id="1", retry=None),
    ]


def test_empty_id_resets_the_last_event_id() -> None:
    assert decode_all(b"id: 1\ndata: x\n\nid\ndata: y\n\n") == [
        SseEvent(b"x", id="1"),
        SseEvent(b"y", id=""),
    ]


def test_id_containing_nul_is_ignored() -> None:
    assert decode_all(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [
        SseEvent(b"a", id="1"),
        SseEvent(b"b", id="1"),
    ]


def test_retry_that_is_not_all_digits_is_ignored() -> None:
    assert decode_all(b"retry: 1a\ndata: x\n\nretry: -5\ndata: y\n\n") == [
        SseEvent(b"x"),
        SseEvent(b"y"),
    ]


def test_retry_of_thousands_of_digits_is_ignored_not_raised() -> None:
    # Python refuses to parse an int of more than 4,300 digits (ValueError); the decoder
    # used to raise it out of `feed`, and the capture of the whole stream was lost.
    long = b"9" * 5000
    assert decode_all(
        b"retry: " + long + b"\ndata: x\n\nretry: 1" + b"0" * 18 + b"\ndata: y\n\n"
    ) == [
        SseEvent(b"x"),
        SseEvent(b"y"),
    ]
    assert decode_all(b"retry: 999999999999999999\ndata: z\n\n") == [
        SseEvent(b"z", retry=999_999_999_999_999_999)
    ]


def test_an_event_of_many_data_lines_is_held_in_about_its_size() -> None:
    # An event that never ends, of short `data:` lines: each line used to be held as its
    # own bytes object in a list (about 43 bytes for `data:xy`), so 64 MB of such lines
    # took 449 MB of the server's memory, past what the capture budget counts.
    lines = 1_000_000
    chunk = b"data:xy\n" * 8192
    decoder = SseDecoder()

    def feed() -> None:
        for _ in range(lines // 8192):
            assert decoder.feed(chunk) == []

    _, peak = traced_peak(feed)
    assert peak < 4 * lines  # 3 bytes a line once joined, and the bytearray's slack
    (event,) = decoder.finish()
    assert event.data == b"\n".join([b"xy"] * (lines // 8192 * 8192))


def test_further_data_lines_are_joined_with_lf_however_they_come() -> None:
    assert decode_all(b"data: a\ndata:\ndata: b\n", b"data: c\n\ndata: d\n\n") == [
        SseEvent(b"a\n\nb\nc"),
        SseEvent(b"d"),
    ]
    assert decode_all(b"data\ndata\n\n") == [SseEvent(b"\n")]


def test_unknown_fields_are_ignored() -> None:
    assert decode_all(b"foo: bar\nDATA: shout\ndata: x\n\n") == [SseEvent(b"x")]


def test_multi_line_data_is_joined_with_lf() -> None:
    assert decode_all(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [SseEvent(b"YHOO\n+2\n10")]


def test_spec_example_empty_data_and_single_newline() -> None:
    # The WHATWG example: "data" alone gives an empty event, two of them a single LF.
    assert decode_all(b"data\n\ndata\ndata\n\n") == [SseEvent(b""), SseEvent(b"\n")]


def test_field_without_colon_takes_the_whole_line_as_name() -> None:
    assert decode_all(b"event\ndata\n\n") == [SseEvent(b"", event="")]


def test_only_one_space_after_the_colon_is_removed() -> None:
    assert decode_all(b"data:test\n\ndata: test\n\ndata:  test\n\ndata:\ttest\n\n") == [
        SseEvent(b"test"),
        SseEvent(b"test"),
        SseEvent(b" test"),
        SseEvent(b"\ttest"),
    ]


def test_colon_in_the_value_is_kept() -> None:
    assert decode_all(b'data: {"a": "b:c"}\n\n') == [SseEvent(b'{"a": "b:c"}')]


def test_event_without_data_is_not_dispatched() -> None:
    assert decode_all(b"event: ping\n\nid: 3\n\ndata: x\n\n") == [SseEvent(b"x", event="", id="3")]


# --- BOM and UTF-8 -----------------------------------------------------------------------


def test_leading_bom_is_stripped() -> None:
    assert decode_all(BOM + b"data: a\n\n") == [SseEvent(b"a")]


def test_bom_split_across_chunks_is_stripped() -> None:
    assert decode_all(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [SseEvent(b"a")]


def test_only_one_bom_is_stripped() -> None:
    # The second BOM becomes part of the field name, so the line is an unknown field.
    assert decode_all(BOM + BOM + b"data: a\n\ndata: b\n\n") == [SseEvent(b"b")]


def test_bom_later_in_the_stream_is_data() -> None:
    assert decode_all(b"data: a\n\n", BOM + b"data: b\n\n") == [SseEvent(b"a")]


def test_stream_that_is_a_partial_bom_only() -> None:
    assert decode_all(b"\xef\xbb") == []


def test_utf8_character_split_across_chunks() -> None:
    body = "data: héllo 😊\n\n".encode()
    cut = body.index("😊".encode()) + 2
    split_e = body.index("é".encode()) + 1
    assert decode_all(body[:split_e], body[split_e:cut], body[cut:]) == [
        SseEvent("héllo 😊".encode())
    ]


def test_invalid_utf8_in_event_name_does_not_raise() -> None:
    assert decode_all(b"event: \xff\ndata: x\n\n") == [SseEvent(b"x", event="\ufffd")]


# --- end of input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"data: a", id="no-line-end"),
        pytest.param(b"data: a\n", id="no-blank-line"),
        pytest.param(b"data: a\r", id="cr-only"),
        pytest.param(b"data: a\r\n", id="crlf-only"),
    ],
)
def test_unterminated_last_event_is_delivered_at_end_of_input(body: bytes) -> None:
    decoder = SseDecoder()
    assert decoder.feed(body) == []
    assert decoder.finish() == [SseEvent(b"a")]


def test_finish_after_a_complete_stream_adds_nothing() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\n\n") == [SseEvent(b"a")]
    assert decoder.finish() == []


def test_empty_chunks_are_harmless() -> None:
    assert decode_all(b"", b"data: a", b"", b"\n\n", b"") == [SseEvent(b"a")]


def test_a_long_event_is_held_at_most_twice_while_it_is_decoded() -> None:
    # A final event can carry a whole response (megabytes), split over many transport
    # chunks. Structural bound (bytes traced, not time): the incomplete line plus the
    # event's data, not the five copies that splitting, stripping and partitioning make.
    size = 8_000_000
    body = b"event: big\ndata: " + b"x" * size + b"\n\n"

    def decode_in_chunks() -> list[SseEvent]:
        decoder = SseDecoder()
        view = memoryview(body)
        events: list[SseEvent] = []
        for offset in range(0, len(body), 65536):
            events += decoder.feed(view[offset : offset + 65536])
        return events

    events, peak = traced_peak(decode_in_chunks)
    assert events == [SseEvent(b"x" * size, "big")]
    assert peak < 2.2 * size


def test_decoder_accepts_bytearray_and_memoryview() -> None:
    assert decode_all(bytearray(b"data: a\n"), memoryview(b"\n")) == [SseEvent(b"a")]
    assert decode_all(bytearray(b"event: e\ndata: a\n\n")) == [SseEvent(b"a", "e")]


# --- one whole event per chunk (the usual shape) ------------------------------------------


def test_one_event_per_chunk_with_and_without_a_name() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"event: content_block_delta\ndata: {}\n\n") == [
        SseEvent(b"{}", "content_block_delta")
    ]
    assert decoder.feed(b"data: [DONE]\n\n") == [SseEvent(b"[DONE]")]
    assert decoder.feed(b"event:custom.name\ndata:x\n\n") == [SseEvent(b"x", "custom.name")]
    assert decoder.feed(b"event: \xff\ndata: y\n\n") == [SseEvent(b"y", "\ufffd")]
    assert decoder.content_seen is True
    assert decoder.finish() == []


def test_a_cr_inside_a_one_event_chunk_still_ends_a_line() -> None:
    # After a whole event nothing is held; the next chunk looks like one event, but its CR
    # ends the `data:` line, so `b` is a field without a colon (ignored).
    assert decode_all(b"data: first\n\n", b"data: a\rb\n\n") == [SseEvent(b"first"), SseEvent(b"a")]


def test_a_one_event_chunk_after_a_held_line_is_joined_to_it() -> None:
    assert decode_all(b"data: a\n", b"data: b\n\n") == [SseEvent(b"a\nb")]
    assert decode_all(b"event: x\nid: 4\n", b"data: b\n\n", b"data: c\n\n") == [
        SseEvent(b"b", "x", "4"),
        SseEvent(b"c", "", "4"),
    ]


# --- event names the caller knows ----------------------------------------------------------


def test_a_known_event_name_is_looked_up_and_shared_by_every_event() -> None:
    name = "".join(["given", ".name"])  # built at run time: not a constant the compiler shares
    body = b"event: given.name\ndata: a\n\n"
    decoder = SseDecoder([name])
    fast = decoder.feed(body)  # one whole event: the fast path
    general = decoder.feed(b"event: given.name\r\ndata: b\r\n\r\n")  # CRLF: the general path
    split = decoder.feed(b"event: giv") + decoder.feed(b"en.name\ndata: c\n\n")
    assert fast + general + split == [
        SseEvent(b"a", name),
        SseEvent(b"b", name),
        SseEvent(b"c", name),
    ]
    assert fast[0].event is general[0].event is split[0].event
    # Not told the name, the decoder decodes each occurrence into a string of its own.
    untold = SseDecoder()
    first, second = untold.feed(body) + untold.feed(body)
    assert first.event == second.event == name
    assert first.event is not second.event


def test_unknown_event_names_are_decoded_and_delivered() -> None:
    decoder = SseDecoder(("message_start", "ping"))
    assert decoder.feed(b"event: response.created\ndata: {}\n\n") == [
        SseEvent(b"{}", "response.created")
    ]
    assert decoder.feed(b"event: message_start.x\ndata: x\n\n") == [
        SseEvent(b"x", "message_start.x")
    ]
    assert decoder.feed(b"event: \xff\ndata: y\n\n") == [SseEvent(b"y", "\ufffd")]
    assert decoder.feed(b"event: pin") + decoder.feed(b"g.d\ndata: z\n\n") == [
        SseEvent(b"z", "ping.d")
    ]
    assert decoder.feed(b"data: [DONE]\n\n") == [SseEvent(b"[DONE]")]
    assert decoder.finish() == []


def test_events_are_immutable() -> None:
    event = SseEvent(b"a", "e")
    with pytest.raises(AttributeError):
        event.data = b"b"  # type: ignore[misc]
    assert event == SseEvent(data=b"a", event="e", id=None, retry=None)


# --- properties --------------------------------------------------------------------------

_field_line = st.one_of(
    st.builds(
        lambda v: b"data:" + v,
        st.sampled_from([b"", b" ", b" x", b"  y", b'{"a":"\xc3\xa9"}', b" :"]),
    ),
    st.builds(lambda v: b"event:" + v, st.sampled_from([b" message", b" error", b""])),
    st.builds(lambda v: b"id:" + v, st.sampled_from([b" 1", b" 2\x00", b""])),
    st.builds(lambda v: b"retry:" + v, st.sampled_from([b" 100", b" x1"])),
    st.sampled_from(
        [b": comment", b":", b"data", b"event", b"bogus: 1", b"", "data: é😊".encode()]
    ),
)
_line_end = st.sampled_from([b"\n", b"\r", b"\r\n"])


@st.composite
def sse_bodies(draw: st.DrawFn) -> bytes:
    """Bodies built from SSE lines with any mix of line ends, maybe a BOM, maybe unterminated."""
    lines = draw(st.lists(st.tuples(_field_line, _line_end), max_size=30))
    body = b"".join(line + end for line, end in lines)
    if draw(st.booleans()):
        body = BOM + body
    if draw(st.booleans()) and lines:
        body = body[: -len(lines[-1][1])]
    return body


@st.composite
def split_points(draw: st.DrawFn, body: bytes) -> list[bytes]:
    """`body` cut into chunks at arbitrary positions (inside characters, CRLFs, field names)."""
    cuts = sorted(set(draw(st.lists(st.integers(0, len(body)), max_size=12))))
    bounds = [0, *cuts, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=300)
@given(st.data())
def test_any_chunking_gives_the_same_events(data: st.DataObject) -> None:
    body = data.draw(sse_bodies())
    chunks = data.draw(split_points(body))
    assert decode_all(*chunks) == decode_all(body)


@settings(max_examples=300)
@given(sse_bodies())
def test_decoder_agrees_with_the_specification_oracle(body: bytes) -> None:
    assert decode_all(body) == sse_oracle(body)


@settings(max_examples=200)
@given(body=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=8))
def test_arbitrary_bytes_never_raise_and_chunking_does_not_matter(
    body: bytes, cuts: list[int]
) -> None:
    bounds = [0, *sorted(c for c in set(cuts) if c <= len(body)), len(body)]
    chunks = [body[a:b] for a, b in itertools.pairwise(bounds)]
    assert decode_all(*chunks) == decode_all(body)


@settings(max_examples=200)
@given(
    body=sse_bodies(),
    names=st.lists(st.sampled_from(["message", "error", "", "other", " error"]), unique=True),
)
def test_the_event_names_given_never_change_the_events(body: bytes, names: list[str]) -> None:
    assert decode_all(body, event_names=names) == decode_all(body)


def test_byte_at_a_time_equals_whole_body() -> None:
    body = (
        BOM
        + b": c\r\nevent: e\r\nid: 9\r\ndata: "
        + "é😊".encode()
        + b"\r\ndata:x\r\n\r\ndata: last"
    )
    one_by_one = [body[i : i + 1] for i in range(len(body))]
    expected = [SseEvent("é😊\nx".encode(), event="e", id="9"), SseEvent(b"last", id="9")]
    assert decode_all(*one_by_one) == expected
    assert decode_all(body) == expected
