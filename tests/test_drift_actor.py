"""DriftWatcherActor: what it watches survives a restart of the actor."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from watchdog.events import EventsLostEvent, FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.drift import WATCHED_EVENTS, DriftWatcherActor, WatchedFiles, _entry
from actors.messages import FilesChanged, Watch
from actors.observer import _NewestFirstQueue, _WantingGroup, make_observer
from session.filesystem import sha256_file

pytestmark = pytest.mark.anyio


def written(path: Path, text: str) -> str:
    """Write ``text`` to ``path``; its digest."""
    path.write_text(text)
    digest = sha256_file(path)
    assert digest is not None
    return digest


class Crashes(DriftWatcherActor):
    async def handle(self, message: Any) -> Any:
        if message == "crash":
            raise RuntimeError("a bug in the actor")
        return await super().handle(message)


async def test_a_restarted_watcher_watches_the_same_files_again(tmp_path: Path) -> None:
    """A crash ended live drift notices for every session, silently."""
    spec = tmp_path / "agent_spec.md"
    digest = written(spec, "v1\n")
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    watched = WatchedFiles()
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: Crashes(ref, watched=watched))
        )
        await drift.tell(Watch(1, tmp_path, {"agent_spec.md": digest}, terminal))
        await drift.tell("crash")  # after the watch: the mailbox is taken in order
        await anyio.wait_all_tasks_blocked()
        spec.write_text("v2, by hand\n")
        with anyio.fail_after(10):
            told = (await inbox.receive()).message
        assert told.paths == ("agent_spec.md",)
        assert told.digests == (sha256_file(spec),), "what the watcher saw there"
        tg.cancel_scope.cancel()


async def watching(
    tg: Any, workspace: Path, manifest: dict[str, str]
) -> tuple[ActorRef[Any], Any]:
    """A watcher watching ``manifest`` for terminal 1, and that terminal's inbox."""
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    drift: ActorRef[Any] = await tg.start(
        partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
    )
    await drift.ask(Watch(1, workspace, manifest, terminal))
    return drift, inbox


async def told(inbox: Any) -> Any:
    with anyio.fail_after(10):
        return (await inbox.receive()).message


async def test_a_directory_removed_and_made_again_is_watched_again(tmp_path: Path) -> None:
    """A helper's attack: once a tracked file's directory was removed (by hand, or before a
    restore put it back), no later change of that file was ever told."""
    nested = tmp_path / "sub" / "x"
    nested.mkdir(parents=True)
    digest = written(nested / "y.md", "v1\n")
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, tmp_path, {"sub/x/y.md": digest})
        shutil.rmtree(tmp_path / "sub")
        assert (await told(inbox)).paths == ("sub/x/y.md",)
        nested.mkdir(parents=True)
        (nested / "y.md").write_text("v2, by hand\n")
        assert (await told(inbox)).paths == ("sub/x/y.md",)
        (nested / "y.md").write_text("v3, by hand again\n")
        assert (await told(inbox)).paths == ("sub/x/y.md",)
        tg.cancel_scope.cancel()


async def test_a_directory_replaced_by_a_symlink_tells_its_files_gone(tmp_path: Path) -> None:
    """A helper's report: the file was hashed through the symlink, found unchanged, and
    never told (the contract: a file reached through a symlink reads as deleted)."""
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    digest = written(workspace / "sub" / "deep.md", "d1\n")
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, workspace, {"sub/deep.md": digest})
        (workspace / "sub").rename(tmp_path / "outside")
        (workspace / "sub").symlink_to(tmp_path / "outside")
        change = await told(inbox)
        assert change.paths == ("sub/deep.md",)
        assert change.digests == ("",), "told gone"
        tg.cancel_scope.cancel()


async def test_a_directory_moved_below_an_unwatched_one_tells_its_files_gone(
    tmp_path: Path,
) -> None:
    """Only the directories holding tracked files were watched, and watchdog tells nothing
    when a watched directory itself is moved: ``mv a/b a/c`` was never told."""
    workspace = tmp_path / "ws"
    (workspace / "a" / "b").mkdir(parents=True)
    spec = written(workspace / "agent_spec.md", "s\n")
    digest = written(workspace / "a" / "b" / "f.md", "f\n")
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, workspace, {"agent_spec.md": spec, "a/b/f.md": digest})
        (workspace / "a" / "b").rename(workspace / "a" / "c")
        assert (await told(inbox)).paths == ("a/b/f.md",)
        tg.cancel_scope.cancel()


async def test_a_directory_that_is_a_symlink_when_watched_is_told_when_it_comes_back(
    tmp_path: Path,
) -> None:
    """A helper's report: resumed with p/q a symlink (the file read as deleted), then q a
    directory again: never told (the file was not watched at all, not even from above)."""
    workspace = tmp_path / "ws"
    (workspace / "p" / "q").mkdir(parents=True)
    digest = written(workspace / "p" / "q" / "g.md", "v1\n")
    (workspace / "p" / "q").rename(workspace / "p" / "q_old")
    (workspace / "p" / "q").symlink_to(tmp_path)
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, workspace, {"p/q/g.md": digest})
        (workspace / "p" / "q").unlink()
        (workspace / "p" / "q_old").rename(workspace / "p" / "q")
        change = await told(inbox)
        if change.digests == ("",):  # told gone first, when its watch was placed
            change = await told(inbox)
        assert change.paths == ("p/q/g.md",) and change.digests == (digest,)
        tg.cancel_scope.cancel()


async def test_a_file_whose_directory_is_missing_is_told_when_it_appears(tmp_path: Path) -> None:
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, tmp_path, {"notes/plan.md": "0" * 64})
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "plan.md").write_text("made by hand\n")
        assert (await told(inbox)).paths == ("notes/plan.md",)
        tg.cancel_scope.cancel()


async def test_a_directory_made_again_compares_only_the_files_below_it(tmp_path: Path) -> None:
    """A helper's report: re-creating sub/ re-reported a.md, changed (and told) earlier."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("two\n")
    (tmp_path / "a.md").write_text("one\n")
    manifest = {p: sha256_file(tmp_path / p) or "" for p in ("a.md", "sub/b.md")}
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, tmp_path, manifest)
        (tmp_path / "a.md").write_text("one, changed by hand\n")
        assert (await told(inbox)).paths == ("a.md",)
        shutil.rmtree(tmp_path / "sub")
        assert (await told(inbox)).paths == ("sub/b.md",)
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "b.md").write_text("y\n")
        assert (await told(inbox)).paths == ("sub/b.md",)
        tg.cancel_scope.cancel()


async def test_a_file_told_gone_is_not_told_again_when_its_directory_comes_back(
    tmp_path: Path,
) -> None:
    """A helper's report: sub/y.md, told deleted, was told again when sub/ was made again
    without it."""
    (tmp_path / "sub").mkdir()
    for name in ("x.md", "y.md"):
        (tmp_path / "sub" / name).write_text(f"{name}\n")
    manifest = {f"sub/{n}": sha256_file(tmp_path / "sub" / n) or "" for n in ("x.md", "y.md")}
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, tmp_path, manifest)
        shutil.rmtree(tmp_path / "sub")
        assert (await told(inbox)).paths == ("sub/x.md", "sub/y.md")
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "x.md").write_text("back\n")
        assert (await told(inbox)).paths == ("sub/x.md",)
        tg.cancel_scope.cancel()


async def test_a_workspace_removed_and_made_again_is_watched_again(tmp_path: Path) -> None:
    """A helper's report: after the workspace itself was deleted and made again, edits
    gave no notice until the next turn (there was nothing left to watch)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    digest = written(workspace / "agent_spec.md", "v1\n")
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, workspace, {"agent_spec.md": digest})
        shutil.rmtree(workspace)
        assert (await told(inbox)).paths == ("agent_spec.md",)
        workspace.mkdir()
        (workspace / "agent_spec.md").write_text("recreated\n")
        assert (await told(inbox)).paths == ("agent_spec.md",)
        (workspace / "agent_spec.md").write_text("again\n")
        assert (await told(inbox)).paths == ("agent_spec.md",)
        tg.cancel_scope.cancel()


class ObserverRacedBy(Observer):  # type: ignore[misc,valid-type]
    """A real inotify observer, and a user faster than it: ``before(directory)`` runs just
    before each watch is placed (what it changes there gives no event)."""

    def __init__(self, before: Callable[[str], None]) -> None:
        super().__init__()
        self._before = before

    def schedule(self, handler: Any, path: str, **kwargs: Any) -> Any:
        self._before(path)
        return super().schedule(handler, path, **kwargs)


async def watching_with(
    tg: Any, observer: Callable[[], Any], workspace: Path, manifest: dict[str, str]
) -> Any:
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    drift: ActorRef[Any] = await tg.start(
        partial(
            run_supervised,
            "drift",
            lambda ref: DriftWatcherActor(ref, observer_factory=observer),
        )
    )
    await drift.ask(Watch(1, workspace, manifest, terminal))
    return inbox


async def test_a_file_changed_before_its_watch_is_in_place_is_told(tmp_path: Path) -> None:
    """A file a turn wrote is watched from the turn's end: a change by hand in the moment
    before its watch was in place was told by nothing."""
    digest = written(tmp_path / "agent_spec.md", "written by the turn\n")

    def edit_by_hand(directory: str) -> None:
        (tmp_path / "agent_spec.md").write_text("changed by hand, at once\n")

    async with anyio.create_task_group() as tg:
        inbox = await watching_with(
            tg, lambda: ObserverRacedBy(edit_by_hand), tmp_path, {"agent_spec.md": digest}
        )
        changed = await told(inbox)
        assert changed.paths == ("agent_spec.md",)
        assert changed.digests == (sha256_file(tmp_path / "agent_spec.md"),)
        tg.cancel_scope.cancel()


async def test_a_directory_made_again_before_the_watch_above_it_is_told(tmp_path: Path) -> None:
    """The CI's failure: sub/ removed, then sub/x/y.md made again before the watch that
    would see sub/x come back was in place: no change was ever told. (The workspace and
    each directory on the way are watched now: the race is with the watch on sub/.)"""
    nested = tmp_path / "sub" / "x"
    nested.mkdir(parents=True)
    digest = written(nested / "y.md", "v1\n")

    def make_it_again(directory: str) -> None:
        if directory == str(tmp_path / "sub") and not nested.exists():
            nested.mkdir()
            (nested / "y.md").write_text("v2, by hand\n")

    async with anyio.create_task_group() as tg:
        inbox = await watching_with(
            tg, lambda: ObserverRacedBy(make_it_again), tmp_path, {"sub/x/y.md": digest}
        )
        shutil.rmtree(tmp_path / "sub")
        gone = await told(inbox)
        assert gone.paths == ("sub/x/y.md",) and gone.digests == ("",)
        (tmp_path / "sub").mkdir()  # seen; sub/x, made before sub's watch, is not
        assert (await told(inbox)).digests == (sha256_file(nested / "y.md"),), "v2 is told"
        (nested / "y.md").write_text("v3, by hand again\n")  # and sub/x is watched
        assert (await told(inbox)).digests == (sha256_file(nested / "y.md"),)
        tg.cancel_scope.cancel()


async def test_a_directory_removed_and_made_again_at_once_is_watched_again(
    tmp_path: Path,
) -> None:
    """A helper's report (`rm -rf notes && mkdir notes && echo 1 > notes/a.md`): ext4 gives
    the new directory the old one's inode, so the watch that died with the old one was
    taken for the new one's, and no later change in it was ever told."""
    notes = tmp_path / "notes"
    notes.mkdir()
    digest = written(notes / "a.md", "x\n")
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, tmp_path, {"notes/a.md": digest})
        shutil.rmtree(notes)
        notes.mkdir()
        (notes / "a.md").write_text("1\n")
        # The case is the same inode (ext4 and tmpfs give it when nothing else made a file
        # in between: on a busy machine another program may take it, and the watch must
        # then work all the same).
        changed = await told(inbox)
        while changed.digests != (sha256_file(notes / "a.md"),):  # told gone first, maybe
            changed = await told(inbox)
        with (notes / "a.md").open("a") as edit:
            edit.write("2\n")
        assert (await told(inbox)).digests == (sha256_file(notes / "a.md"),)
        tg.cancel_scope.cancel()


async def test_a_directory_gone_before_its_watch_is_made_is_no_reason_to_give_up(
    tmp_path: Path,
) -> None:
    """A helper's attack (a loop of rm -rf d; mkdir -p d/x/y): a directory removed between
    looking and watching was taken for "cannot watch" and the session told to compare
    at each turn instead, though its watches went on working."""
    nested = tmp_path / "d" / "x"
    nested.mkdir(parents=True)
    digest = written(nested / "y.md", "v1\n")
    removed: list[str] = []

    def remove_it(directory: str) -> None:
        if directory == str(nested) and not removed:
            removed.append(directory)
            shutil.rmtree(tmp_path / "d")

    async with anyio.create_task_group() as tg:
        inbox = await watching_with(
            tg, lambda: ObserverRacedBy(remove_it), tmp_path, {"d/x/y.md": digest}
        )
        gone = await told(inbox)
        assert isinstance(gone, FilesChanged), gone
        assert gone.paths == ("d/x/y.md",) and gone.digests == ("",)
        nested.mkdir(parents=True)
        (nested / "y.md").write_text("v2\n")
        assert (await told(inbox)).digests == (sha256_file(nested / "y.md"),)
        tg.cancel_scope.cancel()


async def test_every_file_of_a_burst_over_many_files_is_told(tmp_path: Path) -> None:
    """A helper's attack (H79): ``sed -i`` over 2,000 tracked files told 1,380 of them.
    The watchdog thread offers each event to the actor's bounded mailbox without waiting
    (it must never block), and an event that found the mailbox full was dropped: its
    file's change was never told."""
    workspace = tmp_path / "ws"
    (workspace / "t").mkdir(parents=True)

    def write_them() -> dict[str, str]:  # 2,000 files: the fixture's work, off the loop
        return {
            f"t/f{i}.md": written(workspace / "t" / f"f{i}.md", f"v1 {i}\n")
            for i in range(2000)
        }

    manifest = await anyio.to_thread.run_sync(write_them)
    async with anyio.create_task_group() as tg:
        _, inbox = await watching(tg, workspace, manifest)
        edit = await anyio.run_process(["sh", "-c", "sed -i 's/v1/v2/' t/*.md"], cwd=workspace)
        assert edit.returncode == 0
        seen: set[str] = set()
        with anyio.move_on_after(20):
            while seen != manifest.keys():
                seen.update((await inbox.receive()).message.paths)
        assert len(manifest.keys() - seen) == 0, "files whose change was never told"
        tg.cancel_scope.cancel()


async def test_a_file_newly_tracked_that_changed_before_its_watch_is_told(
    tmp_path: Path,
) -> None:
    """CI's flaky failure: a turn's end tells the watcher of the file it read while the
    prompt is back; a file deleted in that moment (its directory already watched, so no
    watch is placed and nothing is compared) was never told."""
    spec = written(tmp_path / "agent_spec.md", "v1\n")
    notes = written(tmp_path / "notes.md", "read by the turn\n")
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
        )
        await drift.ask(Watch(1, tmp_path, {"agent_spec.md": spec}, terminal))
        (tmp_path / "notes.md").unlink()  # before the watcher learns it is tracked
        await drift.ask(Watch(1, tmp_path, {"agent_spec.md": spec, "notes.md": notes}, terminal))
        changed = await told(inbox)
        assert changed.paths == ("notes.md",)
        assert changed.digests == ("",), "told gone"
        tg.cancel_scope.cancel()


async def test_each_rename_of_a_run_of_them_is_one_moved_event_from_its_own_source(
    tmp_path: Path,
) -> None:
    """The observer matches a rename's two halves searching watchdog's queue from its newest
    event (``actors/observer.py``; from the oldest, ``sed -i`` over 20,000 files cost
    watchdog 18 s of CPU): each of many renames in a row, as ``sed -i`` makes them, is
    still one moved event from its own temp file to its own file."""
    renames = 500
    moved: list[tuple[str, str]] = []
    all_seen = threading.Event()

    class Moves(FileSystemEventHandler):
        def on_moved(self, event: FileSystemEvent) -> None:
            moved.append((os.fsdecode(event.src_path), os.fsdecode(event.dest_path)))
            if len(moved) == renames:
                all_seen.set()

    observer = make_observer()
    observer.schedule(Moves(), str(tmp_path), recursive=False, event_filter=WATCHED_EVENTS)
    observer.start()
    try:
        emitters: list[Any] = list(observer.emitters)
        assert emitters and all(
            isinstance(emitter._inotify._move_event_grouper._queue, _NewestFirstQueue)
            for emitter in emitters
        ), "watchdog's rename queue was not found: a flood costs it quadratic time again"

        def rename_each() -> None:  # in a thread: the writes would hold the test's loop
            for n in range(renames):
                (tmp_path / f".tmp{n}").write_text(f"{n}\n")
                os.replace(tmp_path / f".tmp{n}", tmp_path / f"f{n}.md")

        await anyio.to_thread.run_sync(rename_each)
        assert await anyio.to_thread.run_sync(all_seen.wait, 20)
    finally:
        await anyio.to_thread.run_sync(observer.stop)
        await anyio.to_thread.run_sync(observer.join, 5)
    assert sorted(moved) == sorted(
        (str(tmp_path / f".tmp{n}"), str(tmp_path / f"f{n}.md")) for n in range(renames)
    )


class ObserverThatLosesEvents(Observer):  # type: ignore[misc,valid-type]
    """A real inotify observer whose events are dropped while ``deaf`` is set, as the
    kernel drops them when its inotify queue overflows; ``overflow()`` then says so, as
    watchdog does (an ``EventsLostEvent`` for each watch)."""

    def __init__(self) -> None:
        super().__init__()
        self.deaf = False
        self.handlers: list[tuple[Any, str]] = []

    def schedule(self, handler: Any, path: str, **kwargs: Any) -> Any:
        self.handlers.append((handler, path))
        observer = self

        class Deaf(FileSystemEventHandler):
            def dispatch(self, event: FileSystemEvent) -> None:
                if not observer.deaf:
                    handler.dispatch(event)

        return super().schedule(Deaf(), path, **kwargs)

    def overflow(self) -> None:
        self.deaf = False
        for handler, path in self.handlers:
            handler.dispatch(EventsLostEvent(path, is_directory=True))


async def test_changes_whose_events_the_kernel_dropped_are_told(tmp_path: Path) -> None:
    """A flood on a busy machine overflows the kernel's inotify queue (16,384 events):
    ``sed -i`` over 20,000 tracked files lost events, and their files' changes were never
    told. watchdog says when events were lost; every tracked file is compared then."""
    (tmp_path / "t").mkdir()
    manifest = {f"t/f{i}.md": written(tmp_path / "t" / f"f{i}.md", f"v1 {i}\n") for i in range(5)}
    manifest["agent_spec.md"] = written(tmp_path / "agent_spec.md", "spec\n")
    observers: list[ObserverThatLosesEvents] = []

    def observer() -> ObserverThatLosesEvents:
        observers.append(ObserverThatLosesEvents())
        return observers[-1]

    async with anyio.create_task_group() as tg:
        inbox = await watching_with(tg, observer, tmp_path, manifest)
        observers[0].deaf = True
        (tmp_path / "t" / "f3.md").write_text("v2, its event lost\n")
        (tmp_path / "agent_spec.md").unlink()
        await anyio.sleep(0.3)  # the events came, and were dropped
        observers[0].overflow()
        changed = await told(inbox)
        assert changed.paths == ("agent_spec.md", "t/f3.md")
        assert changed.digests == ("", sha256_file(tmp_path / "t" / "f3.md"))
        (tmp_path / "t" / "f1.md").write_text("v2\n")  # and the watches go on
        assert (await told(inbox)).paths == ("t/f1.md",)
        tg.cancel_scope.cancel()


async def test_after_events_were_lost_every_directory_is_watched_anew(tmp_path: Path) -> None:
    """A helper's reading (H89): after an overflow only directories whose identity changed
    were watched anew, but one removed and made again while events were lost can have
    the identity the old one had (its inode reused): its dead watch passed for alive."""
    (tmp_path / "t").mkdir()
    manifest = {"t/f.md": written(tmp_path / "t" / "f.md", "v1\n")}
    observers: list[ObserverThatLosesEvents] = []

    def observer() -> ObserverThatLosesEvents:
        observers.append(ObserverThatLosesEvents())
        return observers[-1]

    async with anyio.create_task_group() as tg:
        inbox = await watching_with(tg, observer, tmp_path, manifest)
        watched = sorted(path for _, path in observers[0].handlers)
        observers[0].deaf = True
        (tmp_path / "t" / "f.md").write_text("v2, its event lost\n")
        observers[0].overflow()
        assert (await told(inbox)).paths == ("t/f.md",)
        again = sorted(path for _, path in observers[0].handlers[len(watched) :])
        assert again == watched, "each watch made anew"
        tg.cancel_scope.cancel()



async def test_a_terminal_that_reads_nothing_holds_up_no_other_terminals_notices(
    tmp_path: Path,
) -> None:
    """H124's find: a terminal stopped with Ctrl+Z while a long reply streamed stops
    taking its actor's messages, and its actor's mailbox fills. The watcher waited for
    room in it to tell a change of that terminal's file, and meanwhile told no other
    terminal anything (nor took a file a turn claims, so their turns stalled too)."""
    stuck_ws, other_ws = tmp_path / "stuck", tmp_path / "other"
    stuck_ws.mkdir()
    other_ws.mkdir()
    stuck_file = written(stuck_ws / "agent_spec.md", "v1\n")
    other_file = written(other_ws / "agent_spec.md", "v1\n")
    stuck: ActorRef[Any]
    stuck, stuck_inbox = open_mailbox("stuck terminal", 1)
    other: ActorRef[Any]
    other, other_inbox = open_mailbox("other terminal")
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
        )
        await drift.ask(Watch(1, stuck_ws, {"agent_spec.md": stuck_file}, stuck))
        await drift.ask(Watch(2, other_ws, {"agent_spec.md": other_file}, other))
        assert stuck.offer("a message its actor never takes")  # its mailbox is full
        (stuck_ws / "agent_spec.md").write_text("v2 by hand\n")
        await anyio.wait_all_tasks_blocked()
        (other_ws / "agent_spec.md").write_text("v2 by hand\n")
        assert (await told(other_inbox)).paths == ("agent_spec.md",)
        assert (await told(stuck_inbox)) == "a message its actor never takes"
        assert (await told(stuck_inbox)).paths == ("agent_spec.md",)  # kept, then told
        tg.cancel_scope.cancel()


def test_a_watch_s_entry_names_files_and_directories_as_the_paths_join_them(
    tmp_path: Path,
) -> None:
    """Its names are built from the parts (pathlib cost 1.2 s on the loop for 20,000
    templates); they must be what ``workspace / relative`` names, events being matched
    against them."""
    workspace = tmp_path / "ws"
    (workspace / "templates" / "sub").mkdir(parents=True)
    manifest = dict.fromkeys(
        ["templates/sub/a.md", "./templates//b.md", "notes.md", "../escape.md", "/etc/passwd"], ""
    )
    entry = _entry(workspace, manifest, None)  # type: ignore[arg-type]
    assert entry.relatives == {str(workspace / r): (r,) for r in manifest}
    assert entry.files == {str(workspace / r) for r in manifest if not r.startswith(("..", "/"))}
    ancestors = {str(d) for d in (workspace / "templates" / "sub" / "a.md").parents}
    assert entry.directories == ancestors


def test_a_watch_s_entry_in_the_root_directory_names_files_from_it() -> None:
    entry = _entry(Path("/"), {"a/b.md": "", "c.md": ""}, None)  # type: ignore[arg-type]
    assert entry.files == {"/a/b.md", "/c.md"}
    assert entry.directories == {"/", "/a"}


async def test_a_watch_drops_the_events_of_files_its_handler_does_not_want(
    tmp_path: Path,
) -> None:
    """``sed -i`` makes six events a file, four of them its temp file's: watchdog built,
    queued and dispatched each for the handler to throw away (most of a flood's CPU). A
    rename onto a wanted file is still one moved event, naming its temp file."""
    wanted = {os.fsencode(tmp_path / name) for name in ("spec.md", "end.md")}
    seen: list[tuple[str, str]] = []
    ended = threading.Event()

    class Wants(FileSystemEventHandler):
        def wants(self, path: bytes) -> bool:
            return path in wanted

        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory:
                return
            seen.append((event.event_type, os.path.basename(os.fsdecode(event.src_path))))
            if os.fsdecode(event.src_path).endswith("end.md"):
                ended.set()

    observer = make_observer()
    observer.schedule(Wants(), str(tmp_path), recursive=False, event_filter=WATCHED_EVENTS)
    observer.start()
    try:
        (tmp_path / "other.md").write_text("not tracked\n")
        temp = tmp_path / "sedX1"
        temp.write_text("new\n")
        temp.chmod(0o644)
        os.replace(temp, tmp_path / "spec.md")
        (tmp_path / "end.md").write_text("the last event\n")
        assert await anyio.to_thread.run_sync(ended.wait, 20)
    finally:
        await anyio.to_thread.run_sync(observer.stop)
        await anyio.to_thread.run_sync(observer.join, 5)
    assert ("moved", "sedX1") in seen, "the rename onto a wanted file"
    assert [s for s in seen if s[1] != "end.md"] == [("moved", "sedX1")], seen


async def test_the_watchers_watches_drop_what_its_tracked_files_do_not_need(
    tmp_path: Path,
) -> None:
    """The DriftWatcherActor's own observer is the one whose watches drop the events of
    untracked files (``sed -i``'s temp files), and keeps its tracked files' events."""
    observers: list[Any] = []

    def observer() -> Any:
        observers.append(make_observer())
        return observers[-1]

    digest = written(tmp_path / "agent_spec.md", "v1\n")
    async with anyio.create_task_group() as tg:
        inbox = await watching_with(tg, observer, tmp_path, {"agent_spec.md": digest})
        (tmp_path / "agent_spec.md").write_text("v2, by hand\n")
        await told(inbox)  # its watch's thread reads events: the watch is in place
        groups = [emitter._inotify for emitter in observers[0].emitters]
        tg.cancel_scope.cancel()
    here = [g for g in groups if g.path == os.fsencode(tmp_path)]
    assert here and all(isinstance(g, _WantingGroup) for g in groups)
    assert here[0].wants(os.fsencode(tmp_path / "agent_spec.md"))
    assert not here[0].wants(os.fsencode(tmp_path / "sedX1"))
