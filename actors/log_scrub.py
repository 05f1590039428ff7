"""The supervisor's log is scrubbed as a session file is, of every attached chat's
secrets and every value a chat's turns revealed as secret too."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from session.redaction import scrub_text, with_secrets


class ScrubSecrets(logging.Filter):
    """Every log line scrubbed as a session file is: an endpoint's error may echo the
    request's ``Authorization`` header, and the log is a file on disk too."""

    def __init__(self, secrets: tuple[str, ...]) -> None:
        super().__init__()
        self._secrets = secrets

    def also(self, secrets: tuple[str, ...]) -> None:
        """Scrub ``secrets`` too from now on."""
        self._secrets = with_secrets(self._secrets, secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = scrub_text(message, self._secrets)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:  # the formatter keeps this text
            record.exc_text = scrub_text(
                logging.Formatter().formatException(record.exc_info), self._secrets
            )
        return True


def scrub_logs_of(secrets: Iterable[str]) -> None:
    """From now on, scrub every log line of ``secrets`` too (a chat's, sent in its hello,
    and those its turns revealed: an endpoint's error about that chat's turn may echo
    them). Kept in memory only, for the supervisor's life."""
    more = tuple(secrets)
    if not more:
        return
    for handler in logging.getLogger().handlers:
        for each in handler.filters:
            if isinstance(each, ScrubSecrets):
                each.also(more)
