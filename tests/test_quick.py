"""The quick listing finds the same socket as the full client, without pathlib."""

from __future__ import annotations

import pytest

from cli import quick
from cli.quick import runtime_dir
from supervisor import wire
from supervisor.runtime import default_runtime_dir


def test_the_quick_listing_speaks_the_wire_protocol_s_version_and_frame_cap() -> None:
    assert (quick.PROTOCOL_VERSION, quick.MAX_SERVER_FRAME_BYTES) == (
        wire.PROTOCOL_VERSION,
        wire.MAX_SERVER_FRAME_BYTES,
    )


@pytest.mark.parametrize(
    "environ",
    [
        {"AGENT_ASSIST_RUNTIME_DIR": "/run/user/1000/mine", "XDG_RUNTIME_DIR": "/run/user/1000"},
        {"XDG_RUNTIME_DIR": "/run/user/1000"},
        {},
        {"AGENT_ASSIST_RUNTIME_DIR": "relative/run"},
        {"AGENT_ASSIST_RUNTIME_DIR": "/run/user/1000/../1000/./mine/"},
        {"XDG_RUNTIME_DIR": "relative"},
    ],
)
def test_the_quick_listing_uses_the_client_s_runtime_directory(environ: dict[str, str]) -> None:
    assert runtime_dir(environ) == str(default_runtime_dir(environ))


def test_the_quick_listing_imports_no_pathlib_and_no_full_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys, cli.entry, cli.quick\n"
        "print(sorted(m for m in ('pathlib', 'typing', 'supervisor.client', 'supervisor.runtime')"
        " if m in sys.modules))\n"
    )
    argv = [sys.executable, "-c", code]
    result = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "environ",
    [
        {"AGENT_ASSIST_HOME": "/tmp/somewhere/../home-x"},
        {"AGENT_ASSIST_HOME": "relative-home"},
        {"XDG_CONFIG_HOME": "/tmp/config-x"},
        {},
    ],
)
def test_the_quick_listing_sends_the_client_s_state_root(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It sent none, so a supervisor with another home answered for its own."""
    from session.paths import state_root

    for name in ("AGENT_ASSIST_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert quick.state_root(environ) == str(state_root().resolve())


def test_the_quick_listing_refuses_the_control_timeouts_the_full_client_refuses() -> None:
    """A value the full client refuses goes to it (which says so in one line): ``inf``
    ended the quick listing in a traceback (OverflowError of ``settimeout``)."""
    from supervisor.runtime import MAX_TUNING_VALUE

    assert quick.MAX_TIMEOUT_S == MAX_TUNING_VALUE
    for value in ("abc", "-1", "0", "nan", "inf", "1e9", "9" * 40):
        assert quick.control_timeout({"AGENT_ASSIST_CONTROL_TIMEOUT_S": value}) is None, value
    assert quick.control_timeout({"AGENT_ASSIST_CONTROL_TIMEOUT_S": " 2.5 "}) == 2.5
    assert quick.control_timeout({}) == quick.TIMEOUT_S


def test_each_request_carrying_the_tab_s_identity_names_a_capability_the_supervisor_says() -> None:
    from supervisor.identity import CAPABILITIES

    assert set(quick.TAB_CAPABILITY.values()) <= set(CAPABILITIES)


@pytest.mark.parametrize("kind", sorted(quick.TAB_CAPABILITY))
def test_a_supervisor_of_the_version_before_is_asked_without_the_tab_s_identity(kind: str) -> None:
    from supervisor.identity import CAPABILITIES

    frame = {"type": kind, "terminal_pid": 4242}
    assert quick.fit_this_tab(frame, {"capabilities": list(CAPABILITIES)}) == frame
    assert quick.fit_this_tab(frame, {}) == {"type": kind}
