"""Fuzzing the command line's inputs (arguments and environment variables) of the commands that
work without a supervisor: every outcome is a result or one clear line, never a traceback."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cli.main import main

texts = st.text(
    alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40
)
ids = st.one_of(
    texts,
    st.sampled_from(["aaaaaaaaaaaa", "../../etc/passwd", "AAAAAAAAAAAA", "a" * 13, "", "-h", "--"]),
)
numbers = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "1e308", "-0", "0", "30", "1e-300", "99999999999"]),
    texts,
)
SCALE = int(os.environ.get("AGENT_ASSIST_FUZZ_SCALE", "1"))
"""More examples for a long run (``AGENT_ASSIST_FUZZ_SCALE=10``)."""
FUZZ = settings(
    max_examples=60 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def run(args: list[str], **env: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "ws").mkdir()
        environ = {
            "AGENT_ASSIST_HOME": str(base / "home"),
            "AGENT_ASSIST_RUNTIME_DIR": str(base / "run"),
            **env,
        }
        result = CliRunner().invoke(main, args, env=environ)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(
                f"{args} {env}: uncaught {result.exception!r}"
            ) from result.exception
        assert result.exit_code in (0, 1, 2), (args, result.output)
        if result.exit_code == 1:
            assert len(result.stderr.strip().splitlines()) == 1, result.stderr
            assert result.stderr.startswith(("error:", "warning:"))


@FUZZ
@given(session_id=ids, command=st.sampled_from(["show", "rm"]))
def test_session_id_arguments(session_id: str, command: str) -> None:
    run(["sessions", command, "--", session_id])


@FUZZ
@given(days=numbers, dry_run=st.booleans())
def test_older_than_argument(days: str, dry_run: bool) -> None:
    run(["sessions", "prune", "--older-than", days, *(["--dry-run"] if dry_run else [])])


@FUZZ
@given(
    name=st.sampled_from(["AGENT_ASSIST_HOME", "AGENT_ASSIST_RUNTIME_DIR", "XDG_RUNTIME_DIR"]),
    value=texts,
)
@example(name="AGENT_ASSIST_HOME", value="~no-such-user-0")
def test_environment_variables_for_listing(name: str, value: str) -> None:
    os.environ.pop("XDG_RUNTIME_DIR", None)
    run(["sessions", "--json", "--all"], **{name: value})
