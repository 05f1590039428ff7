"""``agent-assist config show`` and the chat's model: the settings with where each came from."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Mapping
from typing import Any

from session.budget import BUDGET_SHARE, context_budget, context_window, known_context_window
from session.model_names import missing_sdk
from session.paths import state_root
from session.settings import CONFIG_FILE, SPECS, Settings, SettingsError, load_settings

OFFLINE_SUMMARIZER = "the extractive summarizer, no network"
"""Where an unset ``summary_model``'s summaries come from."""


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
    """The settings (defaults < config.toml < environment < options), the models checked.

    SettingsError (one line naming the setting and its source) for each bad value.
    """
    return load_settings(state_root(), os.environ, options)  # the models checked with the rest


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
    """Every setting: its value (null when unset), its source, the environment variable
    that sets it, the value the chat uses (``effective``) and, for an unset one, where that
    comes from (``derived``)."""
    settings = load(options)
    rows = {}
    for spec in SPECS:
        value = getattr(settings, spec.name)
        effective, derived = effective_value(settings, spec.name)
        rows[spec.name] = {
            "value": value,
            "source": settings.source_of(spec.name),
            "env": spec.env,
            "effective": effective,
            "derived": derived,
        }
    path = state_root() / CONFIG_FILE
    return {"config_file": str(path), "config_file_exists": path.is_file(), "settings": rows}


def effective_value(settings: Settings, name: str) -> tuple[object, str | None]:
    """The value a chat with ``settings`` uses for ``name``, and where it comes from when
    the setting is unset (None when it is set: it is its own value)."""
    value = getattr(settings, name)
    if value is not None:
        return value, None
    if name == "context_tokens":
        return context_budget(settings.model), budget_from(settings.model)
    if name == "summary_model":
        return "offline", OFFLINE_SUMMARIZER
    raise AssertionError(f"{name} has no default")  # every other setting has a value


def budget_from(model: str) -> str:
    """Where the budget an unset ``context_tokens`` means comes from."""
    if known_context_window(model) is None:
        return (
            f"{BUDGET_SHARE:.0%} of an assumed {context_window(model)}-token window: "
            "this model's is not known"
        )
    return f"{BUDGET_SHARE:.0%} of the model's {context_window(model)}-token window"


MIN_VALUE_WIDTH = 20
"""The narrowest VALUE column a table too wide for its terminal wraps its values in,
while the SOURCE column fits whole beside it."""
MIN_NARROW_WIDTH = 6
"""The narrowest VALUE column on a terminal too narrow for that: the SOURCE column
gets what ``default`` needs, and wraps its longer sources too."""


def render(data: dict[str, Any], width: int | None = None) -> str:
    """The settings as a table. Wider than ``width`` (the terminal's, when stdout is
    one), the VALUE column wraps its long values between words under itself, the
    SOURCE staying on each setting's first line: a row the terminal wraps puts its
    SOURCE on a line of its own."""
    rows = data["settings"]
    cells = [("SETTING", "VALUE", "SOURCE")]
    for name, row in rows.items():
        shown = str(row["effective"])
        if row["derived"]:
            shown += f" ({row['derived']})"
        elif name == "compaction_interval" and row["effective"] == 0:
            shown += " (automatic compaction off)"
        source = row["source"]
        if source == "env":
            source = f"env ({row['env']})"
        elif source == "file":
            source = "file (config.toml)"
        cells.append((name, shown, source))
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    if width is not None and sum(widths) + 4 > width:
        room = width - widths[0] - 4  # for VALUE and SOURCE
        if room - widths[2] < MIN_VALUE_WIDTH:  # the SOURCE wraps too (40 columns)
            widths[2] = min(widths[2], max(room - MIN_VALUE_WIDTH, len("default")))
        widths[1] = max(room - widths[2], MIN_NARROW_WIDTH)
    lines = []
    for a, b, c in cells:
        values = textwrap.wrap(b, widths[1], break_on_hyphens=False) or [b]
        sources = [  # between words, and inside one only when it is wider than the column
            piece
            for line in textwrap.wrap(c, widths[2], break_long_words=False) or [c]
            for piece in textwrap.wrap(line, widths[2], break_on_hyphens=False)
        ]
        for n in range(max(len(values), len(sources))):
            value = values[n] if n < len(values) else ""
            source = sources[n] if n < len(sources) else ""
            name = a if n == 0 else ""
            lines.append(f"{name.ljust(widths[0])}  {value.ljust(widths[1])}  {source}".rstrip())
    state = "" if data["config_file_exists"] else " (not present)"
    where = f"config file: {data['config_file']}{state}"
    lines += ["", *(textwrap.wrap(where, width, break_long_words=False) if width else [where])]
    return "\n".join(lines)
