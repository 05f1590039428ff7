"""Shared fixtures: the anyio backend and a guard that real model requests never happen."""

from __future__ import annotations

import pydantic_ai.models
import pytest

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
