"""The one supervision decision: restart a crashed actor, or escalate past the budget."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Decision(Enum):
    RESTART = "restart"
    ESCALATE = "escalate"


@dataclass(frozen=True)
class RestartPolicy:
    """At most ``max_restarts`` restarts within any ``within_s`` seconds."""

    max_restarts: int = 5
    within_s: float = 30.0


def decide(
    policy: RestartPolicy, failures: tuple[float, ...], now: float
) -> tuple[Decision, tuple[float, ...]]:
    """Record a failure at ``now``; restart while the window holds no more than the budget."""
    recent = (*(t for t in failures if now - t < policy.within_s), now)
    decision = Decision.RESTART if len(recent) <= policy.max_restarts else Decision.ESCALATE
    return decision, recent
