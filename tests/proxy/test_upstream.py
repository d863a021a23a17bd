"""The operator's upstream URL (`proxy/_upstream.py`): where calls go, and how it is named."""

from __future__ import annotations

import base64

import pytest

from model_call_capture.proxy import ProxyApp, Upstream


def test_credentials_are_kept_apart_from_the_name() -> None:
    upstream = Upstream("https://us%40er:p%3Aw0rd@gw.example:8443/openai/v1/?key=K3y&v=2")
    assert upstream.display == "https://gw.example:8443/openai/v1/?key=***&v=***"
    assert str(upstream.origin) == "https://gw.example:8443"
    assert upstream.base_path == b"/openai/v1"
    assert upstream.query == b"key=K3y&v=2"
    assert upstream.authorization == b"Basic " + base64.b64encode(b"us@er:p:w0rd")


def test_an_upstream_without_credentials() -> None:
    upstream = Upstream("http://[::1]:8000")
    assert (upstream.display, upstream.base_path, upstream.query) == (
        "http://[::1]:8000",
        b"",
        b"",
    )
    assert upstream.authorization is None
    assert upstream.scrub("anything") == "anything"


def test_scrub_blanks_every_form_of_a_credential() -> None:
    upstream = Upstream("http://op:pa%24%24@h/v1?key=a%2Bb&x=")
    text = "http://op:pa%24%24@h/v1?key=a%2Bb&x= op pa$$ pa%24%24 a+b a%2Bb key=a%2Bb&x="
    shown = "http://h/v1?key=***&x=***"  # the URL quoted whole is shown as `display`
    assert upstream.scrub(text) == " ".join([shown] + ["***"] * 6)


def test_an_upstream_without_credentials_is_named_whole() -> None:
    """The 502 used to say `upstream *** unreachable`: the whole URL counted as a secret."""
    upstream = Upstream("http://127.0.0.1:8000")
    assert upstream.display == "http://127.0.0.1:8000"
    assert upstream.scrub("connect to http://127.0.0.1:8000 failed") == (
        "connect to http://127.0.0.1:8000 failed"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ftp://user:pw@host/x?key=K", "'ftp://host/x?key=***'"),
        ("localhost:8000", "such as http://localhost:8000; the value given has no scheme://"),
        ("http://", "no scheme:// or no host"),
        # The scheme forgotten: the parser reads `user` as one and `pw@...` as a path.
        ("user:pw@vllm:8000/v1?key=K", "no scheme:// or no host (not shown"),
    ],
)
def test_a_url_that_is_not_http_is_refused_without_its_credentials(url: str, shown: str) -> None:
    with pytest.raises(ValueError, match="upstream must be an http") as raised:
        ProxyApp(url)
    assert shown in str(raised.value)
    assert "pw" not in str(raised.value) and "K" not in str(raised.value)


def test_a_url_that_does_not_parse_is_refused_without_echoing_it() -> None:
    with pytest.raises(ValueError, match=r"does not parse \(InvalidURL\)") as raised:
        Upstream("http://user:secret@host:notaport/")
    assert "secret" not in str(raised.value)
