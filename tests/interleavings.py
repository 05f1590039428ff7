"""Seeded interleavings: several terminals on one project's sessions, against the real supervisor.

Each seed starts the real supervisor (``supervisor.daemon.serve``: front door,
StorageActor, registry, TerminalActors, the offline model) in process, on a
Unix socket in a private directory, and runs 2-4 clients at once over that
socket. Every client draws its program from the seed: connect, open a new
session or resume one (the one offered, or any id any client has seen,
including sessions live elsewhere and sessions already reset), then turns,
``/save`` and ``/reset``, and leave with ``close`` or by hanging up abruptly,
sometimes right after sending a request whose answer it never reads. The
schedule is drawn from the seed too: before each request a client yields to
the event loop a number of times chosen by its generator, which orders sends
across clients (no sleeps). Thread timing inside the supervisor is not
seeded, so a replay reproduces the programs and the client-side schedule.

Each operation's invocation and answer are recorded on one clock. At the end
the supervisor is stopped and the files are read with the project's own
loaders; ``check`` then requires that the final state is that of some serial
order of the operations (``tests/serial_model.py``), and separately counts
resurrections, lost and duplicated turns, double live holders, unparsable
files, temps and crashes.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import orjson
from anyio.abc import SocketStream

from session.catalog import SessionCatalog
from session.errors import SessionError
from session.paths import sessions_dir
from supervisor import daemon
from supervisor.runtime import RuntimePaths
from supervisor.wire import PROTOCOL_VERSION
from tests.serial_model import Final, Op, SessionFile, Verdict, linearize

Frame = dict[str, Any]
ANSWER_TIMEOUT_S = 20.0
MAX_TURNS_PER_SEED = 18
"""Below the saved tail's 20 turns, so every stored turn stays countable in its file."""
BUSY_RETRIES = 2000
FIRST_PID = 700_001
"""Terminal pids of the clients (no such processes: their pointers read as dead tabs)."""
SAVED = re.compile(r"saved as checkpoint (\d+)")
UNCHANGED = re.compile(r"saved; nothing changed since checkpoint (\d+)")
RESET = re.compile(r"New session ([0-9a-f]{12})")
ENVIRONMENT = {
    "AGENT_ASSIST_HEIR": "0",
    "AGENT_ASSIST_COMPACTION_INTERVAL": "0",
}
"""No heir process; compaction off, so that every turn stays countable in its file."""
UNSET = ("AGENT_ASSIST_MODEL", "AGENT_ASSIST_SUMMARY_MODEL", "AGENT_ASSIST_CONTEXT_TOKENS")


@dataclass
class Problems:
    """What the checker found in one seed, by kind (empty lists: clean)."""

    not_serializable: list[str] = field(default_factory=list)
    resurrected: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    two_holders: list[str] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    temps_left: list[str] = field(default_factory=list)
    claims_left: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)

    def items(self) -> Iterator[tuple[str, list[str]]]:
        yield from vars(self).items()

    @property
    def clean(self) -> bool:
        return not any(value for _, value in self.items())


@dataclass
class SeedRun:
    seed: int
    clients: int
    history: list[Op]
    final: Final
    problems: Problems
    verdict: Verdict | None = None
    tracebacks: list[str] = field(default_factory=list)

    def report(self) -> str:
        """Everything needed to replay and read a failure."""
        lines = [
            f"seed {self.seed} ({self.clients} clients): replay with "
            f"`python -m bench.interleavings --seed {self.seed} --seeds 1`"
        ]
        for name, found in self.problems.items():
            lines += [f"  {name}: {item}" for item in found]
        lines.append("history:")
        lines += [f"  {op}" for op in sorted(self.history, key=lambda o: o.invoked)]
        lines.append(f"on disk: {self.final}")
        if self.verdict is not None and self.verdict.nearest is not None:
            lines.append(f"nearest serial outcome: {self.verdict.nearest}")
            lines += [f"  {op}" for op in self.verdict.nearest_order]
        lines += self.tracebacks
        return "\n".join(lines)


def save_result(text: str) -> tuple[object, ...]:
    """What ``/save`` told, as the serial model's result: ``("saved", N)`` for a new
    checkpoint, ``("unchanged", N)`` when N already held the session as it is."""
    if found := SAVED.search(text):
        return ("saved", int(found.group(1)))
    if found := UNCHANGED.search(text):
        return ("unchanged", int(found.group(1)))
    return ("text", text)


class _Errors(logging.Handler):
    """Errors the supervisor logged: a traceback in it is a crash."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []
        self.tracebacks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("agent_assist"):
            cause = record.exc_info[1] if record.exc_info else None
            text = f"{record.name}: {record.getMessage()}"
            self.records.append(text + (f" ({type(cause).__name__}: {cause})" if cause else ""))
            if record.exc_info and record.exc_info[0] is not None:
                self.tracebacks.append(logging.Formatter().formatException(record.exc_info))


@contextmanager
def supervisor_environment(root: Path) -> Iterator[None]:
    """The environment every seed's supervisor runs in (restored afterwards)."""
    saved = {name: os.environ.get(name) for name in (*ENVIRONMENT, *UNSET, "AGENT_ASSIST_HOME")}
    os.environ.update(ENVIRONMENT)
    os.environ["AGENT_ASSIST_HOME"] = str(root)
    for name in UNSET:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Clock:
    def __init__(self) -> None:
        self._ticks = itertools.count(1)

    def tick(self) -> int:
        return next(self._ticks)


class Hangup(Exception):
    """The supervisor closed a connection the client did not close."""


class Wire:
    """One framed connection, read one answer at a time."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self._buffer = b""

    async def send(self, frame: Frame) -> None:
        await self.stream.send(orjson.dumps(frame) + b"\n")

    async def receive(self) -> Frame:
        while b"\n" not in self._buffer:
            try:
                chunk = await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError) as exc:
                raise Hangup("the supervisor closed the connection") from exc
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        frame: Frame = orjson.loads(line)
        return frame

    async def answer(self, *kinds: str) -> Frame:
        """The next frame of one of ``kinds`` or an error (notices and text skipped)."""
        with anyio.fail_after(ANSWER_TIMEOUT_S):
            while True:
                frame = await self.receive()
                if frame["type"] in kinds or frame["type"] == "error":
                    return frame
                if frame["type"] == "confirm":  # a question: answer no (never delete files)
                    await self.send({"type": "confirm_reply", "id": frame["id"], "answer": False})


@dataclass
class Shared:
    """What every client of one seed can see: the clock, the history, the ids seen."""

    clock: Clock
    history: list[Op] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    turns_left: int = MAX_TURNS_PER_SEED
    hung: list[str] = field(default_factory=list)

    def learn(self, session_id: object) -> None:
        if isinstance(session_id, str) and session_id not in self.known:
            self.known.append(session_id)


class Client:
    def __init__(
        self, index: int, seed: int, socket: Path, workspace: Path, shared: Shared
    ) -> None:
        self.index = index
        self.pid = FIRST_PID + index
        self.rng = random.Random(f"{seed}/{index}")
        self.socket = socket
        self.workspace = workspace
        self.shared = shared
        self.offer: str | None = None
        self.turns = 0

    # -- the schedule -----------------------------------------------------------

    async def jitter(self) -> None:
        for _ in range(self.rng.choice((0, 0, 1, 2, 3, 8, 30))):
            await anyio.lowlevel.checkpoint()

    def cut(self) -> bool:
        """Hang up right after this request, without reading its answer?"""
        return self.rng.random() < 0.1

    # -- recording --------------------------------------------------------------

    def invoke(self, kind: Any, arg: str | None = None) -> Op:
        return Op(self.index, kind, arg, self.shared.clock.tick())

    def done(self, op: Op, result: tuple[object, ...] | None) -> None:
        answered = None if result is None else self.shared.clock.tick()
        self.shared.history.append(Op(op.client, op.kind, op.arg, op.invoked, answered, result))

    # -- the program ----------------------------------------------------------------

    async def run(self) -> None:
        try:
            for _ in range(self.rng.randint(1, 3)):
                await self.connection()
        except TimeoutError:
            self.shared.hung.append(f"client {self.index}: no answer in {ANSWER_TIMEOUT_S:g} s")
        except Hangup as exc:
            self.shared.hung.append(f"client {self.index}: {exc}")

    async def connection(self) -> None:
        wire = await self.attach()
        if wire is None:
            return
        try:
            if not await self.open(wire):
                return
            for _ in range(self.rng.randint(0, 5)):
                choice = self.rng.random()
                if choice < 0.55 and self.shared.turns_left > 0:
                    gone = await self.turn(wire)
                elif choice < 0.8:
                    gone = await self.save(wire)
                else:
                    gone = await self.reset(wire)
                if gone:
                    return
            if self.rng.random() < 0.6:
                await self.close(wire)
            else:
                await self.hang_up(wire)
        finally:
            await wire.stream.aclose()

    async def hang_up(self, wire: Wire) -> None:
        await self.jitter()
        op = self.invoke("disconnect")
        await wire.stream.aclose()
        self.done(op, None)

    async def request(self, wire: Wire, op: Op, frame: Frame) -> bool:
        """Send; if this request is cut, hang up at once and return True."""
        await wire.send(frame)
        if self.cut():
            self.done(op, None)
            await self.hang_up(wire)
            return True
        return False

    async def attach(self) -> Wire | None:
        """Connect and say hello (again while the previous connection's pid is busy)."""
        for _ in range(BUSY_RETRIES):
            await self.jitter()
            stream = await anyio.connect_unix(self.socket)
            wire = Wire(stream)
            op = self.invoke("hello")
            hello = {
                "type": "hello",
                "protocol": PROTOCOL_VERSION,
                "role": "terminal",
                "client_pid": self.pid,
                "terminal_pid": self.pid,
                "workspace": str(self.workspace),
            }
            if await self.request(wire, op, hello):
                return None
            frame = await wire.answer("welcome")
            if frame["type"] == "welcome":
                offer = (frame.get("offer") or {}).get("session_id")
                self.shared.learn(offer)
                self.done(op, ("welcome", offer))
                self.offer = offer
                return wire
            await stream.aclose()
            self.done(
                op, ("busy",) if frame.get("code") == "busy" else ("error", frame.get("code"))
            )
            if frame.get("code") != "busy":
                return None
            await anyio.lowlevel.checkpoint()
        self.shared.hung.append(f"client {self.index}: busy {BUSY_RETRIES} times")
        return None

    async def open(self, wire: Wire) -> bool:
        """Resume (the offer, or any id seen) or start anew; False if the client hung up."""
        choice = self.rng.random()
        wanted: str | None = None
        if choice < 0.4 and self.offer is not None:
            wanted = self.offer
        elif choice < 0.8 and self.shared.known:
            wanted = self.rng.choice(self.shared.known)
        if wanted is not None:
            await self.jitter()
            op = self.invoke("open_resume", wanted)
            if await self.request(
                wire, op, {"type": "open", "mode": "resume", "session_id": wanted}
            ):
                return False
            frame = await wire.answer("opened")
            if frame["type"] == "opened":
                self.done(op, ("opened", frame["session_id"]))
                return True
            self.done(op, ("error", frame.get("code")))
        await self.jitter()
        op = self.invoke("open_new")
        if await self.request(wire, op, {"type": "open", "mode": "new"}):
            return False
        frame = await wire.answer("opened")
        if frame["type"] != "opened":
            self.done(op, ("error", frame.get("code")))
            return False
        self.shared.learn(frame["session_id"])
        self.done(op, ("opened", frame["session_id"]))
        return True

    async def turn(self, wire: Wire) -> bool:
        self.shared.turns_left -= 1
        self.turns += 1
        message_id = f"m{self.index}x{self.turns}"
        await self.jitter()
        op = self.invoke("turn", message_id)
        frame = {"type": "user_message", "text": f"note {message_id}", "id": message_id}
        if await self.request(wire, op, frame):
            return True
        end = await wire.answer("text_delta", "turn_end")
        if end["type"] == "text_delta":
            if self.rng.random() < 0.1:  # hang up while the reply streams
                self.done(op, None)
                await self.hang_up(wire)
                return True
            end = await wire.answer("turn_end")
        if end["type"] == "turn_end" and end["status"] == "ok" and end.get("error") is None:
            self.done(op, ("ok",))
        else:
            self.done(
                op,
                (
                    end["type"],
                    end.get("status") or end.get("code"),
                    end.get("error") or end.get("message"),
                ),
            )
        return False

    async def save(self, wire: Wire) -> bool:
        await self.jitter()
        op = self.invoke("save")
        if await self.request(wire, op, {"type": "command", "name": "save"}):
            return True
        frame = await wire.answer("command_result")
        text = str(frame.get("text") or frame.get("message"))
        self.done(op, save_result(text))
        return False

    async def reset(self, wire: Wire) -> bool:
        await self.jitter()
        op = self.invoke("reset")
        if await self.request(wire, op, {"type": "command", "name": "reset"}):
            return True
        frame = await wire.answer("command_result")
        text = str(frame.get("text") or frame.get("message"))
        found = RESET.search(text)
        if found is None:
            self.done(op, ("text", text))
            return False
        self.shared.learn(found.group(1))
        self.done(op, ("reset", found.group(1)))
        return False

    async def close(self, wire: Wire) -> None:
        await self.jitter()
        op = self.invoke("close")
        await wire.send({"type": "close"})
        frame = await wire.answer("closed")
        if frame["type"] == "closed":
            self.done(op, ("closed", frame["saved"], frame["session_id"]))
        else:
            self.done(op, ("error", frame.get("code")))


# -- reading what is on disk -------------------------------------------------


def message_ids(recent_messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    return tuple(
        str(m["metadata"]["message_id"])
        for m in recent_messages
        if m.get("kind") == "request" and (m.get("metadata") or {}).get("message_id")
    )


def read_final(root: Path, workspace: Path, problems: Problems) -> Final:
    """The sessions, checkpoints and pointers of the workspace's project, through the
    project's own loaders; what does not parse, and any temp or corrupt file, is noted."""
    project = sessions_dir(workspace, root)
    catalog = SessionCatalog(root, read_only=True)
    manager = catalog.manager(project)
    sessions: dict[str, SessionFile] = {}
    for session_id in manager.session_ids():
        try:
            state = manager.load(session_id)
        except (OSError, SessionError) as exc:
            problems.unparsable.append(f"{session_id}.json: {exc}")
            continue
        sessions[session_id] = SessionFile(
            message_ids(state.recent_messages), state.checkpoint_count
        )
    pointers = manager.list_pointers()
    problems.unparsable += [str(p) for p in pointers.problems]
    store = catalog.checkpoints(project)
    checkpoints: dict[str, tuple[int, ...]] = {}
    for session_id in store.session_ids():
        listing = store.listing(session_id)
        problems.unparsable += list(listing.problems)
        if listing.checkpoints:
            checkpoints[session_id] = tuple(c.number for c in listing.checkpoints)
    for path in project.parent.rglob("*"):
        if path.name.endswith(".tmp") or ".tmp." in path.name:
            problems.temps_left.append(str(path.relative_to(root)))
        if ".corrupt-" in path.name:
            problems.unparsable.append(f"{path.relative_to(root)} (moved aside)")
    return Final(
        sessions=sessions,
        checkpoints=checkpoints,
        pointers={p.pid - FIRST_PID: p.session_id for p in pointers.pointers},
    )


# -- the checks -----------------------------------------------------------------


def check(history: list[Op], clients: int, final: Final, problems: Problems) -> Verdict:
    """Every check of one seed; fills ``problems`` and returns the serial search's verdict."""
    reset_away = {session_id for _, session_id in _resets(history)}
    for session_id in final.sessions:
        if session_id in reset_away:
            problems.resurrected.append(f"{session_id}: reset, yet on disk")
    for session_id in final.checkpoints:
        if session_id in reset_away:
            problems.resurrected.append(f"{session_id}: reset, yet its checkpoints are on disk")
    stored = Counter(m for f in final.sessions.values() for m in f.messages)
    problems.duplicated += [f"{m} stored {n} times" for m, n in stored.items() if n > 1]
    for op, held in _acknowledged_turns(history):
        if stored[op.arg or ""]:
            continue
        if held is None or held not in reset_away:
            problems.lost.append(f"{op.arg} (session {held}) acknowledged, not on disk")
    for session_id, spans in _holding(history).items():
        for (a, a_start, a_end), (b, b_start, _) in itertools.combinations(spans, 2):
            if a != b and (a_end is None or b_start < a_end):
                problems.two_holders.append(
                    f"{session_id}: client {b} told opened at {b_start} while client {a} "
                    f"held it since {a_start}"
                )
    verdict = linearize(history, clients, final)
    if not verdict.serializable:
        problems.not_serializable.append(
            f"no serial order of {len(history)} operations ends in what is on disk "
            f"({verdict.explored} states explored"
            + (", the search's limit: not every order was tried)" if verdict.gave_up else ")")
        )
    return verdict


def _sessions_of(history: list[Op]) -> Iterator[tuple[Op, str | None]]:
    """Each operation with the session its client held when it was invoked (as told)."""
    holding: dict[int, str | None] = {}
    for op in sorted(history, key=lambda o: o.invoked):
        yield op, holding.get(op.client)
        given = _given(op)
        if given is not None:
            holding[op.client] = given
        elif op.kind in ("close", "disconnect", "hello"):
            holding[op.client] = None


def _given(op: Op) -> str | None:
    """The session an operation's answer gave its client (an open, a reset), if any."""
    result = op.result or ()
    if op.kind in ("open_new", "open_resume") and result[:1] == ("opened",):
        return str(result[1])
    if op.kind == "reset" and result[:1] == ("reset",):
        return str(result[1])
    return None


def _holding(history: list[Op]) -> dict[str, list[tuple[int, int, int | None]]]:
    """Per session, in order: (client, told it held it at, let it go at) as the clients saw
    it: from the answer that gave it (an open, a reset) to the request that ended it (a
    close, a hang-up, a reset)."""
    spans: dict[str, list[tuple[int, int, int | None]]] = {}
    held: dict[int, str] = {}

    def end(client: int, at: int) -> None:
        session_id = held.pop(client, None)
        if session_id is not None:
            who, start, _ = spans[session_id][-1]
            spans[session_id][-1] = (who, start, at)

    def start(client: int, session_id: str, at: int | None) -> None:
        held[client] = session_id
        spans.setdefault(session_id, []).append((client, at or 0, None))

    for op in sorted(history, key=lambda o: o.invoked):
        if op.kind in ("close", "disconnect", "reset"):
            end(op.client, op.invoked)
        given = _given(op)
        if given is not None:
            start(op.client, given, op.answered)
    for session_list in spans.values():
        session_list.sort(key=lambda span: span[1])
    return spans


def _resets(history: list[Op]) -> Iterator[tuple[Op, str]]:
    """Resets (answered or not) with the session each deleted."""
    for op, session_id in _sessions_of(history):
        if op.kind == "reset" and session_id is not None:
            yield op, session_id


def _acknowledged_turns(history: list[Op]) -> Iterator[tuple[Op, str | None]]:
    for op, session_id in _sessions_of(history):
        if op.kind == "turn" and op.result == ("ok",):
            yield op, session_id


# -- one seed --------------------------------------------------------------------


async def wait_for_socket(path: Path) -> None:
    with anyio.fail_after(ANSWER_TIMEOUT_S):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 (serve() has no event)
            await anyio.sleep(0.001)


async def control(socket: Path, frame: Frame) -> Frame:
    async with await anyio.connect_unix(socket) as stream:
        wire = Wire(stream)
        await wire.send(
            {
                "type": "hello",
                "protocol": PROTOCOL_VERSION,
                "role": "control",
                "client_pid": os.getpid(),
            }
        )
        await wire.answer("welcome")
        await wire.send(frame)
        return await wire.answer("result")


async def _claims_settle(socket: Path) -> int:
    """Live claims left once every client is gone (waits for the exits to finish)."""
    with anyio.move_on_after(ANSWER_TIMEOUT_S):
        while True:
            status = await control(socket, {"type": "status"})
            live = int(status["data"]["live_sessions"])
            if live == 0:
                return 0
            await anyio.sleep(0.005)
    return live


async def run_seed(seed: int, base: Path, root: Path) -> SeedRun:
    """One seed against a fresh supervisor (the state root ``root`` is shared by the seeds;
    each seed has its own workspace, so its own project)."""
    rng = random.Random(seed)
    clients = rng.randint(2, 4)
    where = base / f"seed-{seed}"
    workspace = where / "ws"
    workspace.mkdir(parents=True)
    (where / "run").mkdir(mode=0o700)
    paths = RuntimePaths(where / "run")
    shared = Shared(Clock())
    problems = Problems()
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    lock_fd = await anyio.to_thread.run_sync(daemon.take_lock, paths)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(daemon.serve, paths, root, lock_fd)
            await wait_for_socket(paths.socket)
            async with anyio.create_task_group() as terminals:
                for index in range(clients):
                    client = Client(index, seed, paths.socket, workspace, shared)
                    terminals.start_soon(client.run)
            left = await _claims_settle(paths.socket)
            if left:
                problems.claims_left.append(f"{left} live claim(s) after every client left")
            await control(paths.socket, {"type": "stop"})
    finally:
        os.close(lock_fd)
        logging.getLogger().removeHandler(errors)
    problems.crashes += errors.records
    problems.hung += shared.hung
    final = read_final(root, workspace, problems)
    verdict = check(shared.history, clients, final, problems)
    return SeedRun(seed, clients, shared.history, final, problems, verdict, errors.tracebacks)


@dataclass
class Campaign:
    seeds: int = 0
    operations: int = 0
    acknowledged_turns: int = 0
    resets: int = 0
    disconnects: int = 0
    refused_live: int = 0
    failures: list[SeedRun] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, run: SeedRun) -> None:
        self.seeds += 1
        self.operations += len(run.history)
        self.acknowledged_turns += sum(
            1 for op in run.history if op.kind == "turn" and op.result == ("ok",)
        )
        self.resets += sum(1 for op in run.history if op.kind == "reset" and op.result is not None)
        self.disconnects += sum(1 for op in run.history if op.kind == "disconnect")
        self.refused_live += sum(1 for op in run.history if op.result == ("error", "session_live"))
        for name, found in run.problems.items():
            self.counts[name] += len(found)
        if not run.problems.clean:
            self.failures.append(run)

    def summary(self) -> dict[str, object]:
        return {
            "seeds": self.seeds,
            "operations": self.operations,
            "acknowledged_turns": self.acknowledged_turns,
            "resets": self.resets,
            "disconnects": self.disconnects,
            "resumes_refused_live": self.refused_live,
            **{name: self.counts[name] for name, _ in Problems().items()},
        }


async def run_campaign(first_seed: int, seeds: int, base: Path) -> Campaign:
    campaign = Campaign()
    root = base / "home"
    with supervisor_environment(root):
        for seed in range(first_seed, first_seed + seeds):
            campaign.add(await run_seed(seed, base, root))
    return campaign
