"""The README's tour is what the real program does; the docs stay inside the repository."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _tour_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_tour", ROOT / "docs" / "tour.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["docs_tour"] = module
    spec.loader.exec_module(module)
    return module


def test_the_readme_tour_is_regenerated_identically_from_the_program() -> None:
    tour = _tour_module()
    committed = tour.readme_tour((ROOT / "README.md").read_text())
    assert tour.transcript() == committed, "run: .venv/bin/python docs/tour.py --write"


def test_the_readme_keeps_the_ci_test_command() -> None:
    line = (
        "    python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' "
        "&& .venv/bin/python -m pytest -q"
    )
    assert line in (ROOT / "README.md").read_text().splitlines()


def test_the_docs_link_only_to_files_in_the_repository() -> None:
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        assert "../" not in text, f"{doc.name} points outside the repository"
        for target in re.findall(r"\]\(([^)#:]+)\)", text):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_the_systemd_unit_runs_the_supervisor_from_where_pipx_installs() -> None:
    unit = (ROOT / "contrib" / "agent-assist.service").read_text()
    assert "ExecStart=%h/.local/bin/agent-assist supervisor run" in unit
    assert "mkdir -p ~/.config/systemd/user" in unit


def _error_of(tmp: Path, *args: str, **environ: str) -> str:
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_ASSIST_", "OPENAI_"))}
    env.update(AGENT_ASSIST_HOME=str(tmp / "home"), AGENT_ASSIST_RUNTIME_DIR=str(tmp / "run"))
    env.update(environ)
    command = [str(Path(sys.executable).with_name("agent-assist")), *args]
    result = subprocess.run(
        command, input="", capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 1
    return result.stderr.strip()


def test_the_readme_error_examples_are_what_the_program_says(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    examples = [
        _error_of(tmp_path, "--new", AGENT_ASSIST_COMPACTION_INTERVAL="often"),
        _error_of(tmp_path, "--new", "--model", "nosuch:thing"),
    ]
    for line in examples:
        assert f"    {line}" in readme, line


def test_the_tours_pid_stand_in_keeps_table_columns_whatever_the_pids_digits() -> None:
    """Found in CI: a 3-digit shell pid widened the sessions table by one column."""
    normalize = _tour_module()._normalize
    expected = "1a2b3c4d5e6f  idle   4242      2026-03-31 14:22 UTC\nterminal 4242 here"
    for pid in (684, 4242, 16459, 104242, 4194301):
        row = f"1a2b3c4d5e6f  idle   {str(pid).ljust(8)}  2026-03-31 14:22 UTC"
        assert normalize([row, f"terminal {pid} here"], pid) == expected
