"""Fuzzing what crosses the disk boundary: crafted session files, pointers and directory entries
never break listing, offering or pruning of a project (each bad entry is one warning)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from session.catalog import SessionCatalog

SCALE = int(os.environ.get("AGENT_ASSIST_FUZZ_SCALE", "1"))
"""More examples for a long run (``AGENT_ASSIST_FUZZ_SCALE=10``)."""
SID = "aaaaaaaaaaaa"
PROJECT = "ws_00000000"

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
timestamps = st.one_of(
    st.sampled_from(
        [
            "2026-11-29T12:00:00Z",
            "0001-01-01T00:00:00+01:00",
            "9999-12-31T23:59:59-01:00",
            "9999-12-31T23:59:59+00:00",
            "0001-01-01T00:00:00Z",
            "2026-11-29T12:00:00",
            "2026-02-30T12:00:00Z",
            "",
        ]
    ),
    st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()),
    json_values,
)
pids = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.integers(min_value=2**31 - 2, max_value=2**31 + 2),
    st.integers(min_value=2**62, max_value=2**80),
    st.just(os.getpid()),
    json_values,
)
session_ids = st.one_of(st.just(SID), st.text(max_size=14), json_values)
messages = st.one_of(
    st.just([]),
    st.just(
        [
            {
                "kind": "request",
                "parts": [
                    {
                        "part_kind": "user-prompt",
                        "content": "hi",
                        "timestamp": "2026-11-29T12:00:00Z",
                    }
                ],
            }
        ]
    ),
    st.lists(json_values, max_size=3),
    json_values,
)


@st.composite
def session_files(draw: st.DrawFn) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "schema_version": draw(st.one_of(st.sampled_from([1, 2, 3, 4, 99, 0, -1]), json_values)),
        "session_id": draw(session_ids),
        "created_at": draw(timestamps),
        "updated_at": draw(timestamps),
        "agent_spec_path": draw(st.one_of(st.none(), st.text(max_size=10), json_values)),
        "file_manifest": draw(st.one_of(st.just({}), json_values)),
        "summary": draw(st.one_of(st.none(), st.text(max_size=30), json_values)),
        "decisions": draw(st.one_of(st.just([]), st.lists(st.text(max_size=5)), json_values)),
        "recent_messages": draw(messages),
        "messages": draw(messages),
        "compacted_history_summary": draw(st.one_of(st.none(), json_values)),
        "checkpoint_count": draw(
            st.one_of(st.integers(min_value=-1, max_value=2**80), json_values)
        ),
        "phase": draw(st.one_of(st.sampled_from(["design", "code", None]), json_values)),
    }
    keep = draw(st.sets(st.sampled_from(sorted(fields)), min_size=len(fields) - 3))
    return {k: v for k, v in fields.items() if k in keep}


@st.composite
def pointer_files(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "session_id": draw(session_ids),
        "pid": draw(pids),
        "pid_start_time": draw(
            st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False), json_values)
        ),
        "updated_at": draw(timestamps),
    }


names = st.one_of(
    st.just(f"{SID}.json"),
    st.just("bbbbbbbbbbbb.json"),
    st.integers(min_value=-3, max_value=2**80).map(lambda n: f"active_{n}.json"),
    st.just(f"active_{os.getpid()}.json"),
    st.just(f".{SID}.json.tmp"),
    st.text(alphabet="abcdef0123456789_.-", min_size=1, max_size=20).filter(
        lambda n: n not in (".", "..")
    ),
)
contents = st.one_of(
    session_files().map(lambda d: json.dumps(d).encode()),
    pointer_files().map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=64),
)
kinds = st.sampled_from(["file", "file", "file", "directory", "symlink", "dangling", "fifo"])
entries = st.lists(st.tuples(names, kinds, contents), max_size=6, unique_by=lambda e: e[0])
layouts = st.sampled_from(
    ["plain", "sessions is a file", "sessions is a symlink", "projects is a symlink"]
)


def build(root: Path, layout: str, made: list[tuple[str, str, bytes]]) -> Path:
    project = root / "projects" / PROJECT / "sessions"
    elsewhere = root / "elsewhere"
    elsewhere.mkdir(parents=True)
    if layout == "sessions is a file":
        project.parent.mkdir(parents=True)
        project.write_text("x")
        return project
    if layout == "sessions is a symlink":
        project.parent.mkdir(parents=True)
        project.symlink_to(elsewhere, target_is_directory=True)
        target = elsewhere
    elif layout == "projects is a symlink":
        (elsewhere / PROJECT / "sessions").mkdir(parents=True)
        (root / "projects").symlink_to(elsewhere, target_is_directory=True)
        target = elsewhere / PROJECT / "sessions"
    else:
        project.mkdir(parents=True)
        target = project
    for name, kind, data in made:
        path = target / name
        if kind == "file":
            path.write_bytes(data)
        elif kind == "directory":
            path.mkdir()
        elif kind == "symlink":
            (elsewhere / f"target-{name}").write_bytes(data)
            path.symlink_to(elsewhere / f"target-{name}")
        elif kind == "dangling":
            path.symlink_to(elsewhere / "missing")
        else:
            os.mkfifo(path)
    return project


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Everything outside the project as it is (nothing there may change)."""
    out: dict[str, bytes | str] = {}
    for path in sorted((root / "elsewhere").rglob("*")):
        out[str(path)] = path.read_bytes() if path.is_file() and not path.is_symlink() else "other"
    return out


@settings(max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layout=layouts, made=entries, read_only=st.booleans())
def test_crafted_entries_never_break_a_project(
    layout: str, made: list[tuple[str, str, bytes]], read_only: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project = build(root, layout, made)
        outside = snapshot(root)
        catalog = SessionCatalog(root, read_only=read_only)
        for projects in (None, (project,)):
            listing = catalog.list(projects, {})
            json.dumps([row.to_json() for row in listing.rows])
            assert all(isinstance(w, str) and "\n" not in w for w in listing.warnings)
        offered = catalog.find_resumable(project, os.getpid(), {})
        if offered.offer is not None:
            offered.offer.model_dump(mode="json")
        catalog.prune((project,), 0, dry_run=True, live={})
        if not read_only:
            catalog.prune((project,), 0, dry_run=False, live={})
        if layout != "plain":
            assert snapshot(root) == outside  # nothing behind a directory symlink is touched
