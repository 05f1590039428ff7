"""Scrubbing credential-looking strings out of anything that is about to be persisted or listed.

What the patterns cover (see docs/decisions.md, "Secrets"): known provider token
shapes, PEM private keys, ``Authorization``/``Bearer`` values, assignments
(``password=...``, ``api_key: ...``; a passphrase line's value of several words,
to the line's end), the prose form ``<password|passphrase|
passcode|secret|api key|token|pwd> is|was|: <value>`` when the value looks like a
credential (a digit or symbol in it, or 16+ letters), and the values of the
environment variables whose names say they hold a credential.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import orjson

from session.environment import longest_first, mixes_case_and_digits, secrets_from_environment

__all__ = [
    "REDACTED",
    "continued_secret",
    "encoded_forms",
    "longest_first",
    "replace_known",
    "replace_known_bytes",
    "scrub_json",
    "scrub_keys",
    "scrub_text",
    "secrets_from_environment",
    "shown_input",
    "with_revealed",
    "with_secrets",
]

REDACTED = "[REDACTED]"
_KEEP_KEY = r"\g<1>" + REDACTED
"""The replacement of a prefix pattern's match: its group 1 (the key) kept, the value
redacted."""

_DISCORD_BOT_TOKEN_RE = re.compile(
    r"\b[MNO][A-Za-z0-9_\-]{23,27}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40}\b"
)
"""A Discord bot token: no fixed prefix, so it is looked for only in a text that says
``discord``, ``token`` or ``bot`` (searching every text for its shape cost a third more)."""

# Whole-match patterns: the match itself is the secret.
_TOKEN_PATTERNS = [
    r"sk-(?:proj-|ant-|live-|test-|or-)?[A-Za-z0-9_\-]{16,}",
    # an AWS access key id, and the secret key said with it (``AKIA... / wJalr...``)
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b(?:[\s,:;/|\"'=]{1,5}[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bgithub_pat_[A-Za-z0-9_]{30,}",
    r"\bxox[abprse]-[A-Za-z0-9-]{10,}",
    r"\bxapp-\d-[A-Za-z0-9-]{10,}",  # a Slack app-level token (xoxe-: a refresh token)
    r"\bgsk_[A-Za-z0-9]{30,}",  # Groq
    r"\br8_[A-Za-z0-9]{30,}",  # Replicate
    r"\bxai-[A-Za-z0-9]{30,}",  # xAI
    r"\bdo[por]_v1_[a-f0-9]{64}",  # DigitalOcean
    r"\bya29\.[A-Za-z0-9_\-]{20,}",  # a Google OAuth access token
    r"\bGOCSPX-[A-Za-z0-9_\-]{20,}",  # a Google OAuth client secret
    r"\bAIza[0-9A-Za-z_\-]{35}",
    r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    # a PEM or PGP private key, to its END line, or to the text's end if that was cut off
    r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-[A-Za-z0-9_\-]{50,}",
    r"\bwhsec_[A-Za-z0-9]{20,}",  # Stripe webhook signing secret
    r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"\bhooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{16,}",
    r"\bdiscord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{40,}",
    r"(?<![0-9])[0-9]{5,12}:AA[A-Za-z0-9_\-]{30,40}(?![A-Za-z0-9_\-])",  # a Telegram bot's
]
_WORD_LED_TOKEN_PATTERNS = [
    # a GitLab runner's token: 20+ characters, a digit or a capital among them (not a
    # kebab-case name), and the routable form's ``.01.abc123def`` tail
    r"glrt-(?=[a-z_\-]*[A-Z0-9])[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{7,9}\b)?",
    # a HashiCorp Vault service or batch token (24 to 100+ characters, a digit or a capital
    # among them: ``hvs.reshape_to_image_size`` is code; ``_token`` keeps a camelCase name)
    r"hv[sb]\.(?=[a-z_\-]*[A-Z0-9])[A-Za-z0-9_\-]{24,}",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",  # Shopify
    r"lin_api_[A-Za-z0-9]{40}\b",  # Linear
    r"ATATT3[A-Za-z0-9_\-]{100,}(?:=[A-Fa-f0-9]{8})?",  # an Atlassian API token
    r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",  # an age identity
]
"""Tokens that begin a word, one alternative of the combined pass behind a single ``\b``:
as alternatives of their own, each cost the pass about 4% more on prose (every position
tries every alternative), together under one ``\b`` about 4% in all."""
_TOKEN_PATTERNS.append(r"\b(?:" + "|".join(_WORD_LED_TOKEN_PATTERNS) + ")")
_TOKENS_RE = re.compile("|".join(f"(?:{p})" for p in _TOKEN_PATTERNS))
_CUT_GITHUB_TOKEN_RE = re.compile(r"\bgh[pousr]_([A-Za-z0-9]{8,29})(?![A-Za-z0-9_])")
"""A GitHub token cut short (8-29 characters after its prefix; a whole one has 36): it
goes when what is left of it looks generated (``_cut_github_token``)."""


_CUT_TOKEN_AT_END_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:sk-(?:proj-|ant-(?:api\d\d-)?|live-|test-|or-)?|(?:AKIA|ASIA)|"
    r"gh[pousr]_|github_pat_|xox[abprse]-|xapp-\d-|gsk_|r8_|xai-|do[por]_v1_|ya29\.|GOCSPX-|"
    r"AIza|eyJ|[rs]k_(?:live|test)_|hf_|glpat-|npm_|pypi-|whsec_|SG\.|glrt-|hv[sb]\.|"
    r"shp(?:at|ca|pa|ss)_|lin_api_|ATATT3|AGE-SECRET-KEY-1)"
    r"([A-Za-z0-9_\-.]{4,})\Z"
)
"""A token's prefix and the start of its value at a text's very end: a reply cut there
(Ctrl+C, a dropped connection) keeps the part of a key that came, too short for
``_TOKEN_PATTERNS`` (``sk-proj-Ab3dE5gH``, ``github_pat_11AB``)."""


def without_cut_token(text: str) -> str:
    """``text``, a reply cut short, with a token cut at its end replaced: what came of it
    goes when it looks generated (a digit, or both cases; not words: ``hf_hub``)."""
    match = _cut_token_at_end(text)
    if match is None:
        return text
    return text[: match.start()] + REDACTED + text[match.end() :]


def cut_token_head(text: str) -> str | None:
    """The head of a token cut short that ``text`` (a message) ends with, before its
    closing punctuation (``sk-proj-Ab3d.``), the one ``without_cut_token`` replaces; None
    if it ends with none."""
    match = _cut_token_at_end(text.rstrip(_MESSAGE_END))
    return None if match is None else match.group()


_MESSAGE_END = " \t\r\n.,;:!?)'\"`"

SECRET_HEAD_CHARS = 4
"""The fewest first characters of a known secret a cut reply's end is taken for."""


def without_secret_head(text: str, known_secrets: Iterable[str]) -> str:
    """``text``, a reply cut short, with the head of a known secret it was cut in (its first
    ``SECRET_HEAD_CHARS`` characters or more, from a word's start) replaced: the words of
    a passphrase that came before the cut are as secret as the rest."""
    body = text.rstrip()
    for secret in longest_first(known_secrets):
        for size in range(min(len(secret) - 1, len(body)), SECRET_HEAD_CHARS - 1, -1):
            start = len(body) - size
            if body[-1] == secret[size - 1] and body.endswith(secret[:size]) and (
                start == 0 or not body[start - 1].isalnum()
            ):
                return body[:start] + REDACTED + text[len(body) :]
    return text


def _cut_token_at_end(text: str) -> re.Match[str] | None:
    match = _CUT_TOKEN_AT_END_RE.search(text.rstrip()) if text else None
    if match is None:
        return None
    rest = match.group(1)
    digits = any(c.isdigit() for c in rest)
    mixed = any(c.isupper() for c in rest) and any(c.islower() for c in rest)
    if not (digits or mixed) or _reads_as_words(rest):
        return None
    return match


def _token(match: re.Match[str]) -> str:
    """``[REDACTED]`` for a token; a Vault token's shape without a digit that reads as words
    (``hvs.someVeryLongCamelCaseAttributeName``, an attribute of an ``hvs`` object) stays."""
    token = match.group()
    if token.startswith(("hvs.", "hvb.")) and _is_camel_case_name(token[4:]):
        return token
    return REDACTED


def _is_camel_case_name(value: str) -> bool:
    return not any(c.isdigit() for c in value) and _reads_as_words(value)


def _cut_github_token(match: re.Match[str]) -> str:
    """``ghp_AbC123xyZ`` goes; ``ghp_prefix``, ``gho_token2`` and other names made of
    words (``_reads_as_words``) stay, and so does a value of letters alone in one case."""
    rest = match.group(1)
    letters = any(c.isalpha() for c in rest)
    mixed = any(c.isupper() for c in rest) and any(c.islower() for c in rest)
    digits = any(c.isdigit() for c in rest)
    if not (mixed or (letters and digits)) or _reads_as_words(rest):
        return match.group(0)
    return REDACTED

# Prefix patterns: group 1 is kept, the value after it is the secret.
_AUTH_HEADER_RE = re.compile(
    r"(?i)(\bauthorization\s*[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)?\s*)[^\s\"',;]{4,}"
)
_BEARER_RE = re.compile(
    r"(?i)(\bbearer\s+)(?=[A-Za-z0-9._~+/\-]*[0-9._~+/\-])[A-Za-z0-9._~+/\-]{8,}=*"
)
"""A bearer token holds a digit or a symbol ("Bearer authentication" is prose)."""
_BASIC_RE = re.compile(r"(?i)(\bbasic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")
"""HTTP Basic credentials (``Basic dXNlcjpwYXNz``) outside an ``Authorization`` header, as
an endpoint's error echoes them: the value goes when it decodes to ``user:password``
(``Basic authentication`` is prose)."""


def _basic_credentials(match: re.Match[str]) -> str:
    value = match.group(2)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except ValueError:  # binascii.Error, UnicodeDecodeError, a non-ASCII letter (U+212A)
        return match.group(0)
    return match.group(1) + REDACTED if ":" in decoded else match.group(0)


_ENV_ASSIGNMENT_RE = re.compile(
    r"(\b[A-Z][A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASS|PASSWORD|PASSWD|PWD|CREDENTIALS?|(?P<auth>_AUTH))"
    r"\s*[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})"
)
"""An environment-style assignment: ``GITHUB_TOKEN=...``, ``DB_PASS: ...``, ``STRIPE_KEY=``,
``NPM_AUTH=...`` (a ``*_AUTH`` name's value only when it looks like a credential:
``_auth_value``)."""
_URL_PASSWORD_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]*:)([^\s/]+)(@)")
"""The password of a URL: ``postgres://admin:S3cr3t@db/app``, up to the authority's last
``@`` (a password may hold one: ``postgresql://user:p@ss:w0rd@db``)."""
_URL_USER_RE = re.compile(r"(://)([^\s:/@?#]{8,256}+)(?=@)")
"""The user of a URL with no password: a token there (``https://<key>@o1.ingest.sentry.io/2``,
a Sentry DSN; ``https://<token>@github.com/``) is the credential; an ordinary user name
(``https://git@host``, ``ssh://deploy@host``) stays (``_url_user``). It begins at ``://``,
not at the scheme: a literal found fast (from a letter on, it cost 30 ms per MB of prose).
"""


def _url_user(match: re.Match[str]) -> str:
    """A user that looks generated goes: upper and lower case letters and digits mixed
    and no name made of words, or 20+ hex digits (a Sentry DSN's key is 32), or 12+
    letters and digits in two runs each at least (``_interleaved``: ``abc123def456...``)."""
    user = match.group(2)
    hex_key = _HEX_RE.fullmatch(user) is not None and sum(c.isdigit() for c in user) >= 6
    generated = mixes_case_and_digits(user) and not _reads_as_words(user)
    if hex_key or generated or _interleaved(user):
        return match.group(1) + REDACTED
    return match.group(0)


_COOKIE_RE = re.compile(
    r"(?i)(\b(?:set-)?cookie\s*[\"']?\s*:\s*[\"']?)([A-Za-z0-9_.\-]+=[^\n\r\"']*)"
)
"""A ``Cookie:`` or ``Set-Cookie:`` header's value (``session=...; theme=dark``): a
session cookie is a credential."""
_STRONG_KEY = (
    r"[A-Za-z0-9_-]*(?:api[_-]?key|secret|access[_-]?key|private[_-]?key|signing[_-]?key"
    r"|account[_-]?key|subscription[_-]?key|password|passwd|passphrase)(?:[_-][A-Za-z0-9_-]*)?"
)
"""A key whose every value is a secret: ``password``, ``aws_secret_access_key``."""
_TOKEN_KEY = (
    r"(?:[A-Za-z0-9_-]*(?:token|pwd)|(?:[A-Za-z0-9]+[_-])*(?:pw|pass))"  # noqa: S105
    r"(?:[_-][A-Za-z0-9_-]*)?"
)
"""A key whose value is a secret when it looks like one: ``github_token``, ``token``,
``pwd``, ``pw``, ``db_pass`` (``token_limit: 128000``, ``token: expired``, ``pass:
enabled`` and ``pwd = os.getcwd()`` are not)."""
_QUOTE = r"(?:\\?[\"'])"
"""A quote, or one escaped as in JSON text (a tool call's arguments are kept so)."""
_ASSIGNMENT_RE = re.compile(
    rf"(?i)(\b(?P<key>{_STRONG_KEY}|{_TOKEN_KEY})\s*{_QUOTE}?\s*(?:=>|[:=])\s*{_QUOTE}?)"
    r"([^\s\"',;\\]{3,})"
)
"""An assignment in any case: ``password=...``, ``aws_secret_access_key: ...`` (a config
file's form), ``"client_secret": "..."``, ``github_token: ...``."""
_PASSPHRASE_KEY = r"[A-Za-z0-9_-]*passphrase(?:[_-][A-Za-z0-9_-]*)?"  # noqa: S105
_LINE_KEY = (
    rf"[ \t]*(?:[-*][ \t]+|export[ \t]+)?{_QUOTE}?(?:{_PASSPHRASE_KEY}){_QUOTE}?[ \t]*[:=]"
    r"[ \t]*(?![\s\"'`\\\[])"
)
_LINE_ASSIGNMENT_RE = re.compile(rf"(?im)(^{_LINE_KEY})([^\n]*?[ \t][^\n]*?)(?=[ \t]*$)")
"""A passphrase alone on its line, a config file's way, whose value holds spaces
(``passphrase: correct horse battery staple``): all of it goes, up to the line's end. (Not
a password's: ``password: must be rotated every 90 days`` is a design's text as often.)"""
_JSON_LINE_ASSIGNMENT_RE = re.compile(
    rf"(?i)((?:(?<=\\n)|(?<=\")){_LINE_KEY})"
    r"((?:[^\n\\\"]|\\[^n])*?[ \t](?:[^\n\\\"]|\\[^n])*?)(?=[ \t]*(?:\\n|\"))"
)
"""The same line in JSON text (a tool call's arguments are kept so): it begins a string
or follows an escaped newline, and ends at the next one or at the string's end."""
_NEWLINE = r"(?:\r?\n|\\n)"
"""A line's end, in plain text or in JSON text (an escaped newline)."""
_YAML_BLOCK_HEAD = r"[ \t]*:[ \t]*[|>][1-9]?[+-]?[1-9]?[ \t]*"
_BLOCK_LINE = r"(?:[^\n\r\\]|\\[^n])*"
"""The rest of a line, in plain text or in JSON text."""
_YAML_BLOCK_RE = re.compile(
    rf"(?im)((?:^|(?<=\\n)|(?<=\"))(?P<indent>[ \t]*)(?:-[ \t]+)?{_QUOTE}?"
    rf"(?P<key>{_STRONG_KEY}|{_TOKEN_KEY}){_QUOTE}?{_YAML_BLOCK_HEAD}{_NEWLINE}"
    rf"(?:[ \t]*{_NEWLINE})*(?P<inner>(?P=indent)[ \t]+))(?P<value>(?:[^\s\\]|\\[^n]){_BLOCK_LINE})"
    rf"(?P<more>(?:(?:{_NEWLINE}[ \t]*)*{_NEWLINE}(?P=inner){_BLOCK_LINE})*)"
)
"""A YAML block scalar's value, from the line after its key (``password: |`` then
``  Zq8Xv7...``; ``>-``, ``|2`` too) to the last line indented as much (``more``), in plain
text or in JSON text: every line goes (``_block_value``)."""
_BLOCK_MORE_LINE_RE = re.compile(rf"({_NEWLINE}[ \t]*)([^\s\\]|\\[^n]){_BLOCK_LINE}")
"""A line of a block's ``more`` that holds something: its text goes."""
_YAML_BLOCK_MARKER_RE = re.compile(rf":[ \t]*[|>][1-9]?[+-]?[1-9]?[ \t]*{_NEWLINE}")
"""Every match of ``_YAML_BLOCK_RE`` holds this (a literal ``:`` first: cheap)."""


def _may_hold_yaml_block(text: str) -> bool:
    """Whether a line of ``text`` ends with a block scalar's ``: |`` (``: >``) after a key
    word (``_ASSIGNMENT_WORDS``): the pattern costs about 80 ms per MB of prose, and a
    ``:>`` smiley is no YAML."""
    for marker in _YAML_BLOCK_MARKER_RE.finditer(text):
        line = text[text.rfind("\n", 0, marker.start()) + 1 : marker.start()].lower()
        if any(word in line for word in _ASSIGNMENT_WORDS):
            return True
    return False


def _block_value(match: re.Match[str]) -> str:
    value = match.group("value").rstrip()
    if _kept(match.group("key"), value):
        return match.group(0)
    more = _BLOCK_MORE_LINE_RE.sub(r"\g<1>" + REDACTED, match.group("more"))
    return match.group(1) + REDACTED + match.group("value")[len(value) :] + more


_QUOTED_RE = re.compile(
    rf"(?i)(\b(?P<key>{_STRONG_KEY}|{_TOKEN_KEY}|passcode|pin code|api key|access key)"
    rf"{_QUOTE}?\s*(?::|=>?|\s+is|\s+was|\s+to)\s*)"
    r"(?P<open>\\?[\"'`]|[\u201c\u2018])(?P<value>(?:\\.|.){1,500}?)"
    r"(?P<close>(?P=open)|[\u201d\u2019])"
)
"""A quoted value after a key, in an assignment or in prose (``client_secret is "..."``,
``set the password to "..."``): the whole value goes, spaces, apostrophes and quotes
escaped inside it (``"Qz8\\"Xk2"``) all."""


_XML_ELEMENT_RE = re.compile(
    rf"(?i)(<(?P<key>{_STRONG_KEY}|{_TOKEN_KEY})>)([^<\s]{{3,}})(?=</(?P=key)>)"
)
"""An XML element's value (``<password>...</password>``, ``<apiKey>``): a Maven
``settings.xml``, a .NET config."""


_CONNECTION_PASSWORD_RE = re.compile(
    r"(?i)(;[ \t]*(?:pwd|password|passwd)=)(\{[^}\n]*\}|[^;\s\"'{}\\]+)"
)
"""The password of a connection string (``Server=db;Uid=sa;Pwd=...;``: after a ``;``, with
no space around ``=``), whatever it looks like (``_connection_password``)."""
_NETRC_SPACE = r"(?:\s|\\[nt])+"
_NETRC_RE = re.compile(
    rf"((?:\bmachine{_NETRC_SPACE}[^\s\\\"']+|\bdefault)"
    rf"(?:{_NETRC_SPACE}(?:login|account){_NETRC_SPACE}[^\s\\\"']+)+"
    rf"{_NETRC_SPACE}password{_NETRC_SPACE})([^\s\\\"']+)"
)
"""A ``.netrc`` entry's password (``machine h login u password p``, on one line or over
several, also in JSON text), whatever it looks like: a login or an account comes before
it (``the machine whose password ...`` is prose)."""
_NETRC_PASSWORD_FIRST_RE = re.compile(
    rf"((?:\bmachine{_NETRC_SPACE}[^\s\\\"']+|\bdefault){_NETRC_SPACE}password{_NETRC_SPACE})"
    rf"([^\s\\\"']+)(?={_NETRC_SPACE}(?:login|account){_NETRC_SPACE}[^\s\\\"']+)"
)
"""The same entry with its password right after the machine, a login or an account after
it (``machine h password p login u``): a netrc's tokens come in any order."""


def _connection_password(match: re.Match[str]) -> str:
    """A reference (``$DB_PASSWORD``, ``{{ pwd }}``) and a path stay; any other value goes."""
    value = match.group(2)
    if _is_reference(value) or value.startswith(("/", "~", ".")):
        return match.group(0)
    return match.group(1) + REDACTED


def _assigned(match: re.Match[str]) -> str:
    if match.group(3).startswith(REDACTED) or _kept(match.group("key"), match.group(3)):
        return match.group(0)
    return match.group(1) + REDACTED


def _quoted(match: re.Match[str]) -> str:
    if len(match.group("value")) < 3 or _kept(match.group("key"), match.group("value")):
        return match.group(0)
    return match.group(1) + match.group("open") + REDACTED + match.group("close")


def _kept(key: str, value: str) -> bool:
    """Whether an assignment's value stays: it names where the secret is (a reference, or
    a key such as ``secret_name``), it is a token key's value that does not look like a
    token, or it is too short and plain to be one (``none``, ``todo``)."""
    value = _without_closing_brackets(value)
    if _REFERENCE_KEY_RE.search(key) or _names_no_secret(key, value):
        return True
    if _is_token_key(key) or _HASH_KEY_RE.search(key):
        return not _looks_secret(value) or value.startswith(("/", "~/"))
    return len(value) < 6 and not _looks_short_secret(value)


def _names_no_secret(key: str, value: str) -> bool:
    """Whether ``value`` (without its closing brackets) is a reference, code, or a variable
    of the key's own name (``password=password``): where the secret is, not the secret."""
    return _is_reference(value) or value.lower() == key.lower()


def _without_closing_brackets(value: str) -> str:
    """``value`` without the brackets that close code around it (``password: str)``, a
    parameter's; ``password=None)``, an argument's), which are not part of it."""
    if "(" in value or "[" in value or "{" in value:
        return value
    return value.rstrip(")]}") or value


def _is_token_key(key: str) -> bool:
    """A key named for a token (or ``pwd``, ``pw``, ``pass``) alone, not also for a
    password, secret or key."""
    return _STRONG_WORD_RE.search(key) is None


_STRONG_WORD_RE = re.compile(r"(?i)passw|passphrase|passcode|secret|key|pin code")
_HASH_KEY_RE = re.compile(r"(?i)[_-]hash(?:es)?$")
"""``password_hash``: a hash is kept out when it looks like one (``$2b$12$...``); its
algorithm (``bcrypt``) stays."""
_REFERENCE_KEY_RE = re.compile(
    r"(?i)[_-](?:names?|env|var|variable|path|file|ref|arn|id|url|header|field|type|"
    r"length|len|size|limit|count|prefix|suffix|rotation|policy|algorithm|algo|scheme|"
    r"hint)$"
)
"""A key that names where a secret is, or what it is like, not the secret:
``secret_name``, ``api_key_env``, ``token_url``, ``password_length``."""
_REFERENCE_RE = re.compile(
    r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"  # $VAR, ${VAR}
    r"|\{\{[^{}]*\}\}|%\([A-Za-z_]+\)s"  # {{ template }}, %(name)s
    r"|[A-Z]+(?:_[A-Z]+)+"  # an environment variable's name: OPENAI_API_KEY
    r"|[A-Za-z_]+(?:\.[A-Za-z_]+)+(?:[\[(].*)?"  # settings.openai_api_key, os.environ[
)
"""A value that says where the secret is, not the secret (no digit in a name or path)."""
_CODE_RE = re.compile(
    # a call: issue_token(username), load_key(, get_secret(name= (a value is cut at the
    # string that follows)
    r"[A-Za-z_][A-Za-z0-9_]*\((?:[^()]*\)|[A-Za-z_][A-Za-z0-9_]*=)?"
    r"|(?:typing\.)?(?:str|bytes|SecretStr|SecretBytes|Optional|Annotated|Union|Literal)"
    r"(?:\[.*)?"  # a type: openai_api_key: SecretStr, api_key: Annotated[str, ...]
)
"""Code that computes or types a secret, not the secret (the agents users design are code)."""


def _is_reference(value: str) -> bool:
    """A reference (``${VAR}``, ``settings.key``, ``${{ secrets.X }}``, whose value the
    assignment patterns cut at its first space), code (``get_secret()``, ``SecretStr``)
    or a placeholder (``TBD``, ``N/A``, ``<your password>``, ``***``)."""
    return (
        _REFERENCE_RE.fullmatch(value) is not None
        or _CODE_RE.fullmatch(value) is not None
        or value.startswith(("${{", "{{", "<"))
        or value.rstrip(".").lower() in _PLACEHOLDERS
        or set(value) <= set("*.x-_")
    )


_PLACEHOLDERS = frozenset(
    ("tbd", "tba", "n/a", "na", "none", "null", "nil", "todo", "unset", "empty", "redacted")
)


def _looks_short_secret(value: str) -> bool:
    """A value of 3-5 characters taken for a credential: a digit, a symbol, or a capital
    after the first letter in it (``Adm1n``, ``p@ss``; not ``none``, ``todo``, ``True``)."""
    return any(c.isdigit() or not c.isalnum() or c.isupper() for c in value[1:]) or (
        value[:1].isdigit()
    )


def _looks_secret(value: str) -> bool:
    """A token-like value: letters and digits (``tk/abc123``), or 20 characters and more
    without a space; not a number (``128000``, ``100/200``) nor a name (``ticket_id``,
    ``expired``)."""
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    return (letters and digits) or (len(value) >= 20 and " " not in value)


# Prose: "admin password is correcthorse99", "the api key was AbC123xyz!".
_PROSE_KEY = (
    r"(?:[A-Za-z0-9]+[_-])*(?:password|passwd|passphrase|passcode|pin code|secret|pwd|"
    r"api[ _-]?key|(?:secret[ _-]?)?access[ _-]?key|secret[ _-]?key|private[ _-]?key|token|"
    r"mot de passe|mdp|passwort|kennwort|wachtwoord|contrase[ñn]a|senha|credentials?|creds|"
    r"pw|pass)(?:[_-][A-Za-z0-9]+)*"
)
"""``pwd is X`` too (``pwd is /home/me``, a directory, is not taken), ``pw``, ``pass``,
``credentials``, and the word for a password in French, German, Dutch, Spanish and
Portuguese."""
_PROSE_WHOSE = (
    r"(?:\s+(?:for|of|on|in|at)\s+(?:the\s+|our\s+|my\s+|this\s+)?"
    r"[\w.-]{1,40}(?:\s+[\w.-]{1,40}){0,2})?"
    r"(?:\s+(?:i|we)\s+(?:use|chose|picked|set|have|gave))?"
)
"""Whose it is, between the key and its value: ``the password for the new staging server
is X``, ``the password I use is X``."""
_PROSE_LINK = (
    r"(?:\s+(?:is|was|are|were|ist|est|es|é|è|lautet|stays|remains)"
    r"(?:\s+(?:now|still|currently|also|just))?(?:\s*:)?\s+"
    r"|\s+(?:will|should|would|shall)\s+be\s+"
    r"|(?:\s+(?:has|have|had)\s+been)?\s+(?:changed|set|reset|updated)\s+to\s+"
    r"|'s\s+|\s*(?:->|=>)\s*|\s*[=:]\s+)"
)
"""``is`` (``ist``, ``est``, ``es``, ``é``, ``è``, ``lautet``; ``is now``, ``is:``), ``will
be``, ``has been changed to``, ``'s``, ``->``, or ``:``."""
_PROSE_RE = re.compile(
    rf"(?i)(\b{_PROSE_KEY}{_PROSE_WHOSE}{_PROSE_LINK}[\"'`]?)([^\s\"'`,;\\]{{6,}})"
)
_PASSPHRASE_WORD = r"[A-Za-z0-9]+(?:['\u2019-][A-Za-z0-9]+)*"  # noqa: S105
_PASSPHRASE_WORD_RE = re.compile(_PASSPHRASE_WORD)
_SEVERAL_WORDS_RE = re.compile(
    r"(?i)(\b(?:[A-Za-z0-9]+[_-])*"
    rf"(?:(?:password|passwd|passphrase|pass phrase)\b{_PROSE_WHOSE}{_PROSE_LINK}"
    r"|(?:password|passwd|passphrase|pw|pwd)[ \t]*[=:][ \t]*))"
    rf"({_PASSPHRASE_WORD}(?:[ \t]+{_PASSPHRASE_WORD}){{2,}})"
)
"""A password said as words (``my password is correct horse battery staple``,
``password: orange9 banana cherry``): the words go, up to the first that prose is made of
(``_passphrase_words``). Set with no space after ``=`` or ``:`` too, an env file's way
(``DB_PASSWORD=tired ocean lamp``), and after ``pw`` or ``pwd``."""
_PROSE_FUNCTION_WORDS = frozenset(
    """a an the this that these those it its is are was were be been being not no never
    always also still now then just only very too so and or but if when while because for
    of in on at to from by with without into onto over under after before via per as than
    must should would could can cannot will shall may might has have had do does did my
    your our their his her i we you they he she me us them which who what where how why
    there here see set same different required optional mandatory needed needs need
    characters character chars char digits digit letters letter symbols symbol numbers
    long short length min max minimum maximum least most case sensitive insensitive
    empty blank missing invalid valid expired wrong strong weak secure insecure unknown
    default null none true false string str field type any all some each every more
    less enough please like such etc e.g user users admin input value values text plain
    plaintext hash hashes salt env environment variable vault secret secrets key keys
    token tokens file files config database db one two three random output format
    encoded encoding base64 hex ascii uuid numeric alphanumeric""".split()  # noqa: SIM905
)
"""Words of prose about a password, not of a passphrase: a run of words after ``is`` ends
at the first of them (``is too short``, ``must be rotated``, ``min length twelve``)."""
MIN_PASSPHRASE_WORDS = 3
"""A password of two words cannot be told from prose (``is case sensitive``)."""


def _passphrase_words(value: str) -> int:
    """How many of ``value``'s first words make a passphrase: the words up to the first
    that prose is made of (``_PROSE_FUNCTION_WORDS``); 0 if one of those reads as a verb
    or an adverb (``hashed``, ``being``, ``randomly``: a sentence about the password)."""
    count = 0
    for word in value.split():
        lower = word.lower().replace("\u2019", "'")
        if lower in _PROSE_FUNCTION_WORDS:
            break
        if len(lower) > 4 and lower.endswith(("ed", "ing", "ly")):
            return 0  # a verb or an adverb: prose (``is user supplied``)
        count += 1
    return count


MAX_SET_PASSPHRASE_WORDS = 6
"""The longest run of words taken whole after ``password:`` (``_set_passphrase``)."""
_RUN_END = frozenset(".,;!?)\"'`\n\r")


def _set_passphrase(match: re.Match[str]) -> bool:
    """A passphrase set with ``:`` or ``=`` (``password: tired ocean lamp``): 3 to
    ``MAX_SET_PASSPHRASE_WORDS`` lower-case words, none of them prose's
    (``_PROSE_FUNCTION_WORDS``), that end the line or come before punctuation. Taken even
    with an ``-ed``/``-ing``/``-ly`` word in them, which a sentence after ``is`` has
    (``password: reset it using the link`` stays: ``it``, ``the``)."""
    if not match.group(1).rstrip().endswith((":", "=")):
        return False
    rest = match.string[match.end() : match.end() + 1]
    if rest and rest not in _RUN_END:
        return False
    return _lower_case_run(match.group(2).split())


def _lower_case_run(words: list[str]) -> bool:
    """3 to ``MAX_SET_PASSPHRASE_WORDS`` lower-case words, none of them prose's."""
    return (
        MIN_PASSPHRASE_WORDS <= len(words) <= MAX_SET_PASSPHRASE_WORDS
        and all(word.islower() or word.isdigit() for word in words)
        and not any(
            word.replace("\u2019", "'") in _PROSE_FUNCTION_WORDS for word in words
        )
    )


def _several_words(match: re.Match[str]) -> str:
    value = match.group(2)
    if _set_passphrase(match):
        return match.group(1) + REDACTED
    count = _passphrase_words(value)
    if count < MIN_PASSPHRASE_WORDS:
        return match.group(0)
    spans = [word.end() for word in _NON_SPACE_RE.finditer(value)]
    return match.group(1) + REDACTED + value[spans[count - 1] :]


_NON_SPACE_RE = re.compile(r"\S+")


_PIN_RE = re.compile(r"(?i)(\b(?:pin(?: code)?|passcode)(?:\s+(?:is|was)|\s*:)?\s+)(\d{4,8})\b")
"""``my pin is 482913``, ``passcode 482913``: a number where a pin is named."""
_SET_RE = re.compile(
    rf"(?i)(\bset\s+(?:the\s+|my\s+|our\s+)?{_PROSE_KEY}\s+to\s+[\"'`]?)([^\s\"'`,;]{{6,}})"
)
"""``set aws_secret_access_key to ...``, ``set the password to ...``."""
_BARE_PROSE_RE = re.compile(
    r"(?i)(\b(?:[a-z0-9]+_)*(?:secret|password|passwd|passphrase|token"
    r"|(?:secret|access|api|account)[ _-]?key)\s+"
    r"[\"'`]?)([a-z0-9/+_\-=]{8,}+)(?!\w|\.\w)"
)
"""A key word followed by its value with nothing between: ``aws secret key wJalr...``,
``use secret Zq9Xv7Lm2Pk4 for the vault`` (a value that looks generated: ``_bare_value``)."""
_BARE_KEY_RE = re.compile(
    r"(?i)(\bkey(?:\s+(?:is|was))?\s*[:=]?\s*[\"'`]?)([A-Za-z0-9/+_\-]{16,}+)(?![\w/+=-]|\.\w)"
)
"""A key's value with no other word to say whose (``key is Vv8Bb7Nn6Mm5Kk4Jj3``, ``key:
...``): only one that mixes upper and lower case letters and digits (``primary key:
customer_id`` and a hash stay)."""


def _mixed_value(match: re.Match[str]) -> str:
    """A value that mixes cases and digits goes; so does a hex key (``key
    9f86d0...``) unless a word before ``key`` says it names no credential (``primary key``,
    ``cache key``, ``public key``: ``_NOT_SECRET_KEYS``)."""
    value = match.group(2)
    if mixes_case_and_digits(value):
        return match.group(1) + REDACTED
    if _is_hex_key(value) and not _qualified_key(match.string, match.start()):
        return match.group(1) + REDACTED
    return match.group(0)


def _is_hex_key(value: str) -> bool:
    """20+ hex digits, 6+ of them digits and a letter among them (not a number, not a
    UUID: an id as often as a key)."""
    return (
        _HEX_KEY_RE.fullmatch(value) is not None
        and sum(c.isdigit() for c in value) >= 6
        and not value.isdigit()
    )


_HEX_KEY_RE = re.compile(r"[0-9a-fA-F]{20,}")
_WORD_BEFORE_RE = re.compile(r"([A-Za-z0-9]+)[\s_-]*\Z")
_NOT_SECRET_KEYS = frozenset(
    (
        "primary", "foreign", "sort", "partition", "cache", "idempotency", "composite",
        "unique", "row", "object", "lookup", "dedup", "dedupe", "hash", "map", "dict",
        "routing", "index", "public", "gpg", "pgp", "ssh", "host", "shard", "cluster",
        "clustering", "natural", "surrogate", "candidate", "join", "group", "storage",
        "s3", "redis", "lock", "etag",
    )
)
"""Words before ``key`` that make it a key no credential is (a database's, a cache's, a
public key's fingerprint)."""


def _qualified_key(text: str, start: int) -> bool:
    """Whether the word right before ``text[start:]`` (``key``) is one of
    ``_NOT_SECRET_KEYS``."""
    before = _WORD_BEFORE_RE.search(text, max(0, start - 40), start)
    return before is not None and before.group(1).lower() in _NOT_SECRET_KEYS


_LOGIN_RE = re.compile(
    r"(?i)(\b(?:(?:log\s?in|sign\s?in|log\s?on)\s+(?:with|as|using)\s+[^\s/:]{1,64}\s*[/:]\s*"
    r"|(?:log\s?in|sign\s?in|log\s?on)\s+as\s+[^\s/:]{1,64}\s+(?:with|using)\s+"
    r"|(?:credentials?|creds|login)\s*(?:are|is|:)\s*[^\s/:]{1,64}\s*[/:]\s*))"
    r"([^\s\"'`,;]{6,})"
)
"""``login with admin / Hx8Kq2Vn5Wz7``, ``sign in as bob:S3cret99``, ``log in as root with
X``, ``credentials: admin / X`` (when the password looks like one: ``_cli_password``)."""
_CLI_PASSWORD_RE = re.compile(r"((?:^|\s)--(?:password|passwd|pass)(?:=|\s+))([^\s\"']+)")
"""``wget --password X``, ``--password=X``: a command's password flag (its value, whatever
it looks like)."""
_SHORT_PASSWORD_FLAG_RE = re.compile(
    r"(\b(?:mysql(?:dump|admin|import|sh)?|mariadb(?:-dump|-admin)?)\b[^\n|;&]*?\s-p)"
    r"([^\s\"'-][^\s\"']*)"
    r"|(\b(?:sshpass|(?:docker|podman|nerdctl)\s+login)\b[^\n|;&]*?\s-p[ \t]+[\"']?)"
    r"([^\s\"']+)"
)
"""A short ``-p`` password flag: MySQL's, attached (``mysql -pS3cret``; ``mysql -p db``
asks for it), and ``sshpass -p X``, ``docker login -p X`` (whatever the value looks
like)."""
_REDIS_CLI_PASSWORD_RE = re.compile(r"(\bredis-cli\b[^\n|;&]*?\s-a[ \t]+[\"']?)([^\s\"']+)")
"""``redis-cli -a X`` (whatever the value looks like; a pattern of its own, run only where
``redis-cli`` is: as a third alternative of the ``-p`` flag's, it doubled that pass's cost)."""
_SAS_SIGNATURE_RE = re.compile(r"([?&]sig=)([A-Za-z0-9%+/=]{16,})")
"""An Azure shared access signature in a URL: ``...?sv=...&sig=AbC%2F...``."""
_PGPASS_FIELD = r"(?:\\[:\\]|[^\s:\\]){1,256}+"
_PGPASS_RE = re.compile(
    r"((?<![\w.\-*:/@\\])(?P<host>\*|[\w.\-]{1,253}+):(?:\d{1,5}|\*):"
    rf"{_PGPASS_FIELD}:{_PGPASS_FIELD}:)"
    r"((?:\\[:\\]|[^\s\\\"'`])+)"
)
"""A ``.pgpass`` line, ``host:port:database:user:password`` (a field may be ``*``, a
``:`` or ``\\`` in one is escaped): the password, up to a space or a quote. The host
holds a letter or a dot, or is ``*`` (``00:11:22:33:44:55``, a MAC address, is none);
the bounded, possessive fields keep the pattern linear on long runs of letters."""
_PGPASS_MARKER_RE = re.compile(r":(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:")
"""Every ``.pgpass`` line holds this (found with a literal ``:`` first: cheap)."""


def _pgpass_password(match: re.Match[str]) -> str:
    host, value = match.group("host"), match.group(3)
    if not (host == "*" or any(c.isalpha() or c == "." for c in host)) or _is_reference(value):
        return match.group(0)
    return match.group(1) + REDACTED
_CLI_USER_RE = re.compile(r"((?:^|\s)(?:-u|--user)[\s=]*[^\s:]*[^\s:\d][^\s:]*:)([^\s\"']+)")
"""``curl -u user:password``, ``--user=user:password``, when the password looks like one
(``docker run -u 1000:1000`` and ``-u root:wheel`` are not)."""
_WORDLIKE_RE = re.compile(r"[A-Za-z]{6,15}[.!?)]*\Z")
"""A value of 6-15 letters after "password is" is taken for prose ("is required")."""


def _bare_value(match: re.Match[str]) -> str:
    """Only a value that looks generated: digits, lower and upper case letters mixed, or
    20 hex digits and more (a Twilio auth token, a Heroku key: ``3f2a9b...``)."""
    value = match.group(2)
    digits = any(c.isdigit() for c in value)
    generated = (
        mixes_case_and_digits(value)
        or (_HEX_RE.fullmatch(value) is not None and sum(c.isdigit() for c in value) >= 6)
        or (digits and any(c.isalpha() for c in value) and _PASSWORD_WORD_RE.search(match[1]))
        or (_KEY_WORD_RE.search(match[1]) is not None and _interleaved(value))
    )
    return match.group(1) + REDACTED if generated else match.group(0)


_KEY_WORD_RE = re.compile(r"(?i)key\W*\Z")
"""The key word of ``_BARE_PROSE_RE`` is an ``api key`` (``access``, ``secret``,
``account``): lower-case letters and digits after it are one too (``_interleaved``)."""


def _interleaved(value: str) -> bool:
    """A value of 12+ letters and digits in one case, each in three runs at least
    (``abc123def456ghi7``, a generated key); not a name and a number (``rotation2024``,
    ``deploy2024prod1``; in mixed case, ``mixes_case_and_digits`` tells)."""
    return (
        len(value) >= 12
        and value.isalnum()
        and (value.islower() or value.isupper())
        and len(_DIGIT_RUN_RE.findall(value)) >= 3
        and len(_LETTER_RUN_RE.findall(value)) >= 3
    )


_DIGIT_RUN_RE = re.compile(r"[0-9]+")
_LETTER_RUN_RE = re.compile(r"[A-Za-z]+")
_PASSWORD_WORD_RE = re.compile(r"(?i)passw|passphrase")  # passwd too
"""After ``password``/``passphrase`` a value of letters and digits is one (``passphrase
hunter2hunter2``); after ``token`` or ``secret`` it must look generated."""
_HEX_RE = re.compile(r"[0-9a-fA-F]{20,}|[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")


def _short_password_flag(match: re.Match[str]) -> str:
    return (match.group(1) or match.group(3)) + REDACTED


def _cli_password(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED if _looks_secret(match.group(2)) else match.group(0)


_PROSE_LINK_RE = re.compile(rf"(?i){_PROSE_LINK}[\"'`]?\Z|\s+to\s+[\"'`]?\Z")
"""What joins a prose key to its value (`` is ``, ``: ``), to find the key itself."""


def _prose_value(match: re.Match[str]) -> str:
    value = match.group(2)
    key = _PROSE_LINK_RE.sub("", match.group(1))
    if value.startswith(REDACTED):  # replaced already: its stop stays
        return match.group(0)
    if _WORDLIKE_RE.match(value) or _REFERENCE_KEY_RE.search(key):
        return match.group(0)
    if _names_no_secret(key, _without_closing_brackets(value)):
        return match.group(0)
    if key.lower().endswith("pwd") and value.startswith(("/", "~", ".")):
        return match.group(0)  # the shell's working directory: "pwd is /home/me"
    if _is_token_key(match.group(1)) and not _looks_secret(value):
        return match.group(0)  # "token_limit is 128000"
    return match.group(1) + REDACTED


# Every pattern above holds one of these markers (the tokens) or, ignoring case, one of
# these words: text with none of them is left alone after a look for each.
_MARKER_WORDS = (
    "sk-", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox",
    "xapp-", "gsk_", "r8_", "xai-", "_v1_", "ya29.", "GOCSPX-", "AIza", "eyJ", "-----BEGIN",
    "rk_", "sk_", "hf_", "glpat-", "npm_", "pypi-", "://", "-u", "-p", "sig=", ":AA"
)
"""What every match of the token patterns holds, as it is written (``-u`` for ``--user``
and `` -u``, ``-p`` for ``--pass`` and `` -p``): substrings, looked for about twice as
fast as one pattern of these alternatives tried at every position."""
_TOKEN_WORDS = (
    "whsec_", "sg.", "webhooks/", "glrt-", "hvs.", "hvb.", "shp", "lin_api_", "atatt3",
    "age-secret-key-1"
)
"""Lower-case words of the token patterns that have no marker above (a cheaper test)."""
_KEYWORDS = (
    "authorization", "bearer", "basic", "key", "secret", "token", "pass", "pw", "pin",
    "cookie", "contrase", "senha", "cred", "kennwort", "wachtwoord", "mdp", "discord",
    "_auth", "redis-cli"
)
"""The lower-case words every pattern's match holds that is not told by a marker, but
for logging in (``_LOGIN_WORD_RE``, looked for where ``log`` or ``sign`` is)."""


def _has_marker(text: str) -> bool:
    return any(marker in text for marker in _MARKER_WORDS)


_LOGIN_WORD_RE = re.compile(r"log\s?in|sign\s?in|log\s?on|cred")
"""Every match of ``_LOGIN_RE`` holds one of these (lower case)."""


def _may_hold_credential(text: str) -> bool:
    """False only when no pattern can match. Non-ASCII text always goes through the
    patterns: ignoring case, they match a few non-ASCII letters (like U+212A for k)."""
    if not text.isascii():
        return True
    if _has_marker(text):
        return True
    lower = text.lower()
    return (
        any(word in lower for word in _KEYWORDS)
        or any(word in lower for word in _TOKEN_WORDS)
        or (("log" in lower or "sign" in lower) and _LOGIN_WORD_RE.search(lower) is not None)
        or (":" in text and _PGPASS_MARKER_RE.search(text) is not None)
    )


CLEAN_MEMO_TEXTS = 131_072
"""Texts one memo holds at most: above the tracked files a session can have (checkpoints
know 100,000). At 8,192, a manifest of 20,000 paths emptied the memo at every save, and
each save scrubbed every path again (200 ms of the StorageActor's thread, every turn)."""
CLEAN_MEMO_BUDGET = 16_000_000
"""What all the memos hold at most, in characters plus ``MEMO_TEXT_COST`` a text: about
that many bytes (a short text's place in a set costs more than its characters: counted
by characters alone, 15 memos of 131,072 paths took 212 MB; H139)."""
MEMO_TEXT_COST = 100
"""A text's str object beyond its characters (49 bytes) and its place in a set."""
CLEAN_MEMO_MAX_CHARS = 65_536
MAX_MEMOS = 16
"""Tuples of secrets with a memo of their own (a few exist in one process)."""
_clean_memo: dict[tuple[str, ...], set[str]] = {}
"""Texts already found clean, per tuple of known secrets: the same summary, decisions
and manifest are scrubbed again at every save, and the patterns cost about a millisecond
per 2 KB of prose (scrubbing is pure, so a memo of its no-op results is safe). A memo is
emptied when it holds ``CLEAN_MEMO_TEXTS`` texts, all of them when they would pass
``CLEAN_MEMO_BUDGET`` or a tuple past ``MAX_MEMOS`` comes; texts over
``CLEAN_MEMO_MAX_CHARS`` are not kept."""
_clean_memo_cost: dict[tuple[str, ...], int] = {}
"""What each memo holds, counted as ``CLEAN_MEMO_BUDGET`` counts it."""


def with_secrets(known: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    """``known`` and ``more``, each once, longest first (remembered: a writer's few
    sets of secrets are joined again at every save)."""
    return known if not more else _with_secrets(known, more)


def with_revealed(text: str, known: tuple[str, ...]) -> tuple[str, ...]:
    """``known`` and the values the patterns find secret in ``text`` (``revealed``), as a
    turn's save learns them: a line shown before that save (a tool call's) replaces them
    already."""
    return with_secrets(known, tuple(revealed(text, scrub_text(text, known))))


@lru_cache(maxsize=64)
def _with_secrets(known: tuple[str, ...], more: tuple[str, ...]) -> tuple[str, ...]:
    return longest_first((*known, *more))


def scrub_text(text: str, known_secrets: Iterable[str] = ()) -> str:
    """``text`` with known secret values and credential-looking strings replaced (whatever
    the order the values are given in)."""
    return _scrub_str(text, longest_first(known_secrets))


def _scrub_str(text: str, secrets: tuple[str, ...]) -> str:
    """``scrub_text`` with ``secrets`` already in ``longest_first`` order, remembering
    short texts found clean."""
    if len(text) > CLEAN_MEMO_MAX_CHARS:
        return _scrub_text(text, secrets)
    memo = _clean_memo.get(secrets)
    if memo is not None and text in memo:
        return text
    scrubbed = _scrub_text(text, secrets)
    if scrubbed == text:
        _remember_clean(text, secrets, memo)
    return scrubbed


def _remember_clean(text: str, secrets: tuple[str, ...], memo: set[str] | None) -> None:
    """Put ``text`` in the memo of ``secrets`` (``memo``, if it has one), within bounds."""
    cost = len(text) + MEMO_TEXT_COST
    if memo is not None and len(memo) >= CLEAN_MEMO_TEXTS:
        del _clean_memo[secrets], _clean_memo_cost[secrets]
        memo = None
    if sum(_clean_memo_cost.values()) + cost > CLEAN_MEMO_BUDGET or (
        memo is None and len(_clean_memo) >= MAX_MEMOS
    ):
        _clean_memo.clear()
        _clean_memo_cost.clear()
        memo = None
    if memo is None:
        memo = _clean_memo[secrets] = set()
    memo.add(text)
    _clean_memo_cost[secrets] = _clean_memo_cost.get(secrets, 0) + cost


_ASSIGNMENT_WORDS = ("key", "secret", "token", "pass", "pw")
_ENV_ASSIGNMENT_WORDS = ("KEY", "TOKEN", "SECRET", "PASS", "PWD", "CREDENTIAL", "_AUTH")
_PROSE_WORDS = (
    "pass", "pin code", "secret", "key", "token", "pw", "contrase", "senha", "cred",
    "kennwort", "wachtwoord", "mdp"
)
"""Ignoring case, every match of ``_ASSIGNMENT_RE`` (``_PROSE_RE``) holds one of these."""


@lru_cache(maxsize=64)
def _written_forms(known_secrets: tuple[str, ...]) -> tuple[str, ...]:
    """Each secret as it may stand in a text: as it is, and escaped as inside a JSON
    string (a tool call's arguments are JSON text kept as a string: a quote, a
    backslash or a non-ASCII letter of the value is escaped there), longest first."""
    forms = {
        form
        for secret in known_secrets
        if secret
        for form in (
            secret,
            json.dumps(secret, ensure_ascii=False)[1:-1],
            json.dumps(secret)[1:-1],
        )
    }
    return tuple(sorted(forms, key=lambda form: (-len(form), form)))


def encoded_forms(known_secrets: Iterable[str]) -> frozenset[bytes]:
    """The bytes each form a secret may stand in (``_written_forms``) is encoded as inside
    a JSON string written by orjson: a text of a file orjson wrote holds a form of the
    secret only if the file's bytes hold one of these (the escaping is character by
    character, so a form inside a text is a run of its bytes)."""
    forms = _written_forms(tuple(known_secrets))
    return frozenset(orjson.dumps(form)[1:-1] for form in forms)


def replace_known_bytes(data: bytes, known_secrets: tuple[str, ...]) -> bytes:
    """``data`` (a file's bytes, which may not parse: one moved aside as corrupt) with every
    form a known secret may stand in there replaced by ``[REDACTED]``, and nothing else
    changed: its written forms (``_written_forms``) as UTF-8 and as orjson writes each
    inside a JSON string, longest first; a plain word only where it stands whole, as
    ``_whole`` replaces it."""
    pattern = _known_bytes_pattern(longest_first(known_secrets))
    return data if pattern is None else pattern.sub(REDACTED.encode(), data)


@lru_cache(maxsize=16)
def _known_bytes_pattern(known_secrets: tuple[str, ...]) -> re.Pattern[bytes] | None:
    forms = {
        encoded: secret.isalpha() and len(secret) < 16
        for secret in known_secrets
        if secret
        for form in _written_forms((secret,))
        for encoded in (form.encode(), orjson.dumps(form)[1:-1])
    }
    if not forms:
        return None
    edge = rb"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf]))"
    return re.compile(
        b"|".join(
            edge + re.escape(form) + rb"(?![A-Za-z0-9_])" if word else re.escape(form)
            for form, word in sorted(forms.items(), key=lambda item: -len(item[0]))
        )
    )


@lru_cache(maxsize=256)
def _whole(secret: str) -> re.Pattern[str]:
    """Where ``secret`` is replaced: everywhere, but for a plain word (letters only,
    under 16: ``postgres``, ``changeme``), which is replaced where it stands whole (not
    inside a word or a name: ``postgres_schema.sql`` stays), also right after an escaped
    newline or tab of JSON text. A generated value glued to text (``bot123:AAH...`` in a
    Telegram URL, ``Tr0ub4dor99_old``) is still the secret."""
    if not (secret.isalpha() and len(secret) < 16):
        return re.compile(re.escape(secret))
    edge = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf]))"
    return re.compile(edge + re.escape(secret) + r"(?![A-Za-z0-9_])")


def replace_known(value: Any, known_secrets: tuple[str, ...]) -> Any:
    """``value`` (a text, or a JSON-like value of texts) with the known secret values
    replaced, however they are written, and no pattern run: the very object when none is
    in it. ``known_secrets`` in ``longest_first`` order."""
    if not known_secrets:
        return value
    if isinstance(value, str):
        return _replace_known_str(value, known_secrets)
    if isinstance(value, dict):
        items = {k: replace_known(v, known_secrets) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, list | tuple):
        values = [replace_known(v, known_secrets) for v in value]
        if all(new is old for new, old in zip(values, value, strict=True)):
            return value
        return tuple(values) if isinstance(value, tuple) else values
    return value


def _replace_known_str(text: str, known_secrets: tuple[str, ...]) -> str:
    for secret in _written_forms(known_secrets):
        if secret in text:
            text = _whole(secret).sub(REDACTED, text)
    return text


_CONTINUATION_RE = re.compile(
    r"(\[REDACTED\][ \t]*(?:\r?\n|\\n)[ \t]*)([A-Za-z0-9_\-/+=]{8,})"
    r"(?=[ \t]*(?:\r?\n|\\n|\Z|\\?\"))"
)
"""A line that holds only a value, right after a line that ends with a secret: the rest
of a key cut over two lines (``OPENAI_API_KEY=sk-proj-Ab...`` then ``...Xy9``), in plain
text or in JSON text (an escaped newline)."""


def _continued(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED if _cut_value(match.group(2)) else match.group(0)


def _cut_value(value: str) -> bool:
    """A value that looks like the rest of a key: upper and lower case letters and
    digits, or 16+ characters of letters and digits; not a name that reads as words and
    numbers (``Build2024Release7x``, ``ticket-12345-fix``)."""
    if _reads_as_words(value):
        return False
    if mixes_case_and_digits(value):
        return True
    return (
        len(value) >= 16
        and any(c.isdigit() for c in value)
        and any(c.isalpha() for c in value)
    )


_NAME_PART_RE = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
"""The letters of a name, word by word: ``Build``, ``Release``, ``HTTP``, ``x``."""
_SHORT_WORDS = frozenset(
    ("by", "id", "of", "to", "in", "on", "at", "is", "or", "an", "up", "no", "do", "if", "as")
)
_VOWELS = frozenset("aeiouy")
_CAPITALS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _reads_as_words(value: str) -> bool:
    """A name made of words and numbers (``Build2024Release7x``, ``getUserById2024``,
    ``Sprint2024Q3Retro``), not a generated value: one word at least (3+ letters, after
    its capital if any, holding a vowel and another letter) and at most one stray letter
    (a capital alone, a run of lower-case letters that is no word: the ``x`` of ``7x``);
    a run of capitals (``HTTP``) and a two-letter word (``Id``, ``By``) are neither. A
    generated value's letters fall mostly in ones and twos between digits and capitals
    (``0123SeCoNdHaLf...``: seven stray letters), or make no word (``DDDDeeee2222``)."""
    words = stray = 0
    for part in _NAME_PART_RE.findall(value):
        lower = part.lstrip(_CAPITALS)  # the vowels and other letters are looked for here
        if not lower:
            stray += len(part) == 1
        elif part.lower() in _SHORT_WORDS:
            continue
        elif len(part) >= 3 and _VOWELS.intersection(lower) and not set(lower) <= _VOWELS:
            words += 1
        else:
            stray += 1
        if stray > 1:
            return False
    return words > 0


_VALUE_WORD_RE = re.compile(r"[A-Za-z0-9_\-/+=]{8,}")
_WHOLE_VALUE_RE = re.compile(r"\s*([A-Za-z0-9_\-/+=]{6,})[\s.]*")
MIN_CUT_REST = 12
"""The shortest rest of a key looked for among a message's words (3+ digits in it)."""


def continued_secret(previous: str, text: str, known_secrets: Iterable[str] = ()) -> str | None:
    """The rest of a key cut between two messages: when ``previous`` ends with a secret
    (what scrubbing it replaces is its last word), the rest of it in ``text``
    (``cut_rest``), if any."""
    rest = cut_rest(text)
    if rest is None:  # most messages: ``previous`` is not scrubbed again to know
        return None
    if previous.rstrip(_MESSAGE_END).endswith(REDACTED):
        return None  # scrubbed already (a resumed session's): no key was cut in this chat
    if cut_token_head(previous) is not None:
        return rest  # a head too short for its pattern (``sk-proj-Ab3d``): H204
    if not scrub_text(previous, known_secrets).rstrip(_MESSAGE_END).endswith(REDACTED):
        return None
    return rest


def cut_rest(text: str) -> str | None:
    """What in ``text`` may be the rest of a key cut after the message before: ``text``
    itself when it is one value alone of 6+ characters that mixes upper and lower case
    and digits (``Xy9Zq8``), else its first value that looks like the rest of a key
    (``_cut_value``) of ``MIN_CUT_REST``+ characters with 3+ digits in it
    (``0123SeCoNdHaLf...``; ``ParserV2Config`` and ``Build2024Release7x`` are names)."""
    alone = _WHOLE_VALUE_RE.fullmatch(text)
    if alone is not None:
        value = alone.group(1).strip("=")
        if mixes_case_and_digits(value) and not _reads_as_words(value):
            return value
    return next(
        (
            value
            for word in _VALUE_WORD_RE.finditer(text)
            if len(value := word.group().strip("=")) >= MIN_CUT_REST
            and sum(c.isdigit() for c in value) >= 3
            and _cut_value(value)
        ),
        None,
    )


def _env_assigned(match: re.Match[str]) -> str:
    value = match.group(3)
    if _is_reference(value) or (match.group("auth") and not _auth_value(value)):
        return match.group(0)
    return match.group(1) + REDACTED


def _auth_value(value: str) -> bool:
    """A ``*_AUTH`` variable's value that is a credential: ``user:password``, whatever the
    password looks like (``BASIC_AUTH=user:plainword``; as in the environment: a URL is
    not one), or one that looks like the rest of a key (``_cut_value``: ``Zq8Xv7Lm2Pk4``, a
    base64 token); not a setting (``REQUIRE_AUTH=enabled``, ``DB_AUTH=scram-sha-256``,
    ``HTTP_AUTH=basic``)."""
    return _cut_value(value) or (
        _USER_PASSWORD_RE.fullmatch(value) is not None and "://" not in value
    )


_BASE64_RE = re.compile(
    r"(?<![A-Za-z0-9+/_\-])(?<![A-Za-z0-9_\-]\.)[A-Za-z0-9+/]{16,}={0,2}"
    r"(?![A-Za-z0-9+/=_\-]|\.[A-Za-z0-9_\-])"
)
"""A base64 value (padded: its length a multiple of 4) that may wrap a credential; not
a part of a dotted token (a JWT's header decodes to ``{"alg":"HS256"}``, which reads
as ``user:password``: it was replaced alone, and the JWT pattern no longer saw the rest,
payload and signature, which were kept in clear)."""
_USER_PASSWORD_RE = re.compile(r"[^\s:]{1,64}:\S{6,}")


def _base64_credential(match: re.Match[str]) -> str:
    """``[REDACTED]`` for a base64 value that wraps a credential: ``user:password`` (a
    Docker ``auth``, HTTP Basic) or text a pattern scrubs (``sk-proj-...``,
    ``password=...``); the value as it is otherwise."""
    value = match.group()
    if len(value) % 4:
        return value
    try:
        decoded = base64.b64decode(value, validate=True).decode("ascii")
    except ValueError:  # binascii.Error, UnicodeDecodeError, a non-ASCII letter (U+212A)
        return value
    if not decoded.replace("\n", "").isprintable():
        return value
    if _USER_PASSWORD_RE.fullmatch(decoded) and _looks_secret(decoded.split(":", 1)[1]):
        return REDACTED
    return REDACTED if _scrub_patterns(decoded) != decoded else value


def _scrub_text(text: str, known_secrets: tuple[str, ...]) -> str:
    """The patterns are slow (about a millisecond for 2 KB of prose), so each one runs
    only on text that holds the words every match of it holds: with ASCII text, ignoring
    case is lowering it. A replacement (``[REDACTED]``) holds none of those words, so
    what one pattern replaces cannot give another one a match it would not have had.
    A base64 value is decoded and looked into first (no word tells where one is)."""
    text = _replace_known_str(text, known_secrets)
    if len(text) >= 16:
        text = _BASE64_RE.sub(_base64_credential, text)
    return _scrub_patterns(text)


def _scrub_patterns(text: str) -> str:
    """``text`` scrubbed by the patterns (each only where its words are)."""
    if not _may_hold_credential(text):
        return text
    if not text.isascii():
        tokens = auth = bearer = basic = assignment = env_assignment = prose = cookie = bot = True
        login = pin = True
    else:
        lower = text.lower()
        tokens = _has_marker(text) or any(
            word in lower for word in _TOKEN_WORDS
        )
        auth = "authorization" in lower
        bearer = "bearer" in lower
        basic = "basic" in lower
        assignment = any(word in lower for word in _ASSIGNMENT_WORDS)
        env_assignment = any(word in text for word in _ENV_ASSIGNMENT_WORDS)
        prose = any(word in lower for word in _PROSE_WORDS)
        cookie = "cookie" in lower
        bot = "discord" in lower or "token" in lower or "bot " in lower
        login = _LOGIN_WORD_RE.search(lower) is not None
        pin = "pin" in lower or "passcode" in lower
    if tokens:
        text = _TOKENS_RE.sub(_token, text)
        if "gh" in text:
            text = _CUT_GITHUB_TOKEN_RE.sub(_cut_github_token, text)
        if "://" in text:
            text = _URL_PASSWORD_RE.sub(_KEEP_KEY + r"\g<3>", text)
            if "@" in text:
                text = _URL_USER_RE.sub(_url_user, text)
    if bot:
        text = _DISCORD_BOT_TOKEN_RE.sub(REDACTED, text)
    if auth:
        text = _AUTH_HEADER_RE.sub(_KEEP_KEY, text)
    if cookie:
        text = _COOKIE_RE.sub(_KEEP_KEY, text)
    if bearer:
        text = _BEARER_RE.sub(_KEEP_KEY, text)
    if basic:
        text = _BASIC_RE.sub(_basic_credentials, text)
    if assignment or prose:
        text = _QUOTED_RE.sub(_quoted, text)
    if prose:  # before the one-word patterns take its first word alone
        text = _SEVERAL_WORDS_RE.sub(_several_words, text)
    if assignment:
        text = _LINE_ASSIGNMENT_RE.sub(_KEEP_KEY, text)
        if "\\n" in text or '"' in text:
            text = _JSON_LINE_ASSIGNMENT_RE.sub(_KEEP_KEY, text)
        text = _ASSIGNMENT_RE.sub(_assigned, text)
        if "</" in text:
            text = _XML_ELEMENT_RE.sub(_assigned, text)
        if _may_hold_yaml_block(text):
            text = _YAML_BLOCK_RE.sub(_block_value, text)
        if ";" in text:
            text = _CONNECTION_PASSWORD_RE.sub(_connection_password, text)
        if ("machine" in text or "default" in text) and ("login" in text or "account" in text):
            text = _NETRC_RE.sub(_connection_password, text)
            text = _NETRC_PASSWORD_FIRST_RE.sub(_connection_password, text)
    if env_assignment:
        text = _ENV_ASSIGNMENT_RE.sub(_env_assigned, text)
    if prose:
        text = _PROSE_RE.sub(_prose_value, text)
        text = _SET_RE.sub(_prose_value, text)
        text = _BARE_PROSE_RE.sub(_bare_value, text)
    if assignment:  # "key" is one of its words
        text = _BARE_KEY_RE.sub(_mixed_value, text)
    if pin:
        text = _PIN_RE.sub(_KEEP_KEY, text)
    if login:
        text = _LOGIN_RE.sub(_cli_password, text)
    if "-u" in text:  # "--user" too
        text = _CLI_USER_RE.sub(_cli_password, text)
    if "--pass" in text:
        text = _CLI_PASSWORD_RE.sub(_KEEP_KEY, text)
    if "-p" in text:
        text = _SHORT_PASSWORD_FLAG_RE.sub(_short_password_flag, text)
    if "redis-cli" in text:
        text = _REDIS_CLI_PASSWORD_RE.sub(_KEEP_KEY, text)
    if "sig=" in text:
        text = _SAS_SIGNATURE_RE.sub(_KEEP_KEY, text)
    if ":" in text and _PGPASS_MARKER_RE.search(text):
        text = _PGPASS_RE.sub(_pgpass_password, text)
    if REDACTED in text and ("\n" in text or "\\n" in text):
        text = _CONTINUATION_RE.sub(_continued, text)
    return text


def shown_input(value: str, limit: int, known_secrets: Iterable[str] = ()) -> str:
    """``value`` (what the user typed or set: an answer, a command, an argument) as an
    error line repeats it, quoted: scrubbed first, then cut to ``limit`` characters
    (``...`` after a cut). Cut first, a key was no longer whole for the patterns."""
    shown = scrub_text(value, known_secrets)
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


def scrub_json(value: Any, known_secrets: Iterable[str] = ()) -> Any:
    """A copy of a JSON-like value with every string scrubbed (keys are left alone)."""
    return _scrub(value, longest_first(known_secrets))


_ATOMS = (int, float, bool, type(None))
"""JSON values with no string inside: left as they are without a call (most of a
message's values are numbers and nulls)."""


MESSAGE_STRUCTURE = frozenset(
    (
        "kind",
        "part_kind",
        "timestamp",
        "tool_call_id",
        "finish_reason",
        "state",
        "outcome",
        "model_name",
        "provider_name",
        "provider_response_id",
        "run_id",
    )
)
"""Keys whose string values say what a saved message is (kinds, times, ids, the model):
never a user's text, and scrubbing one (a secret that happens to be ``response``) made
the message, and so the session, unreadable. Not ``provider_url``: it is the endpoint's
``OPENAI_BASE_URL`` as it was given, ``user:password@`` and all, and no format checks it."""


def _scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return _scrub_str(value, secrets)
    if isinstance(value, dict):
        return {
            k: v
            if type(v) in _ATOMS or (k in MESSAGE_STRUCTURE and type(v) is str)
            else _scrub(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [v if type(v) in _ATOMS else _scrub(v, secrets) for v in value]
    return value


def scrub_keys(value: dict[str, Any], known_secrets: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of ``value`` without the keys that hold a secret (its values as they are):
    a manifest's paths are text, its SHA-256 digests are not. A path with a secret in it
    is left out, not kept scrubbed: ``[REDACTED]/schema.sql`` names no file, and would
    be reported deleted at every resume."""
    secrets = longest_first(known_secrets)
    return {key: item for key, item in value.items() if _scrub_str(key, secrets) == key}


def _generated(value: str) -> bool:
    """A value that cannot be a word of the conversation: 16+ characters without a space,
    or 8+ mixing upper and lower case letters and digits (``Kd8Lw3Pq7Zx``), or letters,
    digits and a symbol (``Tr0ub4dor&3``); not ``required`` or ``ed25519``, which a
    pattern may take for a password where it stands, but which elsewhere are words. A
    passphrase (3+ words, none that prose is made of: ``_passphrase_words``; or one
    ``_set_passphrase`` takes) of 16+ characters is one too: ``correct horse battery
    staple`` is no sentence of a chat."""
    if " " in value:
        words = value.split()
        return (
            len(value) >= 16
            and len(words) >= MIN_PASSPHRASE_WORDS
            and (_passphrase_words(value) == len(words) or _lower_case_run(words))
            and all(_PASSPHRASE_WORD_RE.fullmatch(word) for word in words)
        )
    if len(value) >= 16:
        return True
    letters = any(c.isalpha() for c in value)
    digits = any(c.isdigit() for c in value)
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    symbol = any(not c.isalnum() for c in value)
    return len(value) >= 8 and letters and digits and (mixed or symbol)


def revealed(original: str, scrubbed: str) -> list[str]:
    """The values the patterns replaced in ``original`` to give ``scrubbed`` (each
    ``[REDACTED]`` of it put back) that look generated (``_generated``), found by lining
    the kept text up: once known, a value is replaced wherever it stands, also where no
    pattern sees it (``the password for staging is X`` found in one decision, ``X``
    alone in another line)."""
    if scrubbed == original or REDACTED in original:
        return []
    kept = scrubbed.split(REDACTED)
    if not original.startswith(kept[0]):
        return []
    found: list[str] = []
    at = len(kept[0])
    for index, piece in enumerate(kept[1:], start=1):
        if index == len(kept) - 1:
            end = len(original) - len(piece) if original.endswith(piece) else -1
        else:
            end = original.find(piece, at + 1) if piece else -1
        if end <= at:
            break  # two values side by side, or text that does not line up: stop here
        found.append(original[at:end])
        at = end + len(piece)
    values = (value.rstrip(".,;:!?)'\"") for value in found)  # the sentence's own stop
    return [value for value in values if _generated(value)]


def revealed_in(original: Any, scrubbed: Any) -> set[str]:
    """``revealed`` over every string of a JSON-like value and its scrubbed copy."""
    if isinstance(original, str) and isinstance(scrubbed, str):
        return set(revealed(original, scrubbed)) if original != scrubbed else set()
    found: set[str] = set()
    if isinstance(original, dict) and isinstance(scrubbed, dict):
        for key, value in original.items():
            if key in scrubbed and type(value) not in _ATOMS:
                found |= revealed_in(value, scrubbed[key])
    elif isinstance(original, list | tuple) and isinstance(scrubbed, list | tuple):
        for value, clean in zip(original, scrubbed, strict=False):
            if type(value) not in _ATOMS:
                found |= revealed_in(value, clean)
    return found
