"""Bad bytes on the socket get one error frame and a closed connection; the supervisor serves on."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import time

import pytest

from supervisor.wire import PROTOCOL_VERSION
from tests.e2e.harness import Env
from tests.e2e.other_user import cannot_become_another_user, connect_as_other_user, other_account

HELLO = {"type": "hello", "protocol": PROTOCOL_VERSION, "role": "control", "client_pid": 1}


@pytest.fixture
def running(env: Env) -> Env:
    started = env.run("supervisor", "start")
    assert started.returncode == 0, started.stderr
    return env


def exchange(env: Env, payload: bytes, read_timeout: float = 10.0) -> list[dict[str, object]]:
    """Send raw bytes, then read frames until the supervisor closes the connection."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(read_timeout)
    sock.connect(str(env.runtime / "supervisor.sock"))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        sock.sendall(payload)
    data = b""
    deadline = time.monotonic() + read_timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    sock.close()
    return [json.loads(line) for line in data.splitlines() if line]


def status_ok(env: Env) -> bool:
    result = env.run("supervisor", "status", "--json")
    return result.returncode == 0 and json.loads(result.stdout)["running"] is True


def hello_then(frame: bytes) -> bytes:
    return json.dumps(HELLO).encode() + b"\n" + frame


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (os.urandom(4096).replace(b"\n", b"x") + b"\n", "bad_frame"),
        (b"{not json\n", "bad_frame"),
        (b'["a list"]\n', "bad_frame"),
        (b'{"type": "launch_missiles"}\n', "unknown_type"),
        (b'{"type": "status"}\n', "hello_required"),
        (json.dumps({**HELLO, "protocol": 999}).encode() + b"\n", "protocol_version"),
        (hello_then(b'{"type": "bogus"}\n'), "unknown_type"),
        (hello_then(b'{"type": "list_sessions", "all": "maybe"}\n'), "invalid_request"),
    ],
)
def test_bad_frames_get_one_error_and_a_closed_connection(
    running: Env, payload: bytes, code: str
) -> None:
    frames = exchange(running, payload)
    errors = [f for f in frames if f["type"] == "error"]
    assert len(errors) == 1
    assert errors[0]["code"] == code
    assert status_ok(running)


def test_an_8_mib_line_is_refused_before_it_is_buffered(running: Env) -> None:
    frames = exchange(running, b"x" * (8 * 1024 * 1024))
    assert [f["code"] for f in frames if f["type"] == "error"] == ["frame_too_large"]
    assert status_ok(running)


def test_a_live_conversation_carries_on_while_others_misbehave(running: Env) -> None:
    client = running.spawn(terminal=running.terminal())
    client.send("first")
    client.expect("first")
    for payload in (b"\xff\xfe garbage\n", b"{}\n", b"x" * (2 * 1024 * 1024)):
        exchange(running, payload)
    client.send("second")
    assert "(turn 2 of this conversation" in client.expect("second")


def test_the_socket_directory_is_private(running: Env) -> None:
    assert stat.S_IMODE(running.runtime.stat().st_mode) == 0o700
    assert stat.S_IMODE((running.runtime / "supervisor.sock").stat().st_mode) == 0o600


def test_a_runtime_dir_open_to_others_is_refused(env: Env) -> None:
    env.runtime.mkdir(mode=0o777)
    os.chmod(env.runtime, 0o777)
    result = env.run("supervisor", "start")
    assert result.returncode == 1
    assert result.stderr.startswith("error: runtime directory")
    assert "not 700" in result.stderr
    assert f"chmod 700 {env.runtime}" in result.stderr, "the fix is named (H67)"
    assert len(result.stderr.splitlines()) == 1


def test_a_symlinked_runtime_dir_is_refused(env: Env) -> None:
    target = env.base / "elsewhere"
    target.mkdir(mode=0o700)
    env.runtime.symlink_to(target)
    result = env.run("sessions", "--json", input="")
    assert result.returncode == 0, "listing without a supervisor does not need the runtime dir"
    chat = env.run(input="hello\n", terminal=env.terminal())
    assert chat.returncode == 1
    assert "is a symlink; refusing to use it" in chat.stderr


@pytest.mark.skipif(
    cannot_become_another_user() is not None, reason=f"{cannot_become_another_user()}"
)
@pytest.mark.parametrize("role", ["control", "terminal"])
def test_a_peer_of_another_uid_is_refused(running: Env, role: str) -> None:
    sock_path = running.runtime / "supervisor.sock"
    # Let the other user reach the socket: only the supervisor's uid check remains.
    os.chmod(running.base, 0o711)
    os.chmod(running.runtime, 0o711)
    os.chmod(sock_path, 0o666)
    hello = {**HELLO, "role": role, "terminal_pid": os.getpid(), "workspace": "/"}
    try:
        outcome = connect_as_other_user(sock_path, json.dumps(hello).encode() + b"\n")
    finally:
        os.chmod(running.runtime, 0o700)
    if "setuid_failed" in outcome:
        pytest.skip(f"cannot become {other_account().name} here: {outcome['setuid_failed']}")
    assert outcome["uid"] == other_account().uid
    (reply,) = [json.loads(line) for line in str(outcome["received"]).splitlines()]
    assert (reply["type"], reply["code"]) == ("error", "not_allowed")
    assert reply["message"] == "connections from other users are not accepted"
    log = (running.runtime / "supervisor.log").read_text()
    assert f"refused a connection from uid {other_account().uid}" in log
    assert status_ok(running)


def test_clients_that_leave_before_their_answer_are_no_error(running: Env) -> None:
    """A client gone before its welcome or answer is a peer that left, not a failed
    connection: nothing in the log (each used to leave a traceback there)."""
    wait_until_loaded(running)  # the server itself answers, not the front door
    for number in range(40):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(running.runtime / "supervisor.sock"))
        sock.sendall(
            json.dumps(HELLO).encode() + b"\n" + b'{"type": "list_sessions", "all": true}\n'
        )
        if number % 2:
            time.sleep(0.002)
        sock.close()
    assert status_ok(running)
    log = (running.runtime / "supervisor.log").read_text()
    assert "connection failed" not in log
    assert "Traceback" not in log


def wait_until_loaded(env: Env) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = env.run("supervisor", "status", "--json")
        if status.returncode == 0 and json.loads(status.stdout)["model_loaded"]:
            return
        time.sleep(0.05)
    raise AssertionError("the model stack did not load")
