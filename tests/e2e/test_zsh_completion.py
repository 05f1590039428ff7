"""zsh completion of model names, through a real zsh running the script the product emits.

zsh's completion builtins (``compadd``, ``_describe``) need a completion widget
to run; here they are stood in for by functions that print what the script asks
them to add, and with which options. A provider prefix (``anthropic:``) must be
added with no suffix (``-S ''``): zsh otherwise puts a space after it, where the
model's name should follow (H95's find, seen in an interactive zsh 5.9 with
``compinit``: ``--model anth<Tab>`` gave ``anthropic: ``).
"""

from __future__ import annotations

import shutil

import pytest

from tests.e2e.harness import PATH_WITH_AGENT_ASSIST, Env, wait_for

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
    return env.shell("zsh", "-f", "-c", COMPLETE, "zsh", typed).stdout.splitlines()


def test_a_provider_prefix_is_offered_with_no_space_after_it(env: Env) -> None:
    assert offered(env, "anth") == [
        r"'-V' 'unsorted' '-U' '-i' '' '-S' '' :: anthropic\::a pydantic-ai provider"
    ]


def test_a_whole_model_name_is_offered_with_the_usual_space_after_it(env: Env) -> None:
    assert offered(env, "offl") == [
        "'-V' 'unsorted' '-U' '-i' '' :: offline:the built-in model: no network"
    ]


ZSHRC = """
autoload -U compinit && compinit -u -D
eval "$(_AGENT_ASSIST_COMPLETE=zsh_source agent-assist)"
zstyle ':completion:*' menu no
line-to-file() { print -r -- "$BUFFER" > line.txt }
zle -N line-to-file
bindkey '^X' line-to-file
PS1='ready%% '
"""


def line_after_tab(env: Env, typed: str) -> str:
    """The command line of a real interactive zsh (compinit) after ``typed`` and Tab."""
    import pexpect

    (env.workspace / "line.txt").unlink(missing_ok=True)
    (env.base / "zdot").mkdir(exist_ok=True)
    (env.base / "zdot" / ".zshrc").write_text(ZSHRC)
    shell = pexpect.spawn(
        "zsh",
        ["-i"],
        cwd=str(env.workspace),
        env=env.environ(PATH=PATH_WITH_AGENT_ASSIST, ZDOTDIR=str(env.base / "zdot"), TERM="xterm"),
        encoding="utf-8",
        dimensions=(40, 120),
        timeout=60,
    )
    try:
        shell.expect("ready% ")
        shell.send(f"{typed}\t")
        shell.send("\x18")
        wait_for(lambda: (env.workspace / "line.txt").exists(), what="the line's file")
        return (env.workspace / "line.txt").read_text().rstrip("\n")
    finally:
        shell.close(force=True)


def test_a_value_after_an_option_and_an_equals_sign_completes_with_the_option_kept(
    env: Env,
) -> None:
    """The offers replaced the whole word: `--model=offl<Tab>` gave `offline`, the
    option gone."""
    assert line_after_tab(env, "agent-assist --model=offl") == "agent-assist --model=offline "
    assert line_after_tab(env, "agent-assist --model offl") == "agent-assist --model offline "


def test_a_directory_after_an_option_and_an_equals_sign_completes_with_the_option_kept(
    env: Env,
) -> None:
    (env.workspace / "agents").mkdir()
    assert line_after_tab(env, "agent-assist --workspace=ag") == "agent-assist --workspace=agents/"
