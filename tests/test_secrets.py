"""No secret reaches a session file or a listing: every text passes the SessionManager's scrub."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from session import redaction
from session.catalog import SessionCatalog
from session.encoded import EncodedMessages
from session.history import dump_messages, load_messages
from session.manager import SessionManager
from session.models import SessionState
from session.redaction import REDACTED, scrub_keys, scrub_text, with_revealed
from tests.conversations import conversation

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
ENV_SECRET = "env-provided-value-0123456789"
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = [
    "sk-live-abcdefghijklmnop1234",
    "AKIAABCDEFGHIJKLMNOP",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "hunter2222secret",
    "correcthorse99",
    PEM,
    ENV_SECRET,
]
TEXT = (
    "keys: sk-live-abcdefghijklmnop1234 AKIAABCDEFGHIJKLMNOP "
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789 password=hunter2222secret; "
    f"admin password is correcthorse99. {PEM} env {ENV_SECRET}"
)


def message(text: str) -> dict[str, object]:
    return {
        "kind": "request",
        "parts": [
            {"part_kind": "user-prompt", "content": text, "timestamp": "2026-11-29T12:00:00Z"}
        ],
    }


def leaky_state(session_id: str = "aaaaaaaaaaaa") -> SessionState:
    return SessionState(
        session_id=session_id,
        created_at=NOW,
        updated_at=NOW,
        agent_spec_path=f"specs/{TEXT}.md",
        file_manifest={f"notes {TEXT}.md": "0" * 64},
        summary=TEXT,
        decisions=(TEXT, "plain decision"),
        recent_messages=(message(TEXT),),
        compacted_history_summary=TEXT,
        phase="design",
    )


def assert_clean(data: str | bytes) -> None:
    text = data.decode() if isinstance(data, bytes) else data
    text = text.replace("\\n", "\n")
    for secret in SECRETS:
        assert secret not in text
    assert REDACTED in text


@pytest.mark.parametrize(
    "field",
    [
        "summary",
        "decisions",
        "recent_messages",
        "compacted_history_summary",
        "agent_spec_path",
        "file_manifest",
    ],
)
def test_every_text_field_is_scrubbed_when_saved(tmp_path: Path, field: str) -> None:
    manager = SessionManager(tmp_path, known_secrets=(ENV_SECRET,))
    manager.save(leaky_state())
    saved = orjson.loads((tmp_path / "aaaaaaaaaaaa.json").read_bytes())
    if field == "file_manifest":  # a path with a secret in it is left out, not rewritten
        assert saved[field] == {}
        return
    assert_clean(json.dumps(saved[field]))


def test_pre_encoded_messages_are_scrubbed_too(tmp_path: Path) -> None:
    state = leaky_state()
    manager = SessionManager(tmp_path, known_secrets=(ENV_SECRET,))
    manager.save(state, EncodedMessages.scrub(state.recent_messages, (ENV_SECRET,)))
    assert_clean((tmp_path / "aaaaaaaaaaaa.json").read_bytes())


def test_messages_encoded_without_the_managers_secrets_are_scrubbed_again(
    tmp_path: Path,
) -> None:
    state = leaky_state()
    manager = SessionManager(tmp_path, known_secrets=(ENV_SECRET,))
    manager.save(state, EncodedMessages.scrub(state.recent_messages, ()))
    assert_clean((tmp_path / "aaaaaaaaaaaa.json").read_bytes())


def test_a_file_written_with_secrets_is_listed_and_loaded_scrubbed(tmp_path: Path) -> None:
    project = tmp_path / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    raw = leaky_state().model_dump(mode="json")  # as an older version wrote it: unscrubbed
    (project / "aaaaaaaaaaaa.json").write_bytes(orjson.dumps(raw))
    catalog = SessionCatalog(tmp_path, read_only=True, known_secrets=(ENV_SECRET,))
    listing = catalog.list(None, {})
    assert_clean(json.dumps([row.to_json() for row in listing.rows]))
    assert_clean(json.dumps(catalog.manager(project).load("aaaaaaaaaaaa").model_dump(mode="json")))


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("the admin password is correcthorse99", "the admin password is "),
        ("my password: hunter22", "my password: "),
        ("the api key was AbC123xyz!", "the api key was "),
        ("password is correcthorsebatterystaple", "password is "),
        # a helper's attack: each was stored in clear
        ("pwd is letmein42", "pwd is "),
        ("the db pwd: letmein42", "the db pwd: "),
        ("mot de passe: secretfr99", "mot de passe: "),
        ("Passwort: geheim42", "Passwort: "),
        ("la contraseña: clave2024x", "la contraseña: "),
        ("senha: minhasenha9", "senha: "),
        # a helper's attack on compaction: each was kept in the summary in clear
        ("the password for staging is Tr0ub4dor&3", "the password for staging is "),
        ("the password for the staging db is Tr0ub4dor&3", "the password for the staging db is "),
        ("use secret Zq9Xv7Lm2Pk4", "use secret "),
        ("credentials are admin/Hx8Kq2Vn5Wz7", "credentials are "),
        ("login with admin / Hx8Kq2Vn5Wz7", "login with admin / "),
        ("sign in as bob:S3cret99", "sign in as bob:"),
        ("my pw is Tr0ub4dor&3", "my pw is "),
        ("Passwort ist geheim42", "Passwort ist "),
        ("le mot de passe est secretfr99", "le mot de passe est "),
        ("la contraseña es clave2024x", "la contraseña es "),
        # a helper's second attack: each was still stored in clear
        ("the password is now Nw7pLm2Qa", "the password is now "),
        ("the password is: Co7pLm2Qa", "the password is: "),
        ("password has been changed to Ch4ngedPw9", "password has been changed to "),
        ("the new password will be Wi11Pw2Q", "the new password will be "),
        ("private key is Pk9Xv7Lm2Pk4abc", "private key is "),
        ("credentials: admin / Cr3dsLm2Qa", "credentials: admin / "),
        ("my password's Ap0str0phe9", "my password's "),
        ("log in as root with R00tPw2Qa", "log in as root with "),
        ("la password è Segreto123", "la password è "),
        ("pass is Pa55Lm2Qa", "pass is "),
        ("das Kennwort ist Kw7Geheim12", "das Kennwort ist "),
        ("the staging password stays Dc1dePw2Q", "the staging password stays "),
        (
            "the password for the new staging server is Xy7Pq2Lm9",
            "the password for the new staging server is ",
        ),
        ("the password I use is Xy7Pq2Lm9", "the password I use is "),
        ("password -> Xy7Pq2Lm9", "password -> "),
        ("le mdp est Xy7Pq2Lm9", "le mdp est "),
        ("wachtwoord is Xy7Pq2Lm9", "wachtwoord is "),
        ("mein Passwort lautet Xy7Pq2Lm9", "mein Passwort lautet "),
        ("my pin is 482913", "my pin is "),
        ("passcode 482913", "passcode "),
    ],
)
def test_prose_credentials_are_scrubbed(text: str, kept: str) -> None:
    assert scrub_text(text) == kept + REDACTED


@pytest.mark.parametrize(
    ("text", "kept"),
    [  # found by a helper's attack: each was stored in clear
        (
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "export AWS_SECRET_ACCESS_KEY=",
        ),
        ("GITHUB_TOKEN=abc123def456ghi789jkl", "GITHUB_TOKEN="),
        ("STRIPE_KEY=sk_live_51Habcdefghijklmnopqrstuv", "STRIPE_KEY="),
        ("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "HF_TOKEN="),
        ("DB_PASS: ppPASSvalue4321", "DB_PASS: "),
        ("the stripe key sk_live_51Habcdefghijklmnopqrstuv", "the stripe key "),
        ("use hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "use "),
        (  # the config-file form of the same keys, in any case
            "aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key: ",
        ),
        ("client_secret = 'Zq8dTr0pLm2x", "client_secret = '"),
        ("db_password_prod: ppPASSvalue4321", "db_password_prod: "),
        ("refresh_token: 1//0gAbCdEfGhIj", "refresh_token: "),
        ('"private_key": "MIIEvQIBADANBgkq', '"private_key": "'),
        # found by a helper's second attack: token keys, bare token, prose forms
        ("github_token: ghx/abc123/def999", "github_token: "),
        ("token: tk/abc123/zzz777", "token: "),
        ("slack_bot_token: xoxq/abc/123456", "slack_bot_token: "),
        ("client_secret is cs/abc/987654", "client_secret is "),
        ("refresh_token was rt-0gAbCdEf99", "refresh_token was "),
        ("set aws_secret_access_key to wJalrXUtnFEMI/K7MDENG", "set aws_secret_access_key to "),
    ],
)
def test_environment_assignments_and_provider_tokens_are_scrubbed(text: str, kept: str) -> None:
    assert scrub_text(text) == kept + REDACTED


def test_the_password_of_a_url_is_scrubbed_and_the_rest_kept() -> None:
    url = "DATABASE_URL=postgres://admin:S3cr3tPass99@db.example.com/app"
    assert "S3cr3tPass99" not in scrub_text(url)
    assert scrub_text("see postgres://admin:S3cr3tPass99@db.example.com/app") == (
        f"see postgres://admin:{REDACTED}@db.example.com/app"
    )
    assert scrub_text("cache at redis://:SECRETredis2@h:6379") == (
        f"cache at redis://:{REDACTED}@h:6379"
    )


@pytest.mark.parametrize(
    "text",
    [
        "the primary key is the ticket id",
        "SORT_KEY is the column we sort by",
        "visit https://example.com/docs for more",
        "max_tokens: 4096",
        "max_tokens: 128000",
        "primary_key: ticket_id",
        "sort_key: created_at",
        "secretary: JaneDoe42",
        "token_limit: 128000",
        "the token: expired",
        "set the token to expire",
        "We use Bearer authentication for the internal API",
    ],
)
def test_ordinary_text_about_keys_and_urls_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "a password is required.",
        "the token is expired",
        "the secret is simple",
        "pwd is /home/me/project",
        "pwd: ~/work",
        "run pwd to see the directory",
        "the token for github is in the vault",
        "credentials are stored in the vault",
        "login with google / github",
        "the secret sauce is important",
        "use secret keys and rotate them",
        "the api key for openai is OPENAI_API_KEY",
        "the boarding pass is printed",
        "the password should be strong",
        "the password will be rotated monthly",
        "pin the version to 1.2.3",
        "pass the token to the function",
        "the password policy2 applies",
        "a password field1 and a password field2",
        "call 123456789:AAA later",
    ],
)
def test_prose_about_credentials_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_a_checkpoint_entry_is_scrubbed_like_the_session_file(tmp_path: Path) -> None:
    """Found by an acceptance check: the entry kept summary and decisions in clear."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "spec.md").write_text(f"the user's file keeps its words: {TEXT}\n")
    project = tmp_path / "projects" / "ws_00000000" / "sessions"
    store = SessionCatalog(tmp_path, known_secrets=(ENV_SECRET,)).checkpoints(project)
    checkpoint = store.write(
        leaky_state(), workspace, ["spec.md"], reason="save", cap=10**9, now=NOW
    )
    (entry,) = (project.parent / "checkpoints" / "aaaaaaaaaaaa").iterdir()
    raw = orjson.loads(entry.read_bytes())
    assert_clean(json.dumps(raw["state"]))
    assert_clean(checkpoint.state.model_dump_json())
    (blob,) = (project.parent / "blobs").iterdir()
    assert "hunter2222secret" in blob.read_text()  # file contents are restored exactly


def test_a_checkpoint_keeps_no_file_whose_name_holds_a_secret(tmp_path: Path) -> None:
    """A helper's find (H46): the manifest left such a name out, the checkpoint entries kept
    it in clear (a file is restored by its name: so it is not checkpointed at all)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    leaky = "sk-AbCdEfGhIjKlMnOpQrStUv5555.txt"
    (workspace / leaky).write_text("named for a key\n")
    (workspace / "spec.md").write_text("# spec\n")
    project = tmp_path / "projects" / "ws_00000000" / "sessions"
    store = SessionCatalog(tmp_path, known_secrets=(ENV_SECRET,)).checkpoints(project)
    checkpoint = store.write(
        leaky_state(), workspace, [leaky, "spec.md"], reason="save", cap=10**9, now=NOW
    )
    assert list(checkpoint.files) == ["spec.md"]
    (entry,) = (project.parent / "checkpoints" / "aaaaaaaaaaaa").iterdir()
    assert b"AbCdEfGhIjKl" not in entry.read_bytes()


def test_a_checkpoint_written_unscrubbed_is_read_scrubbed(tmp_path: Path) -> None:
    from session.manager import CheckpointStore

    workspace = tmp_path / "ws"
    workspace.mkdir()
    project_dir = tmp_path / "projects" / "ws_00000000"
    CheckpointStore(project_dir).write(
        leaky_state(), workspace, [], reason="save", cap=10**9, now=NOW
    )
    (entry,) = (project_dir / "checkpoints" / "aaaaaaaaaaaa").iterdir()
    raw = orjson.loads(entry.read_bytes())
    raw["state"] = leaky_state().model_dump(mode="json")  # as an older agent-assist wrote it
    entry.write_bytes(orjson.dumps(raw))
    assert "hunter2222secret" in entry.read_text()
    store = SessionCatalog(tmp_path, known_secrets=(ENV_SECRET,)).checkpoints(
        project_dir / "sessions"
    )
    assert_clean(store.load("aaaaaaaaaaaa", 1).state.model_dump_json())
    assert_clean(str(store.listing("aaaaaaaaaaaa")))


@pytest.mark.parametrize(
    "given",
    [("abcdefgh", "abcdefgh_XYZ12345"), frozenset({"abcdefgh", "abcdefgh_XYZ12345"})],
    ids=["shorter first", "a set"],
)
def test_a_secret_that_holds_another_is_replaced_whole_whatever_the_order(
    given: tuple[str, ...] | frozenset[str],
) -> None:
    assert scrub_text("token abcdefgh_XYZ12345 here", given) == f"token {REDACTED} here"


def test_messages_encoded_for_a_save_lose_no_part_of_a_longer_secret(tmp_path: Path) -> None:
    secrets = ("correcthorse", "correcthorse!Zx9#2024")  # shorter first, as a set may give
    message = {"kind": "request", "parts": [{"content": "use correcthorse!Zx9#2024 for prod"}]}
    state = leaky_state().model_copy(update={"recent_messages": (message,)})
    manager = SessionManager(tmp_path, known_secrets=secrets)
    manager.save(state, EncodedMessages.scrub([message], secrets))
    data = (tmp_path / "aaaaaaaaaaaa.json").read_bytes()
    assert b"Zx9" not in data and b"correcthorse" not in data


@pytest.mark.parametrize("secret", ['pa"ss\\word123', "ключ-секрет-значение-ÄÖÜ-测试"])
def test_a_secret_inside_a_tool_calls_json_arguments_is_scrubbed(
    tmp_path: Path, secret: str
) -> None:
    """Arguments are JSON text kept as a string: there the value's quotes, backslashes
    and non-ASCII letters stand escaped, and the plain value was not found."""
    call = {
        "kind": "response",
        "parts": [
            {
                "part_kind": "tool-call",
                "tool_name": "write_file",
                "args": json.dumps({"path": "x.md", "content": f"the value {secret} again"}),
                "tool_call_id": "c1",
            }
        ],
    }
    state = leaky_state().model_copy(update={"recent_messages": (message("hi"), call)})
    manager = SessionManager(tmp_path, known_secrets=(secret,))
    manager.save(state, EncodedMessages.scrub(state.recent_messages, (secret,)))
    data = (tmp_path / "aaaaaaaaaaaa.json").read_text()
    assert secret not in json.loads(json.loads(data)["recent_messages"][1]["parts"][0]["args"])[
        "content"
    ]
    assert "[REDACTED]" in data


@pytest.mark.parametrize("secret", ["response", "user-prompt", "complete", "function:offline"])
def test_a_secret_that_is_a_word_of_the_message_format_leaves_the_session_readable(
    tmp_path: Path, secret: str
) -> None:
    """Scrubbing the messages' own structure (kinds, ids, times, the model) made every
    session of that chat unreadable."""
    messages = tuple(dump_messages(conversation(0, 1, 1)))
    state = leaky_state().model_copy(update={"recent_messages": messages})
    manager = SessionManager(tmp_path, known_secrets=(secret,))
    manager.save(state, EncodedMessages.scrub(messages, (secret,)))
    assert load_messages(manager.load("aaaaaaaaaaaa").recent_messages)


def test_a_pass_variable_is_a_secret_and_the_working_directory_is_not() -> None:
    from session.environment import secrets_from_environment

    environ = {"DB_PASS": "ppPASSvalue4321", "PWD": "/home/someone/work", "OLDPWD": "/tmp/x"}
    assert secrets_from_environment(environ) == ("ppPASSvalue4321",)


@pytest.mark.parametrize(
    "text",
    [  # found by a helper's attack: a "path" cut out of its key's context was kept in clear
        "my config has aws_secret_access_key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "also Authorization: Bearer eyJhbGciOi.eyJzdWIiOi/abc/def",
        "WRITE notes/secret.md AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "the token=ghp_abcdefghijklmnopqrstuvwxyz0123456789/x/y",
        "github_token: ghx/abc123/wJalrXUtnFEMI",
        "client_secret is cs/abc/wJalrXUtnFEMI",
        'password: "correct horse wJalrXUtnFEMI staple"',
    ],
)
def test_a_compaction_keeps_no_secret_of_the_conversation(text: str) -> None:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        UserPromptPart,
    )

    from session.compaction import (
        OfflineEventSummarizer,
        events_from_messages,
        events_text,
        extract_retained,
        render_compaction,
    )

    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(text)]),
        ModelResponse(parts=[TextPart(f"noted: {text}")]),
    ]
    events = events_from_messages(messages, first_invocation=1)
    summarized = OfflineEventSummarizer().summarize(events)
    assert summarized is not None and summarized.compaction is not None
    compaction = summarized.compaction
    kept = [
        render_compaction(replace(compaction, retained=extract_retained(messages))),
        events_text(events),
    ]
    for secret in ("wJalrXUtnFEMI", "eyJzdWIiOi", "ghp_abcdefghij"):
        assert all(secret not in part for part in kept), kept


@pytest.mark.parametrize(
    ("text", "kept"),
    [  # the whole quoted value goes, spaces and all
        ('password: "correct horse battery staple"', 'password: "'),
        ("aws_secret_access_key: 'wJalr XUtn/K7MD'", "aws_secret_access_key: '"),
    ],
)
def test_a_quoted_value_is_scrubbed_whole(text: str, kept: str) -> None:
    quote = text[-1]
    assert scrub_text(text) == kept + REDACTED + quote


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # found by a helper's third attack
        (json.dumps({"content": 'password: "hunter two three four"'}), "hunter two"),
        ('client_secret is "cs abc 987654"', "cs abc"),
        ('set the password to "blue whale song"', "blue whale"),
        ("refresh_token was 'rt abc 123456'", "rt abc"),
        ("password: \u201ccorrect horse battery staple\u201d", "horse battery"),
        ('password: "correct horse\'s battery staple"', "battery staple"),
        ("passphrase: Xy9/abc123", "Xy9/abc123"),
        ('passphrase: "correct horse battery staple"', "horse battery"),
        # found by a helper (H46): each was stored in clear, or most of it
        ("telegram bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "HdqTcvCH1vGWJxfSeof"),
        ("the bot token 987654321:AAF-x_y2Zq9Xv7Lm2Pk4Rt6Yu8Io0Pa1Sd3", "Zq9Xv7Lm2Pk4"),
        ('{"password": "Qz8\\"Xk2Lm9Ab"}', "Xk2Lm9Ab"),
        ("passphrase hunter2hunter2", "hunter2hunter2"),
        ("passwd hunter2hunter2", "hunter2hunter2"),  # H47
        ("db_password hunter2hunter2", "hunter2hunter2"),  # H47
        ("bot 1234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX here", "HdqTcvCH1vGWJxfSeof"),
        ("bot 12345678901:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX here", "HdqTcvCH1vGWJxfSeof"),
        ("the password letmein2024 for staging", "letmein2024"),
    ],
)
def test_quoted_and_prose_values_are_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [  # H47: a value ending in an escaped backslash ends at its own quote
        (
            'password="ab\\\\c\\\\" api_key="Zq9Xv7Lm2Pk4Rt6Y"',
            'password="[REDACTED]" api_key="[REDACTED]"',
        ),
        (
            'password = "Qz8Xk2\\\\" and token="zzzzPlainSecretValue1"',
            'password = "[REDACTED]" and token="[REDACTED]"',
        ),
        (
            json.dumps({"password": "x\\", "api_key": "Zq9Xv7Lm2Pk4Rt6Y"}),
            '{"password": "[REDACTED]", "api_key": "[REDACTED]"}',
        ),
        ('{"password": "Qz8\\"Xk2Lm9Ab"}', '{"password": "[REDACTED]"}'),
    ],
)
def test_a_quoted_value_ends_at_its_own_quote_whatever_it_escapes(
    text: str, scrubbed: str
) -> None:
    assert scrub_text(text) == scrubbed


@pytest.mark.parametrize(
    "text",
    ["token_limit is 128000", "token_limit: 100/200", "token: ticket_id"],
)
def test_numbers_and_names_after_a_token_key_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # a passphrase line's unquoted value of several words goes whole, to the line's end
        ("passphrase: orange banana cherry grape", "passphrase: [REDACTED]"),
        (
            "gpg:\n  passphrase: orange banana cherry grape\n  key: main",
            "gpg:\n  passphrase: [REDACTED]\n  key: main",
        ),
        ("- passphrase = correct horse battery staple", "- passphrase = [REDACTED]"),
        ("export GPG_PASSPHRASE=orange banana\nnext", "export GPG_PASSPHRASE=[REDACTED]\nnext"),
        (  # the same line inside a tool call's JSON arguments
            json.dumps({"content": "gpg:\n  passphrase: orange banana cherry\n  host: x"}),
            json.dumps({"content": "gpg:\n  passphrase: [REDACTED]\n  host: x"}),
        ),
        (
            json.dumps({"content": 'passphrase: it\'s "orange" banana'}),
            json.dumps({"content": "passphrase: [REDACTED]"}),
        ),
        # a password's value of several words goes whole too, unless prose is made of them
        # (H188: "password: must be rotated every 90 days" stays)
        ("password: orange9 banana cherry", "password: [REDACTED]"),
    ],
)
def test_a_passphrase_lines_value_of_several_words_is_scrubbed_whole(
    text: str, expected: str
) -> None:
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [  # found by a helper: design text and code the first version of those rules mangled
        "- password: must be rotated every 90 days",
        "password_policy: min length twelve, one digit",
        "password_required: true for all users",
        "Password: see the vault entry for prod",
        "password: <your password here>",
        "password: {{ vault_db_password }}",
        "    password: str = Field(..., min_length=12)",
        "api_key: str = Field(description='the key')",
        "password == confirm_password",
        "pwd = os.getcwd()",
        "pwd=$(pwd)",
        "docker run -u 1000:1000 image",
        "docker exec -u root:root app",
        "secret_santa: pick a name from the hat",
    ],
)
def test_design_text_and_code_about_credentials_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # found by a helper: the AWS console's own form, and the key word's other forms
        ("AWS Secret Access Key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "bPxRfiCY"),
        ("aws secret key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "bPxRfiCY"),
        ("aws secret key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "bPxRfiCY"),
        ("secret key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "bPxRfiCY"),
        ('aws secret key "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"', "bPxRfiCY"),
        ("secret access key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY.", "bPxRfiCY"),
        ("curl -ualice:Pw12345678 https://x", "Pw12345678"),
        ("MYSQL_PWD=s3cr3tpw mysql", "s3cr3tpw"),
    ],
)
def test_aws_secret_keys_in_every_written_form_are_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "The password: it is required twice.",  # not at a line's start: prose
        "token: some words here",  # a token key's value must look like a token
        "keyboard: a b c",
    ],
)
def test_a_line_of_words_after_other_keys_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # found by a helper's attack on the HTTP path
        ("pwd=userpwdlower66", "userpwdlower66"),
        ("AccountName=x;AccountKey=FILEAZUREaccountKEY0123456789abcdef==;", "FILEAZURE"),
        ("Endpoint=sb://x/;SharedAccessKey=abcDEF123456ghiJKL=", "abcDEF123456"),
        ("curl -u root:UserCurlPw77 https://x", "UserCurlPw77"),
        ("curl --user=root:UserCurlPw77 https://x", "UserCurlPw77"),
        ("secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYUSERMSG", "wJalrXUtnFEMI"),
        ("aws secret key wJalrXUtnFEMI/K7MDENG/bPxRfiCYTTYKEY01", "wJalrXUtnFEMI"),
        (json.dumps({"content": "pwd=toolpwd998 AccountKey=TOOLAZUREabc123=="}), "toolpwd998"),
    ],
)
def test_lower_case_pwd_azure_keys_curl_users_and_bare_key_values_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the secret sauce is patience",
        "token limit 128000",
        "key components/ParserModule2024Helper.py",
        "cd $(pwd) && ls -u",
        "pwd prints the working directory",
    ],
)
def test_words_near_those_keys_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # left open by session 12's first notes, found by helpers
        ("wget --password s3cretPw http://x", "s3cretPw"),
        ("mysqldump --password=s3cretPw db", "s3cretPw"),
        ("X-API-Key abcDEF1234567890ghij", "abcDEF1234567890ghij"),
        ("https://a.blob.core.windows.net/c?sv=2020&sig=AbC%2Fdef123456789012345%3D", "AbC%2F"),
    ],
)
def test_password_flags_bare_api_key_headers_and_sas_signatures_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize("text", ["--passwordless login", "use --pass-through", "sig=short"])
def test_words_like_those_flags_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H96: a gateway's error echoed the Basic header made of OPENAI_BASE_URL's user:password
        ("you sent Basic ZGVwbG95OkJhNWVVcmxQdzByZDk5", "ZGVwbG95OkJhNWVVcmxQdzByZDk5"),
        ("curl with basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
    ],
)
def test_basic_credentials_outside_a_header_are_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text", ["use Basic authentication", "a basic understanding", "the basic AbCdEfGh idea"]
)
def test_the_word_basic_before_what_is_no_credential_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text



@pytest.mark.parametrize(
    ("text", "secret"),
    [  # left open by session 12's notes: a short -p flag's password
        ("mysql -u root -pS3cretPw mydb", "S3cretPw"),
        ("mysqldump -h db -uadmin -pHunter2x app > dump.sql", "Hunter2x"),
        ("mariadb -pverysecret", "verysecret"),
        ("sshpass -p 'Tr0ub4dor' ssh admin@host", "Tr0ub4dor"),
        ("docker login -u me -p dckrpass123 registry.example.com", "dckrpass123"),
    ],
)
def test_a_short_password_flag_of_the_commands_that_take_one_is_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    ["mysql -p mydb", "mkdir -p build/out", "ssh -p 2222 admin@host", "mysql -P 3306 -h db"],
)
def test_a_short_p_flag_that_holds_no_password_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # a helper's attack (H22): credentials the patterns did not know
        ("https://hooks.slack.com/services/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",
         "xYz123AbC456dEf789GhI012"),
        ("https://discord.com/api/webhooks/1234567890/" + "aB3_-" * 12, "aB3_-aB3_-"),
        ("endpoint secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLSDq", "MfKQ9r8GKYqrTwjUPD8I"),
        ("SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq", "ABCDEFGHIJKLM"),
        ("discord bot MTA4OTk2NzQ1NjE4NDk3NTM2MA.GhYk3Q.abcdefghijklmnopqrstuvwxyz0123456789AB",
         "GhYk3Q.abcdefghij"),
        ("Cookie: session=eyAbc123XyzQwe789; theme=dark", "eyAbc123XyzQwe789"),
        ("Set-Cookie: sid=Qm9uam91cg42; Path=/; HttpOnly", "Qm9uam91cg42"),
        ("Twilio auth token 3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c", "3f2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c"),
        ("heroku token 01234567-89ab-cdef-0123-456789abcdef", "456789abcdef"),
        ("pw: Xk9#mPq2$vL", "Xk9#mPq2$vL"),
        ("pass=Adm1nPw!x", "Adm1nPw!x"),
        ("secret: Adm1n", "Adm1n"),
        ("postgresql://user:p@ss:w0rd@db:5432/app", "w0rd"),
        ("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBFabc\n=xyz\n"
         "-----END PGP PRIVATE KEY BLOCK-----", "lQOYBFabc"),
        ("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bQ\nabcXYZ", "AKCAQEA7bQ"),
    ],
)
def test_webhooks_cookies_short_and_cut_off_credentials_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [  # a helper's attack (H22): where a secret is, or what it is like, is not a secret
        "api_key = os.environ['OPENAI_API_KEY']",
        "api_key_env: OPENAI_API_KEY",
        'password: "${DB_PASSWORD}"',
        "DB_PASSWORD=${DB_PASSWORD}",
        "api_key = settings.openai_api_key",
        "secret_name: prod/db/credentials",
        "the secret_name is prod/db/credentials",
        "password_length: 16chars",
        "api_key: none",
        "pass: enabled",
        "bypass: enabled_for_admins",
        "Cookie: a small file the browser keeps",
    ],
)
def test_references_to_credentials_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_a_mysql_pwd_variable_is_a_secret() -> None:
    from session.environment import secrets_from_environment

    environ = {"MYSQL_PWD": "Zq8pLm2xRt", "DB_PWD_FILE": "/run/secrets/db", "PWD": "/home/x"}
    assert secrets_from_environment(environ) == ("Zq8pLm2xRt",)


def test_a_known_secret_is_replaced_where_it_stands_whole_not_inside_names() -> None:
    """A helper's attack: POSTGRES_PASSWORD=postgres turned postgres_schema.sql into
    [REDACTED]_schema.sql (and the manifest reported the file deleted at every resume)."""
    secrets = ("postgres",)
    assert scrub_text("see postgres_schema.sql and mypostgres", secrets) == (
        "see postgres_schema.sql and mypostgres"
    )
    assert scrub_text("it is postgres, really", secrets) == "it is [REDACTED], really"
    assert scrub_text('{"a": "x\\npostgres"}', secrets) == '{"a": "x\\n[REDACTED]"}'


def test_a_manifest_path_with_a_secret_in_it_is_left_out_not_rewritten() -> None:
    from session.redaction import scrub_keys

    manifest = {"postgres/schema.sql": "a" * 64, "postgres_schema.sql": "b" * 64}
    assert scrub_keys(manifest, ("postgres",)) == {"postgres_schema.sql": "b" * 64}


def test_a_generated_secret_is_replaced_even_glued_to_text() -> None:
    """A helper's second attack: a known value touching a letter, digit or _ was left in
    clear (Telegram's bot<TOKEN> URLs); only a plain word is replaced where whole."""
    telegram = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    secrets = (telegram, "Tr0ub4dor99", "postgres")
    text = f"https://api.telegram.org/bot{telegram}/getMe Tr0ub4dor99_old postgres_schema.sql"
    assert scrub_text(text, secrets) == (
        "https://api.telegram.org/bot[REDACTED]/getMe [REDACTED]_old postgres_schema.sql"
    )


@pytest.mark.parametrize(
    "text",
    [  # a helper's second attack: placeholders and design statements, not credentials
        "secret: ${{ secrets.DEPLOY_KEY }}",
        "secret: TBD",
        "secret: N/A",
        "password: TBD.",
        "password: ...",
        "password: ***",
        "password: <redacted>",
        "password_hash: bcrypt",
        "pwd: /tmp/h23",
    ],
)
def test_placeholders_and_design_statements_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_a_password_hash_and_a_numeric_password_are_still_scrubbed() -> None:
    assert scrub_text("password_hash: $2b$12$abcdefghijklmnopqrstuv") == (
        "password_hash: [REDACTED]"
    )
    assert scrub_text("password: 1234") == "password: [REDACTED]"


def test_a_variable_naming_a_file_or_holding_a_path_is_no_secret() -> None:
    from session.environment import secrets_from_environment

    environ = {
        "PGPASSFILE": "/home/u/.pgpass",
        "GOOGLE_APPLICATION_CREDENTIALS": "/home/u/creds.json",
        "DB_PASSWORD": "Tr0ub4dor99",
    }
    assert secrets_from_environment(environ) == ("Tr0ub4dor99",)


def test_a_value_a_pattern_finds_once_is_replaced_wherever_it_stands(tmp_path: Path) -> None:
    """A helper's attack: a value was scrubbed where a pattern saw it (``my password is
    X``) and kept in clear where none did (the turn before, a decision, the summary)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from session.lifecycle import SessionLifecycle, WriteSession

    value = "Zq9Xv7Lm2Pk4Qw"

    def said(text: str) -> list[ModelRequest | ModelResponse]:
        return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart("ok")])]

    lc = SessionLifecycle().start_fresh(NOW).lifecycle
    lc = lc.begin_turn(0).complete_turn(
        said(f"keep {value} for the vault"), now=NOW, manifest={}, agent_spec_path=None
    ).lifecycle
    transition = lc.begin_turn(0).complete_turn(
        said(f"my password is {value}"),
        now=NOW,
        manifest={},
        agent_spec_path=None,
        decisions=[f"the vault takes {value}"],
    )
    (write,) = [e for e in transition.effects if isinstance(e, WriteSession)]
    secrets = transition.lifecycle.policy.known_secrets
    assert value in secrets
    SessionManager(tmp_path).save(write.state, write.encoded, secrets)
    saved = (tmp_path / f"{write.state.session_id}.json").read_text()
    assert value not in saved
    assert saved.count(REDACTED) >= 3


def test_a_word_a_pattern_takes_for_a_password_is_not_erased_from_the_session(
    tmp_path: Path,
) -> None:
    """A helper's attack: "Password: required, min length 12." made "required" a known
    secret, and it was replaced in every earlier message, decision and the summary."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from session.lifecycle import SessionLifecycle

    def said(text: str) -> list[ModelRequest | ModelResponse]:
        return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart("ok")])]

    lc = SessionLifecycle().start_fresh(NOW).lifecycle
    for text in ("The email field is required.", "Password: required, min length 12."):
        lc = lc.begin_turn(0).complete_turn(
            said(text), now=NOW, manifest={}, agent_spec_path=None
        ).lifecycle
    lc = lc.begin_turn(0).complete_turn(
        said("private key: ed25519. We sign the tokens with ed25519 keys."),
        now=NOW,
        manifest={},
        agent_spec_path=None,
    ).lifecycle
    assert lc.policy.known_secrets == ()
    assert b"The email field is required." in b"".join(lc.history_encoded.chunks)
    assert b"with ed25519 keys" in b"".join(lc.history_encoded.chunks)


@pytest.mark.parametrize(
    "text",
    [  # found by a helper (H83): the code of the agents users design, mangled in transcripts
        "def connect(host: str, user: str, password: str) -> Connection:",
        "    return psycopg.connect(host=host, user=user, password=password)",
        "    client = OpenAI(api_key=api_key, base_url=settings.base_url)",
        "    api_key = api_key or os.environ['OPENAI_API_KEY']",
        "    openai_api_key: SecretStr",
        "    db_password: SecretStr | None = None",
        "api_key: Annotated[str, Depends(get_api_key)]",
        "def rotate(secret_id: str, new_secret: bytes) -> None:",
        "key = serialization.load_pem_private_key(data, password=None)",
        "    token = issue_token(username)",
        "signing_key = load_key('signing.pem')",
        "SECRET_KEY = get_random_secret_key()",
    ],
)
def test_code_that_passes_types_or_computes_a_credential_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    "text",
    [  # found by a helper (H84): a call whose first argument is a keyword with a string
        'api_key = get_secret(name="openai")',
        'client_secret=load_secret(path="/etc/agent/client.json")',
        '    db_password = Secret(name="db", key="password")',
    ],
)
def test_code_that_computes_a_credential_by_keyword_arguments_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connect(user='app', password=Hunter22)", "Hunter22"),
        ("(password: Adm1n)", "Adm1n"),
        ("api_key=sk_fake_Zx9Kq2Lm7Np4Rt6V)", "Zx9Kq2Lm7Np4Rt6V"),
        ("secret: Str0ngPassw0rd)", "Str0ngPassw0rd"),
    ],
)
def test_a_value_before_a_closing_bracket_is_still_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # found by a helper (H83): token shapes and a bare key's value that were kept
        ("xapp-1-A0123ABCD-1234567890123-0123456789abcdef0123456789abcdef", "0123456789abcdef"),
        ("SLACK refresh xoxe-1-My0xLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MA", "My0xLTEyMzQ1Njc4"),
        ("groq gsk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH", "abcdefghijklmnop"),
        ("replicate r8_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOp"),
        ("grok xai-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEfGhIjKlMnOp"),
        ("dop_v1_" + "0123456789abcdef" * 4, "0123456789abcdef"),
        ("oauth ya29.a0AfH6SMBxyzAbC123defGhi456", "a0AfH6SMBxyzAbC1"),
        ("store creds in vault, key is Vv8Bb7Nn6Mm5Kk4Jj3", "Vv8Bb7Nn6Mm5Kk4Jj3"),
        ("key: Vv8Bb7Nn6Mm5Kk4Jj3", "Vv8Bb7Nn6Mm5Kk4Jj3"),
    ],
)
def test_more_provider_tokens_and_a_bare_keys_generated_value_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "aws keys: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        (
            "id AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        (
            "Ocp-Apim-Subscription-Key: 0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
        ),
    ],
)
def test_an_aws_secret_said_with_its_key_id_and_a_subscription_key_are_scrubbed(
    text: str, secret: str
) -> None:
    """H83: the secret key beside its ``AKIA`` id, with no label of its own, and Azure's
    hex ``Ocp-Apim-Subscription-Key`` (hex values are kept as hashes) were kept."""
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the key is to keep the prompt short",
        "primary key: customer_id",
        "sort key is created_at, then ticket_id",
        "cache key: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "the xai-grok model and the gsk_ prefix",
    ],
)
def test_words_after_a_bare_key_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "rest"),
    [  # H96: the rest of a key cut over two lines was kept
        ("OPENAI_API_KEY=sk-proj-AAAAbbbbCCCC1111\nDDDDeeee2222FFFF", "DDDDeeee2222FFFF"),
        ("my key:\nsk-proj-AAAAbbbbCCCC1111\n  2222DDDDeeeeFFFF\nthanks", "2222DDDDeeeeFFFF"),
        ('{"content": "KEY=sk-proj-AAAAbbbbCCCC1111\\nDDDDeeee2222FFFF\\n"}', "DDDDeeee2222FFFF"),
    ],
)
def test_the_rest_of_a_key_cut_over_two_lines_is_scrubbed(text: str, rest: str) -> None:
    assert rest not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "password=Hx8Kq2Vn5Wz7\nversion two",
        "password: Hx8Kq2Vn5Wz7\n\nnext paragraph",
        "password: Hx8Kq2Vn5Wz7\nretries",
    ],
)
def test_a_line_of_words_after_a_secret_is_left_alone(text: str) -> None:
    assert scrub_text(text).split("\n", 1)[1] == text.split("\n", 1)[1]


def test_the_rest_of_a_key_cut_between_two_messages_is_found_in_the_second() -> None:
    from session.redaction import continued_secret

    first = "here is the first half of my key: sk-proj-SpLiTfIrStHaLf"
    assert continued_secret(first, "and the second half: 0123SeCoNdHaLfXyZ9876") == (
        "0123SeCoNdHaLfXyZ9876"
    )
    assert continued_secret(first, "ok thanks, also ParserV2Config") is None
    assert continued_secret("hello there", "0123SeCoNdHaLfXyZ9876") is None
    resumed = "here is my key: [REDACTED]"  # as a resumed session's history holds it
    assert continued_secret(resumed, "rename it ParserV3Config123") is None


@pytest.mark.parametrize("first", ["my key is sk-proj-Ab3d", "token ghp_Ab3dE5.", "hf_Zq9x"])
def test_the_rest_of_a_key_whose_head_was_too_short_for_its_pattern_is_found(first: str) -> None:
    """H204: a head under its pattern's length ends the message; the next holds the rest."""
    from session.redaction import continued_secret, cut_token_head

    assert continued_secret(first, "E5gH7jK9mN1pQ3rStU") == "E5gH7jK9mN1pQ3rStU"
    assert cut_token_head(first) == first.rstrip(".").split()[-1]
    assert cut_token_head("we use sk-learn.") is None


def test_a_message_with_no_rest_of_a_key_does_not_scrub_the_one_before_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every turn looks for the rest of a key cut after the last message; scrubbing that
    message again (a millisecond per 2 KB of prose, a pasted document's every turn) is
    needed only when this one holds a value that could be one."""
    import session.redaction
    from session.redaction import continued_secret

    scrubbed: list[str] = []
    scrub = session.redaction.scrub_text

    def counted(text: str, known_secrets: Iterable[str] = ()) -> str:
        scrubbed.append(text)
        return scrub(text, known_secrets)

    monkeypatch.setattr(session.redaction, "scrub_text", counted)
    long_prompt = "We route every ticket by intent and priority. " * 200
    assert continued_secret(long_prompt, "thanks, now the escalation rules") is None
    assert scrubbed == []


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H96: a credential wrapped in base64 was kept
        ('{"auths": {"ghcr.io": {"auth": "dXNlcjpQYXNzdzByZDEyMw=="}}}', "dXNlcjpQYXNz"),
        ("echo c2stcHJvai1BYkNkRWZHaElqS2xNbk9wUXJTdFV2V3g= | base64 -d", "c2stcHJvai1B"),
        ("data: cGFzc3dvcmQ9QjY0UGFzc3dvcmQxMjM0NQ==", "cGFzc3dvcmQ9"),
        ("client secret GOCSPX-AbCdEfGhIjKlMnOpQrStUvWx", "GOCSPX-AbCd"),
    ],
)
def test_a_credential_wrapped_in_base64_and_google_client_secrets_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "sha256 47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU= of the file",
        "greeting aGVsbG8gd29ybGQgaG93IGFyZSB5b3U= decoded",
        "averyLongIdentifierName in path/to/some/deep/directory/file.txt",
    ],
)
def test_base64_that_wraps_no_credential_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize("text", ["Basic Authorization\u212a", "basic dXNlcjpw\u212a=="])
def test_a_non_ascii_letter_where_base64_is_looked_for_is_no_error(text: str) -> None:
    """Ignoring case, the Basic pattern's letters match the Kelvin sign (U+212A), which
    base64 refuses with a ValueError: the scrub raised it (a hypothesis test found it)."""
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H96: a value in an XML element or after PHP's and Ruby's => was kept
        ("<password>Xm1Passw0rd</password>", "Xm1Passw0rd"),
        ("<apiKey>AbCd3fGhIj</apiKey>", "AbCd3fGhIj"),
        ('"password" => "PhpPassw0rd9"', "PhpPassw0rd9"),
        (":password => RbPassw0rd1,", "RbPassw0rd1"),
    ],
)
def test_xml_elements_and_arrow_assignments_are_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text", ["<password>${DB_PASS}</password>", "<token>none</token>", "a => b", "x <password> y"]
)
def test_xml_references_and_arrows_without_a_secret_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [  # H102: a .pgpass line pasted or read by a tool was saved as it was
        ("db.example.com:5432:app:admin:S3cretPassw0rd", "db.example.com:5432:app:admin:"),
        ("localhost:5432:*:postgres:hunter2hunter2", "localhost:5432:*:postgres:"),
        ("*:*:*:replicator:plainword", "*:*:*:replicator:"),
        ("cat .pgpass\n127.0.0.1:5432:db:me:Zq9Xv7Lm2Pk4!", "cat .pgpass\n127.0.0.1:5432:db:me:"),
        ("db:5432:app:u:p\\:ss\\\\word", "db:5432:app:u:"),
    ],
)
def test_the_password_of_a_pgpass_line_is_scrubbed(text: str, kept: str) -> None:
    assert scrub_text(text) == kept + REDACTED


@pytest.mark.parametrize(
    "text",
    [
        "00:11:22:33:44:55",
        "app.py:10:5: error: name not defined",
        "2001:db8:85a3:0:0:8a2e:370:7334",
        "the meeting is at 10:30:45 today",
        "db:5432:app:u:${PGPASSWORD}",
    ],
)
def test_text_with_colons_that_is_no_pgpass_line_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


KEY_MESSAGE = "here is the first half of my key: sk-proj-SpLiTfIrStHaLf"


@pytest.mark.parametrize(
    "text",
    [  # H102: a name after a message that ended with a key was taken for its rest
        "ok, now call the release Build2024Release7x and tag it",
        "rename the job Sprint2024Q3Retro",
        "the handler getUserById2024 is slow",
        "see ticket-12345-fix on the board",
        "deploy HTTPServer2024v2 today",
    ],
)
def test_a_name_of_words_and_numbers_is_no_rest_of_a_key_cut_before(text: str) -> None:
    from session.redaction import continued_secret

    assert continued_secret(KEY_MESSAGE, text) is None


def test_a_name_of_words_on_the_line_after_a_secret_is_left_alone() -> None:
    text = "password: Hx8Kq2Vn5Wz7\nBuild2024Release7x\n"
    assert scrub_text(text) == f"password: {REDACTED}\nBuild2024Release7x\n"


@pytest.mark.parametrize("text", ["Xy9Zq8", "  Xy9Zq8Lm.\n", "Kq2Vn5Wz7"])
def test_a_short_rest_of_a_key_sent_alone_is_found(text: str) -> None:
    """A rest under 12 characters (or with fewer than 3 digits) is taken only when the
    message is that value alone and it mixes upper and lower case and digits."""
    from session.redaction import continued_secret

    assert continued_secret(KEY_MESSAGE, text) == text.strip(" \n.")


@pytest.mark.parametrize("text", ["thanks", "abc123", "PR1234", "v2Config", "see Xy9Zq8"])
def test_a_short_word_or_id_after_a_key_is_no_rest_of_it(text: str) -> None:
    from session.redaction import continued_secret

    assert continued_secret(KEY_MESSAGE, text) is None


@pytest.mark.parametrize("text", ["ghp_AbC123xyZ", "here: ghp_AbCdEf123456789", "gho_Zq9Xv7Lm"])
def test_a_github_token_cut_short_is_scrubbed(text: str) -> None:
    assert "ghp_A" not in scrub_text(text) and "gho_Z" not in scrub_text(text)
    assert REDACTED in scrub_text(text)


@pytest.mark.parametrize("text", ["the ghp_prefix var", "gho_token2024 name", "ghs_abcdefghij"])
def test_names_that_start_like_a_github_token_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


JWT = (
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)


@pytest.mark.parametrize("text", [JWT, f"token {JWT}", f"the jwt is {JWT}.", f'{{"id": "{JWT}"}}'])
def test_a_jwt_is_scrubbed_whole_its_payload_and_signature_too(text: str) -> None:
    """Its header decodes to ``{"alg":"HS256"}``, which the base64 pass took for
    ``user:password``: the header alone was replaced, and the payload and the signature
    were kept in clear (H102)."""
    scrubbed = scrub_text(text)
    assert "eyJzdWIiOiIxMjM0In0" not in scrubbed and "dozjgNryP4J3" not in scrubbed


@pytest.mark.parametrize(
    "text",
    [  # H102: a base64 value right after "=" was never decoded
        "_auth=dXNlcjpQYXNzdzByZDEyMw==",  # an .npmrc's user:password
        "REGISTRY_AUTH=dXNlcjpQYXNzdzByZDEyMw==",
        "//npm.example.com/:_auth=dXNlcjpQYXNzdzByZDEyMw==",
    ],
)
def test_a_credential_wrapped_in_base64_after_an_equals_sign_is_scrubbed(text: str) -> None:
    assert "dXNlcjpQYXNz" not in scrub_text(text)


ATLASSIAN_TOKEN = "ATATT3xFfGF0" + "Zq8Xv7Lm2Pk4Tr9_Ab3Cd-Ef" * 7 + "=079C5884"
AGE_IDENTITY = (
    "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" + "QPZRY9X8GF2TVDW0S3"
    "JN54KHCE"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H104: provider token shapes no pattern knew
        ("runner glrt-Zq8Xv7Lm2Pk4Tr9Ab3Cd", "Zq8Xv7Lm2Pk4Tr9Ab3Cd"),
        ("glrt-t1_Zq8Xv7Lm2Pk4Tr9Ab3CdEf5Gh.01.1a2b3c4d5 in config.toml", "1a2b3c4d5"),
        ("VAULT_ADDR=x vault login hvs.Zq8Xv7Lm2Pk4Tr9Ab3CdEf5G", "Zq8Xv7Lm2Pk4Tr9Ab3CdEf5G"),
        ("hvs.CAESIJZq8Xv7Lm2Pk4Tr9Ab3CdEf5Gh6Ij7Kl8Mn9_GhoKHGh2cy5abcdefghij", "CAESIJZq8Xv7"),
        ("shopify shpat_0123456789abcdef0123456789abcdef", "0123456789abcdef0123"),
        ("lin_api_Zq8Xv7Lm2Pk4Tr9Ab3CdEf5Gh6Ij7Kl8Mn9Op0Qr", "Zq8Xv7Lm2Pk4Tr9Ab3"),
        (f"jira {ATLASSIAN_TOKEN}", "Zq8Xv7Lm2Pk4Tr9_Ab3Cd"),
        (f"# created: 2026\n{AGE_IDENTITY}\n", "QPZRY9X8GF2TVDW0S3JN"),
    ],
)
def test_gitlab_runner_vault_shopify_linear_atlassian_and_age_keys_are_scrubbed(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "see the glrt-runner-registration-token-docs page",
        "hvs.reshape_to_image_size_and_depth(x)",
        "client = vault.hvs.someVeryLongCamelCaseAttributeName",  # H111: scrubbed
        "the shpat_ prefix and shpat_0123 are Shopify's",
        "lin_api_client_configuration_for_the_app",
        "a token that starts with ATATT3 is Atlassian's",
        "lines that begin with AGE-SECRET-KEY-1 are identities",
    ],
)
def test_names_that_start_like_those_tokens_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


SENTRY_KEY = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H104: a token as a URL's user, with no password after it, was kept
        ("git clone https://Zq8Xv7Lm2Pk4Tr9@api.example.com/", "Zq8Xv7Lm2Pk4Tr9"),
        (f"SENTRY_DSN=https://{SENTRY_KEY}@o123.ingest.sentry.io/456", SENTRY_KEY),
        (f'{{"dsn": "https://{SENTRY_KEY}@sentry.example.com/7"}}', SENTRY_KEY),
    ],
)
def test_a_token_as_the_user_of_a_url_is_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)
    assert "@" in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "clone https://user@host/repo.git",
        "push to ssh://git@github.com/org/repo.git",
        "https://deploy2024@ci.example.com/",
        "ftp://Build2024Release7x@files.example.com/",
    ],
)
def test_an_ordinary_user_name_in_a_url_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H104: a *_AUTH variable was not taken for one that holds a credential
        ("NPM_AUTH=Zq8Xv7Lm2Pk4Tr9", "Zq8Xv7Lm2Pk4Tr9"),
        ("export REDISCLI_AUTH='Hx8Kq2Vn5Wz7'", "Hx8Kq2Vn5Wz7"),
        ("REGISTRY_AUTH: deploy:hunter2hunter2", "hunter2hunter2"),
        ("BASIC_AUTH=user:plainword", "plainword"),  # H111: a plain password was kept
    ],
)
def test_the_credential_of_an_auth_variable_is_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "REQUIRE_AUTH=enabled",
        "DB_AUTH=scram-sha-256",
        "HTTP_AUTH=digest",
        "SKIP_AUTH=always",
        "OIDC_AUTH=https://login.example.com/oauth2",  # where it is, not what
    ],
)
def test_the_setting_of_an_auth_variable_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_an_auth_variable_that_holds_a_credential_is_a_secret_and_a_setting_is_not() -> None:
    from session.environment import secrets_from_environment

    environ = {
        "NPM_AUTH": "Zq8Xv7Lm2Pk4Tr9",
        "BASIC_AUTH": "deploy:hunterword",
        "DB_AUTH": "scram-sha-256",
        "REQUIRE_AUTH": "required",
    }
    assert set(secrets_from_environment(environ)) == {"Zq8Xv7Lm2Pk4Tr9", "deploy:hunterword"}


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H104: a plain word after an explicit password keyword was kept
        ("machine api.example.com login deploy password hunterword", "hunterword"),
        ("machine h\n  login u\n  account a\n  password hunterword\n", "hunterword"),
        ('{"content": "machine h\\nlogin u\\npassword hunterword\\n"}', "hunterword"),
        ("default login anonymous password hunterword", "hunterword"),
        # H111: the password before the login was kept
        ("machine h password hunterword login me", "hunterword"),
        ("machine h\n  password hunterword\n  login me\n", "hunterword"),
        ("default password hunterword account a", "hunterword"),
        ("Server=db.example.com;Uid=sa;Pwd=plainwordy;", "plainwordy"),
        ("Driver={ODBC};Server=db; PWD={plain wordy};Database=app", "plain wordy"),
        ("Host=db;Username=app;Password=abc;", "abc;"),
        ("redis-cli -h cache -p 6379 -a plainwordy ping", "plainwordy"),
        ("redis-cli -a 'hunterword' --no-auth-warning", "hunterword"),
    ],
)
def test_a_netrc_connection_string_or_redis_cli_password_is_scrubbed_whatever_it_is(
    text: str, secret: str
) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "the machine whose password expired was rebooted",
        "the default password is required",
        "x = 1; pwd = os.getcwd();",
        "Server=db;Uid=sa;Pwd=$DB_PASSWORD;",
        "cd /srv; pwd=/srv;",
        "redis-cli -h cache ping and redis-cli --askpass",
        "the agent's password reset flow; password= is an empty value",
    ],
)
def test_prose_and_references_near_those_keywords_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [  # H104: a YAML block scalar's value, on the line after its key, was kept
        ("password: |\n  Zq8Xv7Lm2Pk4Tr9\n", "Zq8Xv7Lm2Pk4Tr9"),
        ("db:\n  password: >-\n    hunterword\n  user: app\n", "hunterword"),
        ("- api_key: |\n\n    abcdefghijkl\n", "abcdefghijkl"),
        ('{"content": "client_secret: |\\n  hunterword\\n"}', "hunterword"),
        ("github_token: |\r\n  tk123abcdef\r\n", "tk123abcdef"),
    ],
)
def test_the_value_of_a_yaml_block_under_a_secret_key_is_scrubbed(text: str, secret: str) -> None:
    assert secret not in scrub_text(text)


@pytest.mark.parametrize(
    ("text", "scrubbed"),
    [  # H111: the lines after the first were kept unless they looked like a key's rest
        (
            "password: |\n  correct horse\n  battery staple\nhost: db\n",
            "password: |\n  [REDACTED]\n  [REDACTED]\nhost: db\n",
        ),
        (
            "db:\n  password: >-\n    first99\n      second\n\n    third\n  user: app\n",
            "db:\n  password: >-\n    [REDACTED]\n      [REDACTED]\n\n    [REDACTED]\n"
            "  user: app\n",
        ),
        (
            '{"content": "api_key: |\\n  hunterword\\n  staplehorse\\nnext: 1"}',
            '{"content": "api_key: |\\n  [REDACTED]\\n  [REDACTED]\\nnext: 1"}',
        ),
    ],
)
def test_every_line_of_a_yaml_block_under_a_secret_key_is_scrubbed(
    text: str, scrubbed: str
) -> None:
    assert scrub_text(text) == scrubbed


@pytest.mark.parametrize(
    "text",
    [
        "password: |\n  ${DB_PASSWORD}\n",
        "token: |\n  expired\n",
        "password: |\nnext_key: value\n",
        "description: |\n  the password rules: twelve characters\n",
        "secret_name: |\n  prod-db-credentials\n",
    ],
)
def test_a_yaml_block_that_holds_no_secret_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_the_paths_of_a_manifest_of_20_000_files_are_remembered_clean() -> None:
    """At 8,192 texts the memo was emptied part way through such a manifest, so every save
    (every turn) scrubbed every path again: 200 ms of the StorageActor's thread."""
    secrets = ("a-secret-only-this-test-knows",)
    manifest = {f"templates/t{n:05}.txt": "0" * 64 for n in range(20_000)}
    assert scrub_keys(manifest, secrets) == manifest
    assert set(manifest) <= redaction._clean_memo[secrets]


def test_the_memos_of_clean_texts_stay_within_their_budget_in_bytes() -> None:
    """H139: counted by characters alone, 15 memos of 131,072 short paths held 212 MB. A
    short text's place costs more than its characters: its str object and its set slot."""
    held_text = f"templates/d{0}/file{0}.md"
    assert sys.getsizeof(held_text) + 16 <= len(held_text) + redaction.MEMO_TEXT_COST
    for n in range(240_000):
        scrub_text(f"templates/d{n % 97}/file{n}.md", (f"secret-of-session-{n % 6}",))
    held = [text for memo in redaction._clean_memo.values() for text in memo]
    assert sum(sys.getsizeof(text) + 16 for text in held) <= redaction.CLEAN_MEMO_BUDGET


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # H188: a password said as words lost its first word only, or nothing in prose
        (
            "my password is correct horse battery staple",
            "my password is [REDACTED]",
        ),
        ("password: correct horse battery staple", "password: [REDACTED]"),
        ("password: orange9 banana cherry", "password: [REDACTED]"),
        (
            "the passphrase for the backup is purple monkey dishwasher, keep it safe",
            "the passphrase for the backup is [REDACTED], keep it safe",
        ),
        (
            "My password is Correct Horse Battery Staple.\nThanks",
            "My password is [REDACTED].\nThanks",
        ),
        ('passphrase: "two words"', 'passphrase: "[REDACTED]"'),
        ("password: xa\t\tab b it is", "password: [REDACTED] it is"),  # no word cut
        (
            json.dumps({"content": "my password is correct horse battery staple"}),
            json.dumps({"content": "my password is [REDACTED]"}),
        ),
    ],
)
def test_a_password_of_several_words_is_scrubbed_whole(text: str, expected: str) -> None:
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [  # H188: prose about a password after "is" or ":" is no passphrase
        "my password is not working anymore",
        "the password is case sensitive",
        "the password is hashed with bcrypt before storage",
        "the password is stored in the vault under prod",
        "my password is too short for the new policy",
        "the password is case sensitive and expires monthly",
        "password: min length twelve",
        "the password is randomly generated each night",
        "The password is then sent over TLS",
        "my password is being reset by IT",
        "the password: a long random string",
        "the password is user supplied text",
        "the password is random base64 output",
        "the password is vault managed everywhere",
        "the password is at least twelve characters",
        "the password is different per environment",
    ],
)
def test_prose_about_a_password_after_its_link_is_left_alone(text: str) -> None:
    assert scrub_text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # H196: a passphrase set with ":" or "=" went untouched with an -ed/-ing/-ly word
        ("password: tired ocean lamp", "password: [REDACTED]"),
        ("password: tired ocean lamp.\nnext", "password: [REDACTED].\nnext"),
        ("db_password = sleeping purple lonely", "db_password = [REDACTED]"),
        ("password: falling maple quietly river!", "password: [REDACTED]!"),
    ],
)
def test_a_passphrase_set_with_a_colon_is_scrubbed_whatever_its_words_end_with(
    text: str, expected: str
) -> None:
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # H204: an env-style line (no space after "=" or ":") and "pw"/"pwd" kept the words
        ("DB_PASSWORD=tired ocean lamp", "DB_PASSWORD=[REDACTED]"),
        ("password=tired ocean lamp\nAPI=1", "password=[REDACTED]\nAPI=1"),
        ("password:tired ocean lamp", "password:[REDACTED]"),
        ("pw=crisp velvet oak", "pw=[REDACTED]"),
        ("pw: crisp velvet oak", "pw: [REDACTED]"),
        ("export PWD=crisp velvet oak", "export PWD=[REDACTED]"),
    ],
)
def test_a_passphrase_set_without_a_space_or_after_pw_is_scrubbed(
    text: str, expected: str
) -> None:
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [  # H196: sentences after "password:" keep a word prose is made of
        "password: reset it using the link",
        "password: tired ocean lamp and then more words here",
        "Password: never shared externally",
        "password: use the reset form below",
        "the password is tired ocean lamp",  # "is" unquoted: prose may follow it
    ],
)
def test_a_sentence_after_a_password_colon_is_not_a_passphrase(text: str) -> None:
    assert scrub_text(text) == text


def test_a_passphrase_set_with_a_colon_is_known_from_then_on() -> None:
    known = with_revealed("password: tired ocean lamp", ())
    assert scrub_text("I typed tired ocean lamp twice", known) == "I typed [REDACTED] twice"


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # H188: a hex key after a bare "key", letters and digits after "api-key"
        ("key 9f86d081884c7d659a2feaa0c55ad015", "key [REDACTED]"),
        ("the key is 9f86d081884c7d659a2feaa0c55ad015.", "the key is [REDACTED]."),
        ("here's the key: 9F86D081884C7D659A2FEAA0C55AD015", "here's the key: [REDACTED]"),
        ("api-key abc123def456ghi789", "api-key [REDACTED]"),
        ("api_key abc123def456ghi789", "api_key [REDACTED]"),
        ("use --api-key abc123def456ghi789 here", "use --api-key [REDACTED] here"),
        ("the apikey q8w7e6r5t4y3u2i1", "the apikey [REDACTED]"),
    ],
)
def test_a_hex_or_generated_value_after_a_key_word_is_scrubbed(text: str, expected: str) -> None:
    assert scrub_text(text) == expected


@pytest.mark.parametrize(
    "text",
    [  # H188: hashes, SHAs and ids near "key" that are no credential
        "commit 9f86d081884c7d659a2feaa0c55ad015 fixed it",
        "the primary key 9f86d081884c7d659a2feaa0c55ad015 is the row's",
        "cache key 9f86d081884c7d659a2feaa0c55ad015 was evicted",
        "the idempotency key is 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "the key is 3fa85f64-5717-4562-b3fc-2c963f66afa6",
        "key 12345678901234567890 is a row number",
        "api key rotation2024 is planned",
        "the api-key header carries it",
        "see the public key 9f86d081884c7d659a2feaa0c55ad015",
    ],
)
def test_hashes_and_ids_near_a_key_word_are_left_alone(text: str) -> None:
    assert scrub_text(text) == text


def test_a_passphrase_found_once_is_replaced_where_it_stands_alone(tmp_path: Path) -> None:
    """H188: a password of several words, found where it was named, is a known secret from
    then on, as a generated value is: said again alone (a tool's argument), it goes too."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from session.lifecycle import SessionLifecycle, WriteSession

    phrase = "correct horse battery staple"

    def said(text: str, reply: str) -> list[ModelRequest | ModelResponse]:
        return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(reply)])]

    lc = SessionLifecycle().start_fresh(NOW).lifecycle
    transition = lc.begin_turn(0).complete_turn(
        said(f"my password is {phrase}", f"I will type {phrase} at the prompt"),
        now=NOW,
        manifest={},
        agent_spec_path=None,
    )
    (write,) = [e for e in transition.effects if isinstance(e, WriteSession)]
    secrets = transition.lifecycle.policy.known_secrets
    assert phrase in secrets
    SessionManager(tmp_path).save(write.state, write.encoded, secrets)
    assert "battery staple" not in (tmp_path / f"{write.state.session_id}.json").read_text()


def test_the_credentials_in_the_endpoints_url_are_secrets_of_the_environment() -> None:
    """H188's hunt: ``OPENAI_BASE_URL=http://<token>@host/v1`` with a token of lower-case
    letters and digits was shown in the error line of a failed turn and saved in the
    session's ``[no reply: ...]`` note: no pattern took it, and the variable's name says
    no credential. The user and the password of that URL are the endpoint's credentials."""
    from session.environment import secrets_from_environment

    environ = {
        "OPENAI_BASE_URL": "https://abc123def456ghi789jkl:plainwordpassword@gw.example/v1",
        "HOME": "/root",
    }
    assert set(secrets_from_environment(environ)) == {
        "abc123def456ghi789jkl",
        "plainwordpassword",
    }
    assert secrets_from_environment({"OPENAI_BASE_URL": "https://deploy@gw.example/v1"}) == ()
    assert secrets_from_environment({"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://abc123def456ghi789jkl@127.0.0.1:9/v1", "http://[REDACTED]@127.0.0.1:9/v1"),
        ("https://git@github.com/o/r.git", "https://git@github.com/o/r.git"),
        ("ssh://deploy2024@host/x", "ssh://deploy2024@host/x"),
    ],
)
def test_a_generated_user_of_a_url_is_scrubbed_in_one_case_too(text: str, expected: str) -> None:
    assert scrub_text(text) == expected
