"""Which typed lines are slash commands and which are messages."""

from __future__ import annotations

import pytest

from cli.chat import changed_file, fit_toolbar, is_command, message_text


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("/save", True),
        ("/checkpoint 2", True),
        ("  /help  ", True),
        ("/nosuch", True),  # an unknown command is told so, not sent
        ("/etc/hosts is where the config lives", False),
        ("/usr/bin/env python3 fails", False),
        ("/tmp is where scratch files go", False),  # a one-part path that exists
        ("/exit", True),  # a command, whatever is on disk
        ("/QUIT", True),
        ("//save this", False),
        ("/", False),
        ("hello /save", False),
        ("", False),
    ],
)
def test_a_line_is_a_command_when_it_starts_with_a_slash_word(line: str, command: bool) -> None:
    assert is_command(line) is command


@pytest.mark.parametrize(
    ("line", "sent"),
    [
        ("//save this", "/save this"),
        ("  //save this", "/save this"),
        ("/etc/hosts is here", "/etc/hosts is here"),
        ("  indented text", "  indented text"),
    ],
)
def test_a_leading_double_slash_sends_one_slash(line: str, sent: str) -> None:
    assert message_text(line) == sent


def test_a_listing_is_cut_to_the_terminal_width_line_by_line() -> None:
    """`/checkpoint`'s lines of over 100 characters wrapped mid-word on 80 columns."""
    from cli.console import fit_to_width

    long = (
        "  1  2026-12-02 11:53:21 UTC  1 turn  0 files changed  (auto)  "
        "'clearhello there, please'"
    )
    fitted = fit_to_width(f"{long}\n  2  short", 80).split("\n")
    assert fitted == [long.replace("2026-12-02 11:53:21 UTC", "12-02 11:53"), "  2  short"]
    assert all(len(line) <= 79 for line in fitted)


def test_a_listing_at_60_columns_keeps_the_reason_and_the_first_words() -> None:
    """A helper's report (H87): at 60 columns `/checkpoint` cut each line in its reason
    (`(a…`, `(sa…`): the words of the last message were never seen. The time is said
    shorter first (as the sessions table does); the line still begins with its number."""
    from cli.console import fit_to_width

    listing = (
        "   9  2026-12-05 02:23:33 UTC  0 turns  0 files changed  (auto)\n"
        "  10  2026-12-05 02:23:37 UTC  2 turns  1 file changed  (save)  "
        "'please think about the escalation policy'"
    )
    first, second = fit_to_width(listing, 60).split("\n")
    assert first == "   9  12-05 02:23  0 turns  (auto)"  # files changed left out (H167)
    assert second.startswith("  10  12-05 02:23  2 turns  (save)  'please think about")
    assert second.endswith("…") and len(second) == 59


LISTING = (
    "   9  2026-12-05 02:23:33 UTC  0 turns  0 files changed  (auto)\n"
    "  10  2026-12-05 02:23:37 UTC  2 turns  1 file changed  (save)  "
    "'please think about the escalation policy'\n"
    "  11  2026-12-05 02:24:37 UTC  3 turns  2 files changed  (restore)  'and the refunds'"
)


def test_a_listing_at_40_columns_keeps_what_tells_checkpoints_apart() -> None:
    """H161: at 40 columns every row was cut in its files changed (``0 files ch…``): the
    reason and the first words, which tell checkpoints apart, were never seen. The files
    changed, then the turns, are left out of every row first."""
    from cli.console import fit_to_width

    assert fit_to_width(LISTING, 40).split("\n") == [
        "   9  12-05 02:23  (auto)",
        "  10  12-05 02:23  (save)  'please thi…",
        "  11  12-05 02:24  (restore)  'and the…",
    ]


def test_a_listing_at_80_columns_leaves_no_field_out() -> None:
    from cli.console import fit_to_width

    assert fit_to_width(LISTING, 80).split("\n") == [
        "   9  12-05 02:23  0 turns  0 files changed  (auto)",
        "  10  12-05 02:23  2 turns  1 file changed  (save)  'please think about the es…",
        "  11  12-05 02:24  3 turns  2 files changed  (restore)  'and the refunds'",
    ]


def test_a_listing_row_is_cut_by_the_columns_it_takes() -> None:
    """Wide characters in the last message's words take two columns each."""
    from cli.console import fit_to_width
    from cli.summaries import columns

    row = "  1  2026-12-05 02:23:33 UTC  1 turn  0 files changed  (save)  '" + "設計" * 20 + "'"
    assert columns(fit_to_width(row, 60)) <= 59


def test_a_message_among_the_listing_is_left_whole_to_wrap() -> None:
    """A helper's report: on 20 columns `/checkpoint` said "No checkpoints in t…"."""
    from cli.console import fit_to_width

    message = "No checkpoints in this session yet (/save writes one)."
    assert fit_to_width(message, 20) == message


def test_a_line_wider_than_the_terminal_wraps_between_words_under_its_second_column() -> None:
    """A helper's report (H45): /help at 40 columns was cut mid-word by the terminal."""
    from cli.console import word_wrap

    line = "  /resume          show the resume context given to the assistant"
    assert word_wrap(line, 40).split("\n") == [
        "  /resume          show the resume",
        "                   context given to the",
        "                   assistant",
    ]
    assert word_wrap("short enough", 40) == "short enough"
    words = "A message may start with a path (/etc/hosts ...); start it with // to send"
    assert all(len(row) <= 39 for row in word_wrap(words, 40).split("\n"))
    assert word_wrap(words, 40).split() == words.split()  # no word cut, none lost


@pytest.mark.parametrize("width", [40, 60, 200, None])
def test_help_fits_the_terminal_and_reads_as_whole_paragraphs(width: int | None) -> None:
    """A helper's find (H47): /help's prose kept its 80-column line breaks, each line
    wrapped alone at 40 columns (``send a`` on a line of its own)."""
    from cli.chat import HELP, HELP_WIDTH, help_text

    text = help_text(width)
    assert text.split() == HELP.split()  # no word cut, none lost
    room = min(width or HELP_WIDTH, HELP_WIDTH) - 1
    assert max(map(len, text.splitlines())) <= room
    assert "\nsend a\n" not in text and "\nit\n" not in text


@pytest.mark.parametrize(
    ("notice", "path"),
    [
        ("note: agent_spec.md changed outside agent-assist", "agent_spec.md"),
        ("note: docs/a changed b.md deleted outside agent-assist", "docs/a changed b.md"),
        ("note: compacted turns 1-10 into a summary", None),
    ],
)
def test_the_toolbar_counts_the_files_changed_or_deleted_outside(
    notice: str, path: str | None
) -> None:
    assert changed_file(notice) == path


PARTS = [
    "session 6b0052e8abab",
    "model openai-chat:slow",
    "phase design",
    "1,234 tokens in context",
    "2 files changed outside",
]


@pytest.mark.parametrize(
    ("width", "line"),
    [
        (None, " " + " · ".join(PARTS) + "  (/help)"),
        (120, " " + " · ".join(PARTS)),
        (100, " session 6b0052e8abab · model openai-chat:slow · 1,234 tokens in context · 2 files"
         " changed outside"),
        (80, " session 6b0052e8abab · model openai-chat:slow · 2 files changed outside"),
        (50, " session 6b0052e8abab · 2 files changed outside"),
        (40, " 6b0052e8abab · 2 files changed outside"),
        (34, " 6b0052e8abab · 2 changed outside"),
        (30, " 6b0052e8abab · 2 changed out…"),
    ],
)
def test_the_toolbar_leaves_out_what_does_not_fit_the_least_needed_first(
    width: int | None, line: str
) -> None:
    """A helper's find (H67): at 40 columns the toolbar was cut mid-word
    ("model openai-cha") and the count of files changed outside never showed; then
    (H74) it read "1 file changed …" there: it is said shorter before it is cut."""
    assert fit_toolbar(PARTS, width) == line
    assert width is None or len(line) <= width


@pytest.mark.parametrize(
    ("line", "meant"),
    [("/ save", "save"), ("/ Save it now", "save"), (" /  checkpoint 2", "checkpoint")],
)
def test_a_slash_a_space_and_a_command_name_is_that_command_mistyped(line: str, meant: str) -> None:
    from cli.chat import spaced_command

    assert spaced_command(line) == meant


@pytest.mark.parametrize("line", ["/ is the root directory", "/", "// save", "/save", "a / save"])
def test_other_lines_with_a_lone_slash_are_no_mistyped_command(line: str) -> None:
    from cli.chat import spaced_command

    assert spaced_command(line) is None


def test_help_says_save_writes_no_checkpoint_when_nothing_changed() -> None:
    """H116's rule: a /save equal to the latest checkpoint writes none; /help said every
    /save writes one."""
    from cli.chat import HELP

    (line,) = [row for row in HELP.splitlines() if row.startswith("  /save ")]
    assert "none if nothing changed since the latest" in line


def test_a_listing_that_must_be_fitted_says_every_rows_time_the_same_way() -> None:
    """H141: on 80 columns `/checkpoint` and `sessions show` said the first row's time
    whole (`2026-12-06 11:20:17 UTC`, it fitted) and the others' short (`12-06 11:20`):
    the columns after the time did not line up. One row too wide shortens them all."""
    from cli.console import fit_to_width

    listing = (
        "  1  2026-12-06 11:20:17 UTC  0 turns  0 files changed  (auto)\n"
        "  2  2026-12-06 11:20:18 UTC  1 turn  1 file changed  (auto)  'write notes.md: n1'\n"
        "No checkpoints before these."
    )
    assert fit_to_width(listing, 80).split("\n") == [
        "  1  12-06 11:20  0 turns  0 files changed  (auto)",
        "  2  12-06 11:20  1 turn  1 file changed  (auto)  'write notes.md: n1'",
        "No checkpoints before these.",
    ]
    assert fit_to_width(listing, 120) == listing  # all fit: all whole


def test_a_listing_row_of_another_shape_is_only_said_shorter_and_cut() -> None:
    """A row these fields cannot be read from (a supervisor of another version) loses
    nothing but its time's year and seconds, and what does not fit."""
    from cli.console import fit_to_width

    row = "  1  2026-12-05 02:23:33 UTC  2 turns  (new kind)  and the words"
    assert fit_to_width(row, 40) == "  1  12-05 02:23  2 turns  (new kind) …"
