"""A chat is refused when the supervisor sends model requests elsewhere than its shell's
OPENAI_BASE_URL: two spellings of one endpoint (the scheme's or the host's case, the
scheme's default port, a trailing slash) are the same endpoint, as the HTTP client that
sends the requests reads them."""

from __future__ import annotations

import pytest

from cli.chat import other_endpoint


@pytest.mark.parametrize(
    ("shell", "supervisor"),
    [
        ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1"),
        ("HTTP://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://GATEWAY.example:8000/v1", "http://gateway.example:8000/v1"),
        ("https://api.openai.com:443/v1", None),
        ("http://gateway.example:80/v1", "http://gateway.example/v1"),
    ],
)
def test_two_spellings_of_one_endpoint_are_not_refused(
    shell: str, supervisor: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", shell)
    assert other_endpoint(["openai-chat:m"], {"openai_base_url": supervisor}) is None


@pytest.mark.parametrize(
    ("shell", "supervisor"),
    [
        ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8000/v1"),
        ("https://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/V1", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:443/v1", "http://127.0.0.1/v1"),
        ("http://localhost:8000/v1", "http://127.0.0.1:8000/v1"),  # may be ::1
    ],
)
def test_two_endpoints_are_refused(
    shell: str, supervisor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", shell)
    refusal = other_endpoint(["openai-chat:m"], {"openai_base_url": supervisor})
    assert refusal is not None
    assert refusal.startswith(f"the running supervisor sends model requests to {supervisor}, ")


def test_a_shell_with_no_openai_base_url_is_not_said_to_have_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H113: the refusal named "this shell's OPENAI_BASE_URL https://api.openai.com/v1" in a
    shell where none was set."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    refusal = other_endpoint(["openai-chat:m"], {"openai_base_url": "http://127.0.0.1:8000/v1"})
    assert refusal is not None
    assert "OPENAI_BASE_URL https://" not in refusal
    assert "this shell's endpoint https://api.openai.com/v1 (no OPENAI_BASE_URL is set here)" in (
        refusal
    )
