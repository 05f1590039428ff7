"""The prompt's modules, imported in a background thread while the terminal waits on the supervisor.

prompt_toolkit takes 100-200 ms to import; the attach (and, on a cold start,
the supervisor's own start) spends about as long waiting on the socket, so
the two overlap. A module imported here is the same module the prompt uses
later (Python's import lock makes a concurrent import wait, never doubles it).
"""

from __future__ import annotations

import contextlib
import importlib
import threading

PROMPT_MODULES = (
    "prompt_toolkit",
    "prompt_toolkit.completion",
    "prompt_toolkit.history",
    "prompt_toolkit.patch_stdout",
)


def _import_all() -> None:
    for name in PROMPT_MODULES:
        with contextlib.suppress(ImportError):  # the prompt reports it, in its own words
            importlib.import_module(name)


def preload_prompt() -> threading.Thread:
    """Start importing the prompt's modules; the returned thread ends when they are loaded."""
    thread = threading.Thread(target=_import_all, name="preload-prompt", daemon=True)
    thread.start()
    return thread
