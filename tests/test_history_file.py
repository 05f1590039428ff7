"""The project's input history is shared by every chat of the project: what one chat
writes is never lost to another's write, and a secret found later leaves no earlier line."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from cli.console import HistoryScrubber
from cli.history_file import ScrubbedHistory

CHAT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cli.console import HistoryScrubber
    from cli.history_file import ScrubbedHistory

    path, role, started, done = (Path(arg) for arg in sys.argv[1:5])
    history = ScrubbedHistory(path, HistoryScrubber(()))
    if role.name == "rewriter":  # each value is said alone, then found secret: a rewrite
        while not started.exists():
            pass
        for i in range(150):
            history.store_string(f"remember Kd8Lw3Pq{i:04d}Zx")
            history.store_string(f"the password is Kd8Lw3Pq{i:04d}Zx")
        done.touch()
    else:
        started.touch()
        count = 0
        while not done.exists():
            history.store_string(f"plain line {count}")
            count += 1
        print(count)
    """
)


def chat(tmp_path: Path, role: str) -> subprocess.Popen[str]:
    args = [str(tmp_path / name) for name in ("prompt_history", role, "started", "done")]
    return subprocess.Popen(
        [sys.executable, "-c", CHAT, *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )


def test_two_chats_rewriting_and_appending_at_once_lose_no_line(tmp_path: Path) -> None:
    """A rewrite (a secret found in a line, replaced in the lines before) read the file,
    the other chat appended, and the rename dropped that line (H102)."""
    (tmp_path / "prompt_history").write_text("".join(f"\n# t\n+old {i}\n" for i in range(5000)))
    rewriter, appender = chat(tmp_path, "rewriter"), chat(tmp_path, "appender")
    out, _ = appender.communicate(timeout=120)
    assert rewriter.wait(timeout=120) == 0 and appender.returncode == 0
    text = (tmp_path / "prompt_history").read_text()
    appended = int(out)
    assert appended > 0
    assert [line for line in text.splitlines() if line.startswith("+plain line ")] == [
        f"+plain line {i}" for i in range(appended)
    ]
    assert text.count("+remember [REDACTED]") == 150
    assert "Kd8Lw3Pq" not in text


def test_an_entry_of_many_lines_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "prompt_history"
    history = ScrubbedHistory(path, HistoryScrubber(()))
    entry = "\n".join(f"line {i} " + "x" * 100 for i in range(200))  # over 8 KiB
    history.store_string(entry)
    assert list(history.load_history_strings()) == [entry]
    assert (path.stat().st_mode & 0o777) == 0o600
    assert (tmp_path / "prompt_history.lock").exists()


def test_a_key_cut_short_at_a_lines_end_leaves_no_half_in_the_file(tmp_path: Path) -> None:
    """A key's head too short for its pattern ending a line (``sk-proj-Ab3d``), its rest
    on the next: both halves stayed in the project's input history (H204)."""
    path = tmp_path / "prompt_history"
    history = ScrubbedHistory(path, HistoryScrubber(()))
    history.store_string("my key is sk-proj-Ab3d")
    history.store_string("E5gH7jK9mN1pQ3rStU")
    text = path.read_text()
    assert "Ab3d" not in text and "E5gH7jK9" not in text
    assert list(history.load_history_strings()) == ["[REDACTED]", "my key is [REDACTED]"]
