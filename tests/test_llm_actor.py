"""LLMActor: the agents it keeps built are bounded, least recently used dropped first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef, open_mailbox
from actors.llm import AGENTS_KEPT, LLMActor
from actors.messages import StartTurn, TurnDone

pytestmark = pytest.mark.anyio


async def test_many_model_names_keep_a_bounded_number_of_agents(tmp_path: Path) -> None:
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    reply_to: ActorRef[Any]
    reply_to, replies = open_mailbox("terminal")
    names = [f"openai-chat:model-{i}" for i in range(3 * AGENTS_KEPT)] + ["offline"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for turn_id, name in enumerate(names, 1):
            await llm.tell(StartTurn(turn_id, name, "hi", (), tmp_path, "", "", reply_to))
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnDone):
                    pass
            assert len(actor.agents_kept) <= AGENTS_KEPT
        llm.close()
    assert actor.agents_kept[-1] == "offline"
    assert len(actor.agents_kept) == AGENTS_KEPT
