"""What a terminal makes of the supervisor's version: the same, another of this installation
(switched to this one when unused), or another installation's (never stopped)."""

from __future__ import annotations

from cli.upgrade import Skew, kept_line, labels, skew, stoppable, this_build
from supervisor.identity import SOURCE, Identity, package_version


def said(**fields: object) -> dict[str, object]:
    """A status answer of a running supervisor with ``fields`` of its identity."""
    return {"running": True, "terminals": 0, "live_sessions": 0, **fields}


def test_a_supervisor_of_this_build_is_the_same() -> None:
    this = Identity(package_version(), this_build())
    assert skew(said(**this.as_fields())) is Skew.SAME


def test_a_supervisor_that_tells_no_build_is_the_version_before() -> None:
    """The version before told only its package version (in its status), which an editable
    install's ``git pull`` does not change."""
    assert skew(said(version=package_version())) is Skew.OTHER_VERSION
    assert skew({"type": "welcome", "supervisor_pid": 42}) is Skew.OTHER_VERSION


def test_another_build_here_is_another_version_and_elsewhere_another_installation() -> None:
    assert skew(said(build="000000000000", source=SOURCE)) is Skew.OTHER_VERSION
    elsewhere = said(build="000000000000", source="/opt/other-venv/lib/site-packages")
    assert skew(elsewhere) is Skew.OTHER_INSTALLATION
    assert skew(said(build=this_build(), source="/a/copy")) is Skew.SAME


def test_the_versions_are_named_with_their_builds_when_their_numbers_are_the_same() -> None:
    version = package_version()
    assert labels(said(version="0.0.1", build="000000000000")) == ("0.0.1", version)
    assert labels(said(version=version)) == (
        f"{version} (an earlier build)",
        f"{version} (build {this_build()})",
    )


def test_a_supervisor_kept_for_a_session_it_still_saves_says_so() -> None:
    """No terminal attached, but a turn finishing for its terminal gone: a stop would cut it."""
    line = kept_line(said(version="0.0.1", build="000000000000", source=SOURCE), 0)
    assert ", and it still saves a session, so it stays: the first start once it is done" in line


def test_a_supervisor_of_another_installation_is_named_with_where_it_is() -> None:
    line = kept_line(said(version="0.0.1", build="000000000000", source="/opt/venv/lib"), 2)
    assert line.startswith("note: the supervisor runs agent-assist 0.0.1 of another ")
    assert "installation (/opt/venv/lib), not this one's " in line


def test_only_an_unused_supervisor_of_another_version_started_by_a_terminal_is_stopped() -> None:
    other = said(version="0.0.1", build="000000000000", source=SOURCE, detached=True)
    assert stoppable(other)
    assert stoppable(said(version="0.0.1"))  # the version before: the first chat started it
    assert not stoppable({**other, "terminals": 1})
    assert not stoppable({**other, "live_sessions": 1})
    assert not stoppable({**other, "source": "/opt/venv/lib"})
    assert not stoppable({**other, "build": this_build()})


def test_a_supervisor_run_in_the_foreground_is_left_to_whoever_runs_it() -> None:
    """Stopped, a terminal would start one of its own, outside systemd's unit (and its
    environment): it is told how to switch instead."""
    foreground = said(version="0.0.1", build="000000000000", source=SOURCE, detached=False)
    assert not stoppable(foreground)
    assert kept_line(foreground, 0).endswith(
        "in the foreground (agent-assist supervisor run: systemd's?), so it stays: restart it "
        "there to switch (systemctl --user restart agent-assist)"
    )
