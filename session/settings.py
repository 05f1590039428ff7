"""The settings of DESIGN 8: defaults < ``<root>/config.toml`` < environment < options.

Each value remembers where it came from (``default``, ``file``, ``env``,
``option``) so ``agent-assist config show`` can say it, and a bad value is
refused with one line naming the setting and its source.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from session.errors import SessionError
from session.model_names import check_model

Source = Literal["default", "file", "env", "option"]
CONFIG_FILE: Final = "config.toml"

DEFAULT_MODEL: Final = "offline"
DEFAULT_COMPACTION_INTERVAL: Final = 10
DEFAULT_COMPACTION_OVERLAP: Final = 2
MAX_COMPACTION_INTERVAL: Final = 100
MAX_COMPACTION_OVERLAP: Final = 50
MAX_CONTEXT_TOKENS: Final = 10_000_000
MIN_CONTEXT_TOKENS: Final = 2_000
"""The smallest token budget that holds a request (H153): the agent's own instructions
and tools (~590 tokens), the compaction's and the rules' shares (a quarter of the budget
each) and the summary's framing leave ~350 tokens for the message and the last turn. At
1,000 those alone were over it before any message."""
DEFAULT_MODEL_TIMEOUT_S: Final = 300
MAX_MODEL_TIMEOUT_S: Final = 86_400
DEFAULT_CHECKPOINT_MAX_MB: Final = 500.0
MAX_CHECKPOINT_MAX_MB: Final = 10_000_000.0


class SettingsError(SessionError):
    """A setting has a value that cannot be used (the message names it and its source)."""


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: Source


def _model(raw: object) -> str:
    if (
        not isinstance(raw, str)
        or not raw.strip()
        or any(c.isspace() or not c.isprintable() for c in raw.strip())
    ):  # no space, no control character (a BEL or an escape would reach the terminal)
        raise ValueError("must be a model string such as offline or openai-chat:NAME")
    return raw.strip()


def _optional_model(raw: object) -> str | None:
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    return _model(raw)


def _count(minimum: int, maximum: int | None = None) -> Callable[[object], int]:
    bounds = f"between {minimum} and {maximum}" if maximum is not None else f">= {minimum}"

    def parse(raw: object) -> int:
        text = str(raw).strip() if isinstance(raw, str | int) and not isinstance(raw, bool) else ""
        if not re.fullmatch(r"[0-9]{1,12}", text):
            raise ValueError(f"must be a whole number {bounds}")
        value = int(text)
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(f"must be a whole number {bounds}")
        return value

    return parse


def _optional_tokens(raw: object) -> int | None:
    if raw is None or (isinstance(raw, str) and raw.strip() in ("", "auto")):
        return None
    return _count(MIN_CONTEXT_TOKENS, MAX_CONTEXT_TOKENS)(raw)


def _megabytes(raw: object) -> float:
    text = (
        str(raw).strip() if isinstance(raw, str | int | float) and not isinstance(raw, bool) else ""
    )
    try:
        value = float(text) if len(text) <= 32 else -1.0
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_CHECKPOINT_MAX_MB:  # also refuses nan and inf
        raise ValueError(f"must be a number of megabytes > 0 and <= {MAX_CHECKPOINT_MAX_MB:,.0f}")
    return value


@dataclass(frozen=True)
class _Spec:
    name: str
    env: str
    default: Any
    parse: Callable[[object], Any]


SPECS: Final = (
    _Spec("model", "AGENT_ASSIST_MODEL", DEFAULT_MODEL, _model),
    _Spec("summary_model", "AGENT_ASSIST_SUMMARY_MODEL", None, _optional_model),
    _Spec(
        "compaction_interval",
        "AGENT_ASSIST_COMPACTION_INTERVAL",
        DEFAULT_COMPACTION_INTERVAL,
        _count(0, MAX_COMPACTION_INTERVAL),
    ),
    _Spec(
        "compaction_overlap",
        "AGENT_ASSIST_COMPACTION_OVERLAP",
        DEFAULT_COMPACTION_OVERLAP,
        _count(0, MAX_COMPACTION_OVERLAP),
    ),
    _Spec("context_tokens", "AGENT_ASSIST_CONTEXT_TOKENS", None, _optional_tokens),
    _Spec(
        "model_timeout",
        "AGENT_ASSIST_MODEL_TIMEOUT_S",
        DEFAULT_MODEL_TIMEOUT_S,
        _count(1, MAX_MODEL_TIMEOUT_S),
    ),
    _Spec(
        "checkpoint_max_mb",
        "AGENT_ASSIST_CHECKPOINT_MAX_MB",
        DEFAULT_CHECKPOINT_MAX_MB,
        _megabytes,
    ),
)
NAMES: Final = tuple(spec.name for spec in SPECS)
MODEL_SETTINGS: Final = ("model", "summary_model")
"""Checked against the known providers too (``check_model``), with the other values."""


@dataclass(frozen=True)
class Settings:
    """Resolved settings; ``context_tokens`` None means "derived from the model"."""

    model: str = DEFAULT_MODEL
    summary_model: str | None = None
    compaction_interval: int = DEFAULT_COMPACTION_INTERVAL
    compaction_overlap: int = DEFAULT_COMPACTION_OVERLAP
    context_tokens: int | None = None
    model_timeout: int = DEFAULT_MODEL_TIMEOUT_S
    """Seconds a model may send nothing before its reply is stopped (a hung call)."""
    checkpoint_max_mb: float = DEFAULT_CHECKPOINT_MAX_MB
    """The size cap of one session's checkpoints, in megabytes."""

    def for_chat(self) -> dict[str, object]:
        """What a chat sends its supervisor (the ``settings`` of its hello): every setting
        the session runs with, so a running supervisor applies this terminal's values."""
        return {spec.name: getattr(self, spec.name) for spec in SPECS if spec.name != "model"}

    sources: tuple[Setting, ...] = ()

    def source_of(self, name: str) -> Source:
        return next((s.source for s in self.sources if s.name == name), "default")


MAX_CONFIG_BYTES = 1_000_000


def _read_settings_file(path: Path) -> bytes:
    """The file's bytes; OSError for anything that is not a regular file of a sane size (a
    FIFO at its name made every chat and ``config show`` wait forever for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise OSError(errno.EFBIG, f"over {MAX_CONFIG_BYTES:,} bytes")
        return file.read(MAX_CONFIG_BYTES + 1)


def _not_a_directory(root: Path) -> str:
    return f"the state root {root} (AGENT_ASSIST_HOME) is not a directory"


def read_config_file(root: Path) -> dict[str, object]:
    """The TOML table of ``<root>/config.toml`` ({} when there is none); SettingsError for
    one that does not read or names a setting that does not exist."""
    table = _config_table(root)
    if (unknown := unknown_settings(table, root / CONFIG_FILE)) is not None:
        raise SettingsError(unknown)
    return table


def unknown_settings(table: Mapping[str, object], path: Path) -> str | None:
    """The line naming every key of the settings file ``path`` that is no setting."""
    unknown = sorted(set(table) - set(NAMES))
    if not unknown:
        return None
    named = f"setting{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}"
    return f"{path}: unknown {named} (known: {', '.join(NAMES)})"


def _config_table(root: Path) -> dict[str, object]:
    """``read_config_file``'s table, its keys unchecked."""
    path = root / CONFIG_FILE
    try:
        data = _read_settings_file(path)
    except FileNotFoundError:
        if path.is_symlink():  # a dotfiles link that broke: not "no file", silently
            raise SettingsError(
                f"{path} is a symlink to {os.readlink(path)}, which does not exist"
            ) from None
        if root.exists() and not root.is_dir():
            raise SettingsError(_not_a_directory(root)) from None
        return {}
    except NotADirectoryError:
        raise SettingsError(_not_a_directory(root)) from None
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror or exc}") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # the UTF-8 byte order mark some editors write
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise SettingsError(
            f"{path} is not valid UTF-8 (byte {exc.start}); TOML files are UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path} is not valid TOML: {exc}") from None
    return table


HEIR_ENV: Final = "AGENT_ASSIST_HEIR"


def heir_wanted(env: Mapping[str, str]) -> bool:
    """Whether a supervisor keeps an heir ready: ``AGENT_ASSIST_HEIR`` unset, empty or ``1``
    (the default), not ``0``. Any other value raises SettingsError, in one line."""
    raw = env.get(HEIR_ENV, "").strip()
    if raw not in ("", "0", "1"):
        raise SettingsError(
            f"bad {HEIR_ENV} {_shown(raw)}: must be 0 (no heir) or 1 (an heir, the default)"
        )
    return raw != "0"


def resolve_settings(
    file: Mapping[str, object],
    env: Mapping[str, str],
    options: Mapping[str, object | None] | None = None,
    *,
    file_label: str = CONFIG_FILE,
    problems: tuple[str, ...] = (),
) -> Settings:
    """Merge the layers (later wins) and validate each value against its source: one
    SettingsError naming every bad value, each in its line (the others after the first
    begin with their own ``error:``), so that fixing one does not reveal the next;
    ``problems``, the file's (its unknown keys), are said first among them."""
    options = options or {}
    sources: list[Setting] = []
    bad = list(problems)
    for spec in SPECS:
        try:
            setting = _resolved(spec, file, env, options, file_label)
        except SettingsError as exc:
            bad.append(str(exc))
            continue
        sources.append(setting)
        if spec.name in MODEL_SETTINGS and isinstance(setting.value, str):  # with the rest
            where = _where(spec, setting.source, file_label)
            if (line := check_model(setting.value, where, spec.name)) is not None:
                bad.append(line.removeprefix("error: "))
    try:
        heir_wanted(env)  # no setting of the file, but checked wherever the settings are
    except SettingsError as exc:
        bad.append(str(exc))
    if bad:
        raise SettingsError("\nerror: ".join(bad))
    return Settings(**{s.name: s.value for s in sources}, sources=tuple(sources))


def _resolved(
    spec: _Spec,
    file: Mapping[str, object],
    env: Mapping[str, str],
    options: Mapping[str, object | None],
    file_label: str,
) -> Setting:
    """One setting from its layers; SettingsError for a bad value, naming its source."""
    raw: object = spec.default
    source: Source = "default"
    if spec.name in file:
        raw, source = file[spec.name], "file"
    if env.get(spec.env) not in (None, ""):
        raw, source = env[spec.env], "env"
    if options.get(spec.name) is not None:
        raw, source = options[spec.name], "option"
    try:
        value = spec.parse(raw) if source != "default" else raw
    except ValueError as exc:
        where = _where(spec, source, file_label)
        raise SettingsError(f"bad {spec.name} {_shown(raw)} from {where}: {exc}") from None
    return Setting(spec.name, value, source)


def _where(spec: _Spec, source: Source, file_label: str) -> str:
    """A setting's source as ``cli.config_cmd.source_label`` names it: "file PATH",
    "env NAME", "option --name"."""
    if source == "file":
        return f"file {file_label}"
    if source == "env":
        return f"env {spec.env}"
    if source == "option":
        return f"option --{spec.name.replace('_', '-')}"
    return source


def load_settings(
    root: Path, env: Mapping[str, str], options: Mapping[str, object | None] | None = None
) -> Settings:
    table, unknown = _known_settings(root)
    label = str(root / CONFIG_FILE)
    return resolve_settings(table, env, options, file_label=label, problems=unknown)


def _known_settings(root: Path) -> tuple[dict[str, object], tuple[str, ...]]:
    """The settings file's known keys, and the line of its unknown ones if any: told with
    the bad values, not before them (fixing a typo revealed a bad value at the next run)."""
    table = _config_table(root)
    unknown = unknown_settings(table, root / CONFIG_FILE)
    return {k: v for k, v in table.items() if k in NAMES}, () if unknown is None else (unknown,)


STARTS_WITHOUT: Final = "; the supervisor starts without it (a chat refuses it until it is fixed)"


def supervisor_settings(root: Path, env: Mapping[str, str]) -> tuple[Settings, tuple[str, ...]]:
    """The settings a supervisor starts with, and the problems it is to log: a bad value
    (or a settings file that does not read) is the default instead, for the supervisor
    needs none of them to start: each chat resolves its own and refuses a bad one in one
    line (a supervisor refusing to start had every listing read without it, H152)."""
    problems: list[str] = []
    label = str(root / CONFIG_FILE)
    try:
        file, unknown = _known_settings(root)
    except SettingsError as exc:
        problems.append(f"{exc}{STARTS_WITHOUT}")
        file, unknown = {}, ()
    problems += [f"{line}{STARTS_WITHOUT}" for line in unknown]
    sources: list[Setting] = []
    for spec in SPECS:
        try:
            sources.append(_resolved(spec, file, env, {}, label))
        except SettingsError as exc:
            problems.append(f"{exc}{STARTS_WITHOUT}")
            sources.append(Setting(spec.name, spec.default, "default"))
    heir_wanted(env)  # the supervisor's own: a bad one is refused
    settings = Settings(**{s.name: s.value for s in sources}, sources=tuple(sources))
    return settings, tuple(problems)


def _shown(raw: object) -> str:
    """A bad value as the user wrote it: TOML's ``true``, not Python's ``True``; scrubbed
    (a key pasted into the wrong variable, ``AGENT_ASSIST_MODEL=sk-...``, is not printed)."""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    from session.redaction import scrub_text  # only on this error's path: its patterns cost

    return scrub_text(repr(raw))
