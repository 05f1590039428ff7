from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Protocol, TypeVar

import pytest

from session.settings import MAX_CONTEXT_TOKENS
from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer

TEST_KEY = "sk-test-not-a-real-key"
TEST_MODEL = "openai-chat:test-model"

S = TypeVar("S", bound=ChatServer)


class ServeChat(Protocol):
    def __call__(
        self, chat_server: S, /, *, api_key: str = TEST_KEY, **extra: str
    ) -> S: ...


@pytest.fixture
def env() -> Iterator[Env]:
    """A private environment, its processes stopped at the end; a test that left one of
    them running besides its supervisor, heir, terminals and clients fails, naming it."""
    environment = Env.create()
    try:
        yield environment
    finally:
        left = environment.cleanup()
    if left:
        pytest.fail(f"left running by the test: {'; '.join(left)}", pytrace=False)


@pytest.fixture
def serve_chat(env: Env) -> Iterator[ServeChat]:
    """Starts the ``ChatServer`` it is given (one with its own options, or a subclass) until
    the test ends, and points ``env``'s chats at it: its URL, ``api_key`` and the model
    ``openai-chat:test-model``, then the ``extra`` variables (which may replace these)."""
    with ExitStack() as servers:

        def serve(chat_server: S, /, *, api_key: str = TEST_KEY, **extra: str) -> S:
            servers.enter_context(chat_server)
            env.extra.update(
                OPENAI_BASE_URL=chat_server.base_url,
                OPENAI_API_KEY=api_key,
                AGENT_ASSIST_MODEL=TEST_MODEL,
            )
            env.extra.update(extra)
            return chat_server

        yield serve


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    """A local OpenAI-compatible server that answers at once, ``env``'s model."""
    return serve_chat(ChatServer())


@pytest.fixture
def capped_server(serve_chat: ServeChat) -> ChatServer:
    """A model with a budget no compaction is due at (the turns stay in the request), and
    session files capped at 400 KB: a chat's oldest long turns are moved beside its file."""
    return serve_chat(
        ChatServer(),
        AGENT_ASSIST_TEST_SESSION_FILE_BYTES="400000",
        AGENT_ASSIST_CONTEXT_TOKENS=str(MAX_CONTEXT_TOKENS),
        AGENT_ASSIST_COMPACTION_INTERVAL="50",
    )


@pytest.fixture
def streaming_server(serve_chat: ServeChat) -> ChatServer:
    """A local OpenAI-compatible server that streams its replies a word every 50 ms
    (``be slow please`` takes 10 s), ``env``'s model."""
    return serve_chat(ChatServer(chunk_delay=0.05), api_key="sk-local")
