from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer


@pytest.fixture
def env() -> Iterator[Env]:
    environment = Env.create()
    try:
        yield environment
    finally:
        environment.cleanup()


@pytest.fixture
def streaming_server(env: Env) -> Iterator[ChatServer]:
    """A local OpenAI-compatible server that streams its replies a word every 50 ms
    (``be slow please`` takes 10 s), ``env``'s model."""
    with ChatServer(chunk_delay=0.05) as chat_server:
        env.extra.update(
            OPENAI_BASE_URL=chat_server.base_url,
            OPENAI_API_KEY="sk-local",
            AGENT_ASSIST_MODEL="openai-chat:test-model",
        )
        yield chat_server
