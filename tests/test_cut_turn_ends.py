"""A stop that reaches a TerminalActor while a turn it cut ends (its terminal gone, the
finish wait over, or the tab taking it up stopped waiting) waits for that end, within the
cut's bounded wait: the turn is kept as far as it got (H151: the actor left at once, and a
decision its tool had recorded was lost with the turn, only the message kept)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from actors.messages import Closed, Detach, ToolCallLine, UserTurn
from session.interrupted import INTERRUPTED
from session.leaving import TAKEN_UP
from tests.e2e.harness import wait_for
from tests.workers import local_models, summary_model_terminal

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("cut_by", ["finish-wait-over", TAKEN_UP])
async def test_a_stop_while_a_cut_turn_ends_keeps_the_turn_as_far_as_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut_by: str
) -> None:
    with local_models(monkeypatch) as server:
        async with anyio.create_task_group() as tg:
            ref, outputs, project = await summary_model_terminal(tg, tmp_path, 5.0)
            server.tool_returns_go.clear()  # the model's answer to the tool waits
            await ref.tell(UserTurn("decide: Route tickets by urgency"))
            with anyio.fail_after(30):
                async for output in outputs:
                    if isinstance(output, ToolCallLine):
                        if output.delivered is not None:  # a write waits for its line
                            output.delivered.set(True)
                        break
            await anyio.to_thread.run_sync(
                partial(
                    wait_for,
                    lambda: any(r["messages"][-1]["role"] == "tool" for r in server.requests),
                    what="the tool's return at the model (the tool ran)",
                )
            )
            # The terminal went away, the turn was cut, then the stop: all three in the
            # mailbox before the cut turn's end can be.
            for reason in ("disconnected", cut_by, "shutdown"):
                assert ref.tell_nowait(Detach(reason))
            with anyio.fail_after(30):
                async for output in outputs:
                    if isinstance(output, Closed):
                        break
            server.tool_returns_go.set()
            (path,) = [p for p in project.glob("*.json") if not p.name.startswith("active_")]
            saved: dict[str, Any] = orjson.loads(path.read_bytes())
            texts = [
                part.get("content")
                for message in saved["recent_messages"]
                for part in message["parts"]
                if part["part_kind"] in ("user-prompt", "text", "tool-return")
            ]
            assert "Route tickets by urgency" in saved["decisions"], texts
            assert any(str(text).endswith(INTERRUPTED) for text in texts), texts
            tg.cancel_scope.cancel()
