"""``agent-assist config show`` and the chat's model: the settings with where each came from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from session.budget import BUDGET_SHARE, context_budget, context_window
from session.model_names import check_model, missing_sdk
from session.paths import state_root
from session.settings import CONFIG_FILE, SPECS, Settings, SettingsError, load_settings

UNSET = {"summary_model": "(offline summarizer)"}


def source_label(settings: Settings, name: str) -> str:
    source = settings.source_of(name)
    if source == "env":
        env = next(spec.env for spec in SPECS if spec.name == name)
        return f"env {env}"
    if source == "option":
        return f"option --{name.replace('_', '-')}"
    if source == "file":
        return f"file {state_root() / CONFIG_FILE}"
    return source


def load(options: Mapping[str, object | None] | None = None) -> Settings:
    """The settings (defaults < config.toml < environment < options), with the model checked.

    SettingsError (one line naming the setting and its source) for a bad value.
    """
    settings = load_settings(state_root(), os.environ, options)
    problem = check_model(settings.model, source_label(settings, "model"))
    if problem is not None:
        raise SettingsError(problem.removeprefix("error: "))
    if settings.summary_model is not None:
        source = source_label(settings, "summary_model")
        problem = check_model(settings.summary_model, source, "summary_model")
        if problem is not None:
            raise SettingsError(problem.removeprefix("error: "))
    return settings


def check_sdks(settings: Settings) -> None:
    """SettingsError (one line naming the package) if a chosen model's SDK is missing."""
    for problem in sdk_problems(settings):
        raise SettingsError(problem)


def sdk_problems(settings: Settings) -> list[str]:
    """For each chosen model whose SDK is missing, the line that says which package."""
    problems = []
    for name in ("model", "summary_model"):
        model = getattr(settings, name)
        if model is not None and (problem := missing_sdk(model, source_label(settings, name))):
            problems.append(problem.removeprefix("error: "))
    return problems


def report(options: Mapping[str, object | None] | None = None) -> dict[str, Any]:
    """Every setting: its value, its source, and the environment variable that sets it."""
    settings = load(options)
    rows = {
        spec.name: {
            "value": getattr(settings, spec.name),
            "source": settings.source_of(spec.name),
            "env": spec.env,
        }
        for spec in SPECS
    }
    path = state_root() / CONFIG_FILE
    return {"config_file": str(path), "config_file_exists": path.is_file(), "settings": rows}


def budget_from(model: str) -> str:
    """The budget an unset ``context_tokens`` means, and where it comes from."""
    window = context_window(model)
    share = f"{BUDGET_SHARE:.0%}"
    return f"{context_budget(model)} ({share} of the model's {window}-token window)"


def render(data: dict[str, Any]) -> str:
    rows = data["settings"]
    cells = [("SETTING", "VALUE", "SOURCE")]
    for name, row in rows.items():
        value = row["value"]
        shown = UNSET.get(name, "-") if value is None else str(value)
        if name == "context_tokens" and value is None:
            shown = budget_from(str(rows["model"]["value"]))
        source = row["source"]
        if source == "env":
            source = f"env ({row['env']})"
        elif source == "file":
            source = "file (config.toml)"
        cells.append((name, shown, source))
    widths = [max(len(c[i]) for c in cells) for i in range(2)]
    lines = [f"{a.ljust(widths[0])}  {b.ljust(widths[1])}  {c}" for a, b, c in cells]
    state = "" if data["config_file_exists"] else " (not present)"
    lines += ["", f"config file: {data['config_file']}{state}"]
    return "\n".join(lines)
