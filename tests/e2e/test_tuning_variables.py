"""The tuning variables (``AGENT_ASSIST_CONTROL_TIMEOUT_S``, ``..._HELLO_TIMEOUT_S``,
``..._MAX_CONNECTIONS``) with a value that cannot be used: one error line naming the
variable and its value, exit status 1, as a bad setting gets (they were ignored silently,
and ``inf`` made the quick listing end in a traceback)."""

from __future__ import annotations

import pytest

from supervisor.runtime import TUNING_VARIABLES
from tests.e2e.harness import Env

BAD = ["abc", "-1", "0", "nan", "inf"]


def refused(result_stderr: str, name: str, value: str) -> bool:
    return result_stderr.splitlines() == [
        f"error: bad {name} '{value}': must be a number > 0 and < 1,000,000,000"
    ]


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("name", TUNING_VARIABLES)
def test_a_chat_and_a_supervisor_start_refuse_a_bad_tuning_value(
    env: Env, name: str, value: str
) -> None:
    env.extra[name] = value
    for args in (("--new",), ("supervisor", "start"), ("supervisor", "run")):
        result = env.run(*args, input="hello\n")
        assert result.returncode == 1 and refused(result.stderr, name, value), (args, result)
    assert env.supervisor_pid() is None, "no supervisor was started"


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
@pytest.mark.parametrize("value", ["abc", "inf"])
def test_the_commands_that_ask_the_supervisor_refuse_a_bad_control_timeout(
    env: Env, supervisor: str, value: str
) -> None:
    if supervisor == "running":
        assert env.run("supervisor", "start").returncode == 0
    name = "AGENT_ASSIST_CONTROL_TIMEOUT_S"
    env.extra[name] = value
    for args in (
        ("sessions",),
        ("sessions", "--json"),
        ("sessions", "show", "0a1b2c3d4e5f"),
        ("supervisor", "status"),
        ("supervisor", "stop"),
    ):
        result = env.run(*args)
        assert result.returncode == 1 and refused(result.stderr, name, value), (args, result)
    assert (env.supervisor_pid() is not None) is (supervisor == "running")


def test_a_good_tuning_value_is_taken(env: Env) -> None:
    result = env.run(
        "--new",
        input="hello\n",
        AGENT_ASSIST_CONTROL_TIMEOUT_S=" 2.5 ",
        AGENT_ASSIST_HELLO_TIMEOUT_S="3",
        AGENT_ASSIST_MAX_CONNECTIONS="64",
    )
    assert result.returncode == 0, result.stderr
    assert env.run("sessions", "--json", AGENT_ASSIST_CONTROL_TIMEOUT_S="2").returncode == 0
