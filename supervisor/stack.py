"""The model stack: pydantic-ai and the modules that import it, loaded once the supervisor listens.

Importing pydantic-ai costs most of a second; the supervisor answers attaches
(hello, open) with the light modules first and loads this in a worker thread
meanwhile. Nothing on the light path may import these modules before
``load_model_stack`` has returned (``tests/test_supervisor_start.py`` checks it).
"""

from __future__ import annotations

import contextlib
import gc
import importlib

from supervisor.identity import package_version

HEAVY_MODULES = (
    "pydantic_ai",
    "session.history",
    "session.lifecycle",
    "session.compaction",
    "actors.assistant",
    "actors.offline_model",
    "actors.llm",
    "actors.compaction",
    "actors.drift",
    "actors.terminal",
    "supervisor.registry",
    "supervisor.server",
)
LAZY_MODULES = ("genai_prices.data", "genai_prices.data_units")
"""What pydantic-ai imports during its first run (the price tables): loaded with the rest,
so that the first turn does not wait for them."""


def load_model_stack() -> str:
    """Import the heavy modules and build the message serializers; returns the version.

    Blocking (run it in a worker thread). The cyclic collector is paused while
    importing (about a tenth of the import time: imports build many objects
    and free few) and the imported objects are frozen out of later collections.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        for name in HEAVY_MODULES:
            importlib.import_module(name)
        for name in LAZY_MODULES:
            with contextlib.suppress(ImportError):  # pydantic-ai's dependency, not ours
                importlib.import_module(name)
        import pydantic_ai

        pydantic_ai.BANNER_ENABLED = False  # no advertisement on `supervisor run`'s terminal
        from session.history import warm_up

        warm_up()  # build the message serializers before the first turn needs them
        found = package_version()
    finally:
        if enabled:
            gc.enable()
    gc.freeze()  # the imported modules never die: keep them out of every collection
    return found
