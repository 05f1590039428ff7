"""The secret values of an environment: what its credential-named variables hold.

Kept apart from ``session/redaction.py`` (whose patterns cost milliseconds to
compile) so that the terminal can send its own without loading the scrubber.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

_SECRET_ENV_NAME_RE = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASS|CREDENTIAL|_PWD(?:_|$)|^PWD_)")
"""Names of variables holding a credential: ``OPENAI_API_KEY``, ``MYSQL_PWD`` (not
``PWD`` nor ``OLDPWD``, the working directories)."""
_NAMES_A_PLACE = re.compile(r"(?i)(?:FILE|PATH|DIR|_NAME|_ENV|_ID)$")
"""``DB_PASSWORD_FILE``, ``PGPASSFILE``: where a secret is kept, not the secret."""
MIN_SECRET_LEN = 8
"""Shorter values are not taken for secrets (they would scrub ordinary words)."""


_AUTH_ENV_NAME_RE = re.compile(r"(?i)_AUTH$")
"""``NPM_AUTH``, ``REDISCLI_AUTH``: a credential when the value looks like one
(``_auth_secret``), not a setting (``REQUIRE_AUTH=enabled``, ``DB_AUTH=scram-sha-256``)."""


def _auth_secret(value: str) -> bool:
    """A ``*_AUTH`` variable's value that is a credential: ``user:password``, or upper
    and lower case letters and digits all three (a generated value, a base64 token)."""
    user, colon, password = value.partition(":")
    if colon:
        return bool(user) and bool(password)
    return mixes_case_and_digits(value)


def mixes_case_and_digits(value: str) -> bool:
    """Digits, upper and lower case letters, all three: a generated value, not a word."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def secrets_from_environment(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of environment variables whose names say they hold a credential, and the
    user and password of the endpoint's URL (``OPENAI_BASE_URL``: ``user:pass@``)."""
    env = os.environ if environ is None else environ
    found = {
        v
        for k, v in env.items()
        if (_SECRET_ENV_NAME_RE.search(k) or (_AUTH_ENV_NAME_RE.search(k) and _auth_secret(v)))
        and not _NAMES_A_PLACE.search(k)
        and not os.path.isabs(v)  # GOOGLE_APPLICATION_CREDENTIALS: where the secret is
    }
    found.update(_url_credentials(env.get(ENDPOINT_VARIABLE, "")))
    return longest_first(v for v in found if len(v) >= MIN_SECRET_LEN)


ENDPOINT_VARIABLE = "OPENAI_BASE_URL"
_USERINFO_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://([^/?#@\s]*)@")


def _url_credentials(url: str) -> tuple[str, ...]:
    """The user and the password of ``url``'s authority (``https://user:pass@host``): the
    HTTP client sends them to the endpoint as Basic credentials, and a token alone in the
    user's place is the key (H188: ``http://<token>@host/v1`` was shown and saved in
    clear, as no pattern took a token of one case for one)."""
    match = _USERINFO_RE.match(url.strip())
    if match is None:
        return ()
    user, _, password = match.group(1).partition(":")
    return tuple(value for value in (user, password) if value)


def longest_first(known_secrets: Iterable[str]) -> tuple[str, ...]:
    """The secret values, each once, longest first: a value that holds another must be
    replaced before it, or the rest of the longer one would stay in clear."""
    if isinstance(known_secrets, tuple | frozenset):
        return _longest_first(known_secrets)
    return _longest_first(tuple(known_secrets))


@lru_cache(maxsize=64)
def _longest_first(known_secrets: tuple[str, ...] | frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(set(known_secrets), key=lambda secret: (-len(secret), secret)))
