"""Diagnostic lines on a terminal's stderr wrap between words at its width, their rows
after the first indented past the label, as the rest of the output fits it (H152)."""

from __future__ import annotations

import os
import subprocess

from tests.e2e.harness import AGENT_ASSIST, Env


def _stderr_on_a_terminal(env: Env, *args: str, columns: int) -> list[str]:
    """The rows ``agent-assist ARGS`` writes to stderr, a pseudo-terminal ``columns``
    wide (stdout piped)."""
    main, secondary = os.openpty()
    try:
        subprocess.run(
            [AGENT_ASSIST, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=secondary,
            cwd=env.workspace,
            env=env.environ(COLUMNS=str(columns)),
            timeout=60,
            check=False,
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the writer is gone and all is read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    return b"".join(chunks).decode().replace("\r\n", "\n").splitlines()


def test_the_warnings_of_sessions_wrap_at_80_columns_with_indented_rows(env: Env) -> None:
    """A tester's find: at 80 columns the listing fit, its warning lines were cut by the
    terminal inside words (``expect`` / ``ed a string key``)."""
    env.project.mkdir(parents=True)
    (env.project / "0a1b2c3d4e5f.json").write_text("{bad")
    gone = env.terminal()
    gone.close()  # a terminal that is not running (4242 was only hoped to be free)
    (env.project / f"active_{gone.pid}.json").write_text('{"x": 1}')
    for args in (("sessions",), ("sessions", "--all"), ("sessions", "--all", "--json")):
        rows = _stderr_on_a_terminal(env, *args, columns=80)
        assert rows[0].startswith("warning: session file 0a1b2c3d4e5f.json is corrupt"), rows
        assert all(len(row) <= 79 for row in rows), rows
        firsts = [row for row in rows if not row.startswith(" ")]
        assert [row.split(" ")[0] for row in firsts] == ["warning:", "warning:"], rows
        assert all(row.startswith(" " * len("warning: ")) for row in rows if row not in firsts)
        text = " ".join(" ".join(rows).split())
        assert "(unexpected character, expected a string key" in text, text  # no word cut
        assert f"ignoring invalid session pointer active_{gone.pid}.json (bad session id)" in text
