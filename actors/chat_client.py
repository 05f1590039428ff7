"""The OpenAI HTTP client of the chat and summary models: it asks again after a blip, but
never waits unseen for longer than ``MAX_UNSEEN_WAIT_S`` because an endpoint asked it to.
Light to import (``turn_lines`` reads the limit): the openai SDK loads with the model."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from openai import AsyncOpenAI

MAX_UNSEEN_WAIT_S: Final = 5.0
"""The longest wait an endpoint may ask for (a 429's ``Retry-After``) that the client waits
before asking again, with nothing on the terminal: a longer one fails the turn at once,
and its line tells the wait (the client waited up to 60 s a retry, twice, silently)."""


def chat_client(base_url: str | None, api_key: str) -> AsyncOpenAI:
    """The client for ``base_url``: a blip (a 5xx, a connection lost, a short wait asked)
    is asked again twice, within about a second and a half, as the SDK does."""
    return _client_class()(base_url=base_url, api_key=api_key, max_retries=2)


@cache
def _client_class() -> type[AsyncOpenAI]:
    """``AsyncOpenAI`` whose retries skip a response asking to wait over
    ``MAX_UNSEEN_WAIT_S`` (its ``_should_retry``, the SDK's one place that decides)."""
    import httpx2
    from openai import AsyncOpenAI

    class ChatClient(AsyncOpenAI):
        def _should_retry(self, response: httpx2.Response) -> bool:
            parse = getattr(self, "_parse_retry_after_header", None)  # private: may go
            wait = parse(response.headers) if parse is not None else None
            if wait is not None and wait > MAX_UNSEEN_WAIT_S:
                return False
            return super()._should_retry(response)

    return ChatClient
