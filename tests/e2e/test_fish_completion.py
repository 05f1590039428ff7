"""fish completion, through a real fish running the script the product emits.

``complete -C LINE`` prints what fish would offer at the end of LINE, after its own
matching of the offers against the word typed: each offer, a tab, its description.
"""

from __future__ import annotations

import shutil

import pytest

from tests.e2e.harness import Env

pytestmark = pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")

COMPLETE = """
_AGENT_ASSIST_COMPLETE=fish_source agent-assist | source
complete -C $argv[1]
"""


def offered(env: Env, line: str) -> dict[str, str]:
    """Each offer fish makes at the end of ``line``, with its description."""
    result = env.shell("fish", "--no-config", "-c", COMPLETE, line)
    pairs = (line.partition("\t") for line in result.stdout.splitlines())
    return {offer: description for offer, _, description in pairs}


def test_a_description_with_commas_is_shown_whole(env: Env) -> None:
    """fish showed each description up to its first comma: `chat  Attach`."""
    commands = offered(env, "agent-assist ")
    assert commands["chat"] == "Attach, offer to resume, converse (the default command)."
    assert commands["sessions"] == "List sessions (live, idle, orphaned); show, rm, prune them."


def test_a_value_after_an_option_and_an_equals_sign_completes_with_the_option_kept(
    env: Env,
) -> None:
    """fish matches an offer against the whole word, `--model=offl`: the bare value
    `offline` matched nothing, and nothing was offered."""
    assert list(offered(env, "agent-assist --model=offl")) == ["--model=offline"]
    assert list(offered(env, "agent-assist --model offl")) == ["offline"]


def test_a_directory_after_an_option_and_an_equals_sign_completes_with_the_option_kept(
    env: Env,
) -> None:
    (env.workspace / "agents").mkdir()
    assert list(offered(env, "agent-assist --workspace=ag")) == ["--workspace=agents/"]
    assert list(offered(env, "agent-assist --workspace ag")) == ["agents/"]
