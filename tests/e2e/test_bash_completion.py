"""Bash completion of model names, through a real bash running the script the product emits.

bash splits the line at the characters of ``COMP_WORDBREAKS`` (``:`` and ``=``
among them) before it calls the completion function, and replaces only the text
after the last of them with what the function offers. ``bash_words`` splits as
bash does for these lines (checked against an interactive bash 5.2:
``--model openai-chat:gp`` arrives as ``--model openai-chat : gp``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env

CONFIGURED_MODEL = "openai-chat:gpt-4.1-mini"

COMPLETE = """
eval "$(_AGENT_ASSIST_COMPLETE=bash_source "$PROGRAM")"
compopt() { printf 'compopt'; printf ' %s' "$@"; printf '\\n'; } >&2
COMP_LINE=$1 COMP_POINT=${#1}
shift
COMP_WORDS=("$@") COMP_CWORD=$(($# - 1))
_agent_assist_completion "$PROGRAM"
printf '%s\\n' "${COMPREPLY[@]}"
"""


@dataclass(frozen=True)
class Completed:
    replies: list[str]
    """``COMPREPLY``: what bash puts in place of the text after the last ``:`` or ``=``."""
    options: list[str]
    """The ``compopt`` calls the function made."""


def bash_words(line: str) -> list[str]:
    """``COMP_WORDS`` for ``line``: blank-separated words, runs of ``:`` or ``=`` apart."""
    words = [piece for word in line.split() for piece in re.findall(r"[:=]+|[^:=]+", word)]
    return [*words, ""] if line.endswith(" ") else words


def complete(env: Env, line: str) -> Completed:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text(f'model = "{CONFIGURED_MODEL}"\n')
    argv = ["bash", "--norc", "--noprofile", "-c", COMPLETE, "bash", line, *bash_words(line)]
    result = env.shell(*argv, PROGRAM=AGENT_ASSIST)
    options = [line for line in result.stderr.splitlines() if line.startswith("compopt ")]
    return Completed([line for line in result.stdout.splitlines() if line], options)


@pytest.mark.parametrize(
    "line",
    [
        "agent-assist --model openai-chat:gp",
        "agent-assist --model openai-chat:",
        "agent-assist --model=openai-chat:gp",
        "agent-assist config show -m openai-chat:gpt",
    ],
)
def test_a_model_name_after_its_provider_prefix_completes_to_the_rest_of_the_name(
    env: Env, line: str
) -> None:
    assert complete(env, line).replies == ["gpt-4.1-mini"]


def test_a_model_name_without_a_colon_yet_completes_whole(env: Env) -> None:
    assert complete(env, "agent-assist --model openai-ch").replies == [
        CONFIGURED_MODEL,
        "openai-chat:",
        "openai-chatgpt:",
    ]


def test_a_model_name_after_an_equals_sign_completes_to_the_value(env: Env) -> None:
    assert complete(env, "agent-assist --model=").replies == [
        "offline",
        CONFIGURED_MODEL,
        "openai-chat:",
    ]
    assert complete(env, "agent-assist --model=offl").replies == ["offline"]


def test_a_provider_prefix_completed_is_not_followed_by_a_space(env: Env) -> None:
    completed = complete(env, "agent-assist --model anth")
    assert completed.replies == ["anthropic:"]
    assert "compopt -o nospace" in completed.options


def test_a_whole_model_name_completed_is_followed_by_a_space(env: Env) -> None:
    completed = complete(env, "agent-assist --model offl")
    assert completed.replies == ["offline"]
    assert completed.options == []


def test_words_without_a_colon_complete_as_before(env: Env) -> None:
    assert complete(env, "agent-assist sessions sh").replies == ["show"]
