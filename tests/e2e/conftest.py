from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.harness import Env


@pytest.fixture
def env() -> Iterator[Env]:
    environment = Env.create()
    try:
        yield environment
    finally:
        environment.cleanup()
