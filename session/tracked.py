"""The files a session tracks in its workspace: agent_spec.md, the template directory and
the files its tools touched; their manifest, and their drift at a resume. Blocking IO."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Set
from pathlib import Path

from session.filesystem import (
    FileDrift,
    build_file_manifest,
    clear_leftover_temps,
    detect_file_drift,
    list_tree,
)
from session.known_digests import KnownDigests

log = logging.getLogger("agent_assist.tracked")

AGENT_SPEC = "agent_spec.md"
TEMPLATE_DIR = "templates"


def tracked_paths_now(workspace: Path, tracked: Iterable[str]) -> tuple[set[str], str | None]:
    """The paths tracked now (agent_spec.md, the template directory, ``tracked``: the files
    the tools touched) and the spec path. Blocking: run it in a worker thread."""
    spec = AGENT_SPEC if (workspace / AGENT_SPEC).is_file() else None
    paths = set(tracked) | set(list_tree(workspace, TEMPLATE_DIR))
    if spec:
        paths.add(spec)
    return paths, spec


def tracked_files(
    workspace: Path, extra: Iterable[str], known: KnownDigests | None = None
) -> tuple[dict[str, str], str | None]:
    """The manifest (agent_spec.md, the template directory, files the tools touched) and
    the spec path; ``known``: the files read before. Blocking: run it in a worker thread."""
    paths, spec = tracked_paths_now(workspace, extra)
    return build_file_manifest(workspace, paths, known), spec


def tracked_files_and(
    workspace: Path, tracked: Iterable[str], extra: Iterable[str], known: KnownDigests | None = None
) -> tuple[dict[str, str], str | None, frozenset[str]]:
    """``tracked_files`` of ``tracked`` and ``extra`` in one pass over the files, and which
    of its paths are tracked (not there only as ``extra``). Blocking: run it in a worker
    thread."""
    paths, spec = tracked_paths_now(workspace, tracked)
    return build_file_manifest(workspace, paths | set(extra), known), spec, frozenset(paths)


def only(manifest: Mapping[str, str], paths: Set[str]) -> dict[str, str]:
    """The entries of ``manifest`` whose path is among ``paths``."""
    return {path: digest for path, digest in manifest.items() if path in paths}


def drift_at_resume(workspace: Path, manifest: Mapping[str, str]) -> FileDrift:
    """How the tracked files changed, once the temps a killed write (a tool's, a
    restore's) left beside them are cleared. Blocking: run it in a worker thread."""
    removed = clear_leftover_temps(workspace, manifest)
    if removed:
        log.info("removed %d leftover temp file(s) in %s", len(removed), workspace)
    return detect_file_drift(workspace, manifest)


