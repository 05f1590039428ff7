"""Which typed lines are slash commands and which are messages."""

from __future__ import annotations

import pytest

from cli.chat import is_command


@pytest.mark.parametrize(
    ("line", "command"),
    [
        ("/save", True),
        ("/checkpoint 2", True),
        ("  /help  ", True),
        ("/nosuch", True),  # an unknown command is told so, not sent
        ("/etc/hosts is where the config lives", False),
        ("/usr/bin/env python3 fails", False),
        ("//save this", False),
        ("/", False),
        ("hello /save", False),
        ("", False),
    ],
)
def test_a_line_is_a_command_when_it_starts_with_a_slash_word(line: str, command: bool) -> None:
    assert is_command(line) is command
