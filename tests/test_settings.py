"""session/settings.py: layers, sources and the one-line refusal of bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from session.settings import SettingsError, resolve_settings, supervisor_settings


def test_options_beat_the_environment_which_beats_the_file() -> None:
    settings = resolve_settings(
        {"compaction_interval": 3, "compaction_overlap": 1, "model": "openai-chat:a"},
        {"AGENT_ASSIST_COMPACTION_OVERLAP": "2", "AGENT_ASSIST_MODEL": "openai-chat:b"},
        {"model": "openai-chat:c"},
    )
    assert (settings.compaction_interval, settings.source_of("compaction_interval")) == (3, "file")
    assert (settings.compaction_overlap, settings.source_of("compaction_overlap")) == (2, "env")
    assert (settings.model, settings.source_of("model")) == ("openai-chat:c", "option")
    assert settings.source_of("context_tokens") == "default"


@pytest.mark.parametrize("value", ["-1", "abc", "3.0", "٣", "1_0", "101", "9" * 30])
def test_a_bad_interval_is_one_line_naming_it_and_its_source(value: str) -> None:
    with pytest.raises(SettingsError) as caught:
        resolve_settings({}, {"AGENT_ASSIST_COMPACTION_INTERVAL": value})
    assert str(caught.value) == (
        f"bad compaction_interval {value!r} from env AGENT_ASSIST_COMPACTION_INTERVAL: "
        "must be a whole number between 0 and 100"
    )


@pytest.mark.parametrize("value", [True, 2.5, "x", -3])
def test_a_bad_value_in_the_file_names_the_file(value: object) -> None:
    with pytest.raises(SettingsError, match=r"bad compaction_overlap .* from file config.toml"):
        resolve_settings({"compaction_overlap": value}, {})


def test_a_key_given_as_a_bad_value_is_not_printed() -> None:
    """H96: a key pasted into the wrong setting was printed back in the error line."""
    from session.model_names import check_model

    key = "sk-proj-CoNfIgToMlKeY0123456789ab"
    with pytest.raises(SettingsError) as caught:
        resolve_settings({}, {"AGENT_ASSIST_COMPACTION_INTERVAL": key})
    assert key not in str(caught.value) and "[REDACTED]" in str(caught.value)
    line = check_model(key, "env AGENT_ASSIST_MODEL")
    assert line is not None and key not in line and "[REDACTED]" in line


def test_context_tokens_auto_means_derived_from_the_model() -> None:
    assert resolve_settings({"context_tokens": "auto"}, {}).context_tokens is None
    with pytest.raises(SettingsError, match="between 2000 and"):
        resolve_settings({}, {"AGENT_ASSIST_CONTEXT_TOKENS": "999"})


@pytest.mark.parametrize(
    ("file", "env", "line"),
    [
        (
            {},
            {"AGENT_ASSIST_CONTEXT_TOKENS": "1000"},
            "bad context_tokens '1000' from env AGENT_ASSIST_CONTEXT_TOKENS: "
            "must be a whole number between 2000 and 10000000",
        ),
        (
            {"context_tokens": 1999},
            {},
            "bad context_tokens 1999 from file config.toml: "
            "must be a whole number between 2000 and 10000000",
        ),
    ],
)
def test_a_budget_below_what_a_request_needs_is_one_line_naming_it_and_its_source(
    file: dict[str, object], env: dict[str, str], line: str
) -> None:
    """H146 then H153: ``AGENT_ASSIST_CONTEXT_TOKENS=1000`` was accepted and every request
    went over it (the agent's own part and the two shares are over 1,000 tokens alone)."""
    with pytest.raises(SettingsError) as caught:
        resolve_settings(file, env)
    assert str(caught.value) == line
    assert resolve_settings({}, {"AGENT_ASSIST_CONTEXT_TOKENS": "2000"}).context_tokens == 2000


def test_the_smallest_budget_leaves_room_for_a_message_besides_what_every_request_carries(
) -> None:
    """The agent's own part, the compaction's and the rules' shares (a quarter each) and
    the summary's framing leave at least 1,200 characters of the smallest budget."""
    from actors.assistant import agent_chars
    from session.compaction import COMPACTION_SHARE, estimate_tokens
    from session.history import SUMMARY_FRAMING_CHARS
    from session.settings import MIN_CONTEXT_TOKENS

    fixed = agent_chars() + SUMMARY_FRAMING_CHARS + 2 * MIN_CONTEXT_TOKENS * 4 // COMPACTION_SHARE
    assert MIN_CONTEXT_TOKENS - estimate_tokens(fixed) >= 1_200 // 4


def test_a_bad_boolean_in_the_file_is_shown_as_toml_writes_it() -> None:
    with pytest.raises(SettingsError, match=r"^bad compaction_interval true from file config.toml"):
        resolve_settings({"compaction_interval": True}, {})


def test_a_fifo_at_the_config_file_is_one_line_not_a_wait_forever(tmp_path: Path) -> None:
    import os

    from session.errors import SessionError
    from session.settings import read_config_file

    os.mkfifo(tmp_path / "config.toml")
    with pytest.raises(SessionError, match=r"config\.toml: not a regular file"):
        read_config_file(tmp_path)


def test_a_directory_at_the_config_file_is_one_line(tmp_path: Path) -> None:
    from session.errors import SessionError
    from session.settings import read_config_file

    (tmp_path / "config.toml").mkdir()
    with pytest.raises(SessionError, match=r"cannot read .*config\.toml"):
        read_config_file(tmp_path)


@pytest.mark.parametrize("model", ["openai-chat:x\x07bell", "openai-chat:x\x1b[31mRED", "a\x00b"])
def test_a_model_string_with_a_control_character_is_refused(model: str) -> None:
    """A helper's attack: a BEL or an escape was accepted and reached the terminal."""
    with pytest.raises(SettingsError, match="must be a model string"):
        resolve_settings({}, {"AGENT_ASSIST_MODEL": model})
    with pytest.raises(SettingsError, match=r"from file config\.toml: must be a model string"):
        resolve_settings({"model": model}, {})


def test_a_config_file_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    from session.settings import read_config_file

    (tmp_path / "config.toml").write_bytes(b'model = "\xff\xfe"\n')
    with pytest.raises(SettingsError, match=r"config\.toml is not valid UTF-8 \(byte 9\)"):
        read_config_file(tmp_path)


def test_a_config_file_link_that_broke_is_one_line_not_the_defaults(tmp_path: Path) -> None:
    """A helper's report (H55): a dangling symlink read as no file: the defaults, silently."""
    from session.settings import read_config_file

    (tmp_path / "config.toml").symlink_to(tmp_path / "dotfiles" / "config.toml")
    with pytest.raises(SettingsError, match=r"config\.toml is a symlink to .*, which does not"):
        read_config_file(tmp_path)


def test_a_config_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """A helper's report (H55): an editor's UTF-8 byte order mark made the file invalid TOML
    at line 1, column 1, with nothing to say why."""
    from session.settings import read_config_file

    (tmp_path / "config.toml").write_bytes(b'\xef\xbb\xbfmodel = "offline"\n')
    assert read_config_file(tmp_path) == {"model": "offline"}


def test_a_state_root_that_is_a_file_is_named_as_such(tmp_path: Path) -> None:
    """A helper's report (H55): the error blamed config.toml, not the state root."""
    from session.settings import read_config_file

    (tmp_path / "home").write_text("not a directory\n")
    with pytest.raises(SettingsError, match=r"state root .*home \(AGENT_ASSIST_HOME\) is not a"):
        read_config_file(tmp_path / "home")


@pytest.mark.parametrize(
    ("model", "derived"),
    [
        ("openai-chat:gpt-4o", "75% of the model's 128000-token window"),
        (
            "openai-chat:my-own-model",
            "75% of an assumed 32768-token window: this model's is not known",
        ),
    ],
)
def test_config_show_says_when_the_models_window_is_only_assumed(model: str, derived: str) -> None:
    """H113: an unknown model's budget was said to be 75% of "the model's" window, a
    default this table assumes."""
    from cli.config_cmd import budget_from

    assert budget_from(model) == derived


def test_config_show_says_a_compaction_interval_of_0_turns_compaction_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """H113: `compaction_interval 0` said nothing of what it means."""
    from cli.config_cmd import render, report

    monkeypatch.setenv("AGENT_ASSIST_HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_ASSIST_COMPACTION_INTERVAL", "0")
    shown = render(report()).splitlines()
    (line,) = [row for row in shown if row.startswith("compaction_interval")]
    assert "0 (automatic compaction off)" in line


@pytest.mark.parametrize("value", ["maybe", "no", "false", "2", "00"])
def test_a_bad_heir_value_is_one_line_as_a_bad_setting_is(value: str) -> None:
    """A new user's trial (H127): AGENT_ASSIST_HEIR=maybe was taken silently (as 1)."""
    with pytest.raises(SettingsError) as caught:
        resolve_settings({}, {"AGENT_ASSIST_HEIR": value})
    message = str(caught.value)
    assert message.startswith(f"bad AGENT_ASSIST_HEIR '{value}': must be 0") and "\n" not in message


@pytest.mark.parametrize(
    ("value", "wanted"), [("0", False), ("1", True), ("", True), (" 0", False)]
)
def test_the_heir_values_that_mean_something(value: str, wanted: bool) -> None:
    from session.settings import heir_wanted

    resolve_settings({}, {"AGENT_ASSIST_HEIR": value})
    assert heir_wanted({"AGENT_ASSIST_HEIR": value}) is wanted


def test_a_supervisor_starts_with_the_default_for_a_bad_value_and_names_it(
    tmp_path: Path,
) -> None:
    """H152: the supervisor needs none of the chats' settings; a bad one is told, not
    fatal, and the good ones still apply."""
    from session.settings import supervisor_settings

    (tmp_path / "config.toml").write_text('compaction_interval = "abc"\ncompaction_overlap = 3\n')
    settings, problems = supervisor_settings(tmp_path, {})
    assert (settings.compaction_interval, settings.compaction_overlap) == (10, 3)
    assert problems == (
        f"bad compaction_interval 'abc' from file {tmp_path}/config.toml: must be a whole "
        "number between 0 and 100; the supervisor starts without it (a chat refuses it "
        "until it is fixed)",
    )
    with pytest.raises(SettingsError, match="compaction_interval"):
        resolve_settings({"compaction_interval": "abc"}, {})


def test_every_bad_value_is_named_each_in_its_line() -> None:
    """Not the first bad value only: fixing it would show the next one at the next run."""
    with pytest.raises(SettingsError) as raised:
        resolve_settings({"compaction_interval": "abc"}, {"AGENT_ASSIST_COMPACTION_OVERLAP": "x"})
    first, second = str(raised.value).splitlines()
    assert first.startswith("bad compaction_interval 'abc' from file config.toml:")
    assert second.startswith("error: bad compaction_overlap 'x' from env ")


def test_every_unknown_setting_of_the_file_is_named(tmp_path: Path) -> None:
    """As for bad values: naming the first only, fixing it revealed the next at the next run."""
    from session.settings import read_config_file

    (tmp_path / "config.toml").write_text('modle = "offline"\ncontext_token = 4000\n')
    with pytest.raises(SettingsError) as raised:
        read_config_file(tmp_path)
    assert str(raised.value).startswith(
        f"{tmp_path}/config.toml: unknown settings 'context_token', 'modle' (known: model, "
    )


def test_unknown_settings_of_the_file_are_named_with_its_bad_values(tmp_path: Path) -> None:
    """H178's find: the file's unknown keys were refused alone, its bad values unread;
    once the typo was fixed, the next run told the bad value."""
    from session.settings import load_settings

    (tmp_path / "config.toml").write_text('modle = "x"\ncompaction_interval = -3\n')
    with pytest.raises(SettingsError) as raised:
        load_settings(tmp_path, {})
    unknown, bad = str(raised.value).splitlines()
    assert unknown.startswith(f"{tmp_path}/config.toml: unknown setting 'modle' (known: ")
    assert bad.startswith("error: bad compaction_interval -3 from file ")


def test_an_unknown_model_is_named_with_the_other_bad_values() -> None:
    """H178's find: the model's provider was checked only once every other value was good."""
    with pytest.raises(SettingsError) as raised:
        resolve_settings(
            {"summary_model": "nosuch:small"},
            {"AGENT_ASSIST_MODEL": "nosuch:big", "AGENT_ASSIST_COMPACTION_OVERLAP": "x"},
        )
    model, summary, overlap = str(raised.value).splitlines()
    assert model.startswith("unknown model 'nosuch:big' from env AGENT_ASSIST_MODEL (")
    assert summary.startswith("error: unknown summary_model 'nosuch:small' from file ")
    assert overlap.startswith("error: bad compaction_overlap 'x' from env ")


def test_a_bad_heir_variable_is_named_with_the_bad_values() -> None:
    with pytest.raises(SettingsError) as raised:
        resolve_settings({"compaction_interval": "abc"}, {"AGENT_ASSIST_HEIR": "yes"})
    interval, heir = str(raised.value).splitlines()
    assert interval.startswith("bad compaction_interval 'abc' from file config.toml:")
    assert heir.startswith("error: bad AGENT_ASSIST_HEIR 'yes': ")


def test_the_supervisor_keeps_the_known_settings_of_a_file_with_an_unknown_one(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.toml").write_text("modle = 1\ncompaction_overlap = 3\n")
    settings, problems = supervisor_settings(tmp_path, {})
    assert settings.compaction_overlap == 3
    (problem,) = problems
    assert problem.startswith(f"{tmp_path}/config.toml: unknown setting 'modle' (known: ")


def test_a_bad_tuning_value_is_quoted_scrubbed_before_it_is_cut() -> None:
    """Cut to 40 characters first, a token pasted into a tuning variable kept its head
    (``ghp_`` and six characters no pattern takes) in the error line."""
    from supervisor.runtime import TuningError, number_from_env

    name = "AGENT_ASSIST_HELLO_TIMEOUT_S"
    token = "ghp_" + "A1b2C3d4E5" * 4
    with pytest.raises(TuningError) as caught:
        number_from_env(name, 1.0, {name: "x" * 29 + " " + token})
    assert "ghp_" not in str(caught.value) and "A1b2" not in str(caught.value), str(caught.value)
