"""zsh completion of model names, through a real zsh running the script the product emits.

zsh's completion builtins (``compadd``, ``_describe``) need a completion widget
to run; here they are stood in for by functions that print what the script asks
them to add, and with which options. A provider prefix (``anthropic:``) must be
added with no suffix (``-S ''``): zsh otherwise puts a space after it, where the
model's name should follow (H95's find, seen in an interactive zsh 5.9 with
``compinit``: ``--model anth<Tab>`` gave ``anthropic: ``).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env

COMPLETE = """
compdef() { :; }
eval "$(_AGENT_ASSIST_COMPLETE=zsh_source agent-assist)"
_describe() { print -r -- "${(qq)@[1,2]} ${(qq)@[4,-1]} :: ${(j:|:)${(P)3}}"; }
compadd() { print -r -- "compadd ${(qq)@}"; }
words=(agent-assist --model "$1")
CURRENT=3
_agent_assist_completion
"""

pytestmark = pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")


def offered(env: Env, typed: str) -> list[str]:
    """The lines the stand-ins printed: each call's options, then what it adds."""
    path = f"{os.path.dirname(AGENT_ASSIST)}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["zsh", "-f", "-c", COMPLETE, "zsh", typed],
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(PATH=path),
        timeout=60,
        check=True,
    )
    return result.stdout.splitlines()


def test_a_provider_prefix_is_offered_with_no_space_after_it(env: Env) -> None:
    assert offered(env, "anth") == [
        r"'-V' 'unsorted' '-U' '-S' '' :: anthropic\::a pydantic-ai provider"
    ]


def test_a_whole_model_name_is_offered_with_the_usual_space_after_it(env: Env) -> None:
    assert offered(env, "offl") == [
        "'-V' 'unsorted' '-U' :: offline:the built-in model: no network"
    ]
