"""How a wait is told to a user (``wait_words``): every duration a line says, one way."""

from __future__ import annotations

import math


def wait_words(seconds: float) -> str:
    """A wait as a user reads it, rounded up (never shorter than it is): ``30 s`` under a
    minute, to the half minute under ten (``2 min 30 s``, ``3 min``: a countdown read a
    second late is still ``5 min``), whole minutes after. Every wait the terminal tells."""
    whole = max(1, math.ceil(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole > 600:
        return f"{math.ceil(whole / 60)} min"
    minutes, rest = divmod(math.ceil(whole / 30) * 30, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"
