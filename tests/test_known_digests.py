"""session/known_digests.py: a file's digest is known again only while ``lstat`` shows
it as it was read, and only if a later change could not hide in the same clock tick."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from session.known_digests import (
    COARSE_MARGIN_NS,
    FINE_MARGIN_NS,
    STAMPING_FILE_SYSTEMS,
    Known,
    KnownDigests,
    StampingDevices,
    file_systems,
    margin_ns,
    settled,
)

LATER = 10 * 10**9
"""Ten seconds: a read that long after the file's last change."""
KNOWN = Known("a" * 64, 0o644, 3)


def remembered(path: Path, known: KnownDigests, after_ns: int = LATER) -> os.stat_result:
    info = os.lstat(path)
    known.remember(str(path), info, KNOWN, info.st_ctime_ns + after_ns)
    return info


def test_a_file_unchanged_since_it_was_read_is_known(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    remembered(path, known)
    assert known.lookup(str(path)) == KNOWN


def test_a_file_changed_in_the_tick_it_was_read_in_is_not_kept(tmp_path: Path) -> None:
    """A write in the same tick of the file system's clock would leave its ctime as the
    read saw it: such a file is read again next time."""
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    remembered(path, known, after_ns=FINE_MARGIN_NS // 2)
    assert known.lookup(str(path)) is None and len(known) == 0


def test_a_file_rewritten_with_as_many_bytes_and_its_mtime_put_back_is_not_known(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    info = remembered(path, known)
    time.sleep(0.02)  # the write must come a tick of the clock later, or it is a racy case
    path.write_text("v2\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert os.lstat(path).st_mtime_ns == info.st_mtime_ns
    assert known.lookup(str(path)) is None


def test_a_file_replaced_by_a_symlink_to_the_same_content_is_not_known(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    (tmp_path / "elsewhere.md").write_text("v1\n")
    known = KnownDigests()
    remembered(path, known)
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere.md")
    assert known.lookup(str(path)) is None


def test_a_file_renamed_over_is_not_known(tmp_path: Path) -> None:
    """An editor's atomic save: same name, new inode."""
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    remembered(path, known)
    (tmp_path / "spec.md.tmp").write_text("v2\n")
    os.replace(tmp_path / "spec.md.tmp", path)
    assert known.lookup(str(path)) is None


def test_a_file_whose_mode_changed_is_not_known(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    remembered(path, known)
    path.chmod(0o600)
    assert known.lookup(str(path)) is None


def test_a_deleted_file_is_not_known(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests()
    remembered(path, known)
    path.unlink()
    assert known.lookup(str(path)) is None


def test_the_oldest_file_is_forgotten_past_the_limit(tmp_path: Path) -> None:
    known = KnownDigests(limit=2)
    paths = [tmp_path / f"f{n}" for n in range(3)]
    for path in paths:
        path.write_text("x")
        remembered(path, known)
    assert len(known) == 2
    assert [known.lookup(str(p)) for p in paths] == [None, KNOWN, KNOWN]


def test_whole_millisecond_stamps_tell_a_slow_clock() -> None:
    assert margin_ns(1_700_000_000_000_000_000) == COARSE_MARGIN_NS
    assert margin_ns(1_700_000_000_001_000_000) == COARSE_MARGIN_NS
    assert margin_ns(1_700_000_000_001_234_567) == FINE_MARGIN_NS


def test_a_file_is_settled_a_margin_after_its_last_change(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    info = os.lstat(path)
    ctime = info.st_ctime_ns
    assert settled(info, ctime + margin_ns(ctime) + 1)
    assert not settled(info, ctime + margin_ns(ctime))


def test_a_file_of_two_second_stamps_is_not_settled_within_a_tick_past_them() -> None:
    """FAT stamps a change with the even second before it, from a clock that lags
    ``time.time_ns()`` by up to a tick: a write just after a read 2 s and 1 ms past the
    last change's stamp can get that same stamp, so the read is not settled."""
    ctime = 1_700_000_000 * 10**9  # an even second, as FAT stamps
    info = os.stat_result((0o100644, 1, 1, 1, 0, 0, 3, 0, 0, 0), {"st_ctime_ns": ctime})
    assert not settled(info, ctime + 2 * 10**9 + 1_000_000)


MOUNTINFO = """\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 25 0:27 / /dev/shm rw,relatime shared:3 master:1 - tmpfs tmpfs rw
40 27 0:40 / /home/me/nfs rw,relatime - nfs4 server:/export rw,vers=4.2
41 27 0:41 / /home/me/my\\040box rw,nosuid - fuse.sshfs me@box: rw
42 27 8:17 / /media/usb rw,relatime - vfat /dev/sdb1 rw
not a mount line
"""


def test_the_mounts_say_each_device_s_file_system() -> None:
    assert file_systems(MOUNTINFO) == {
        os.makedev(0, 21): "proc",
        os.makedev(254, 0): "ext4",
        os.makedev(0, 27): "tmpfs",
        os.makedev(0, 40): "nfs4",
        os.makedev(0, 41): "fuse.sshfs",
        os.makedev(8, 17): "vfat",
    }


def test_only_local_file_systems_that_stamp_every_change_are_trusted(tmp_path: Path) -> None:
    """A network file system's stat can be cached while another machine writes; a FUSE
    one says what its program says; FAT's ctime is its mtime."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO)
    stamping = StampingDevices(str(mountinfo))
    assert [stamping(os.makedev(*d)) for d in ((254, 0), (0, 27))] == [True, True]
    assert [stamping(os.makedev(*d)) for d in ((0, 40), (0, 41), (8, 17), (0, 21))] == [
        False, False, False, False
    ]


def test_a_device_mounted_since_is_looked_up_again(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(MOUNTINFO)
    stamping = StampingDevices(str(mountinfo))
    assert not stamping(os.makedev(259, 1))
    mountinfo.write_text(MOUNTINFO + "50 27 259:2 / /data rw - xfs /dev/nvme0n1p2 rw\n")
    assert stamping(os.makedev(259, 2))


def test_with_no_mounts_to_read_nothing_is_trusted(tmp_path: Path) -> None:
    assert not StampingDevices(str(tmp_path / "none"))(os.makedev(254, 0))


def test_a_file_on_a_file_system_that_does_not_stamp_every_change_is_not_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "spec.md"
    path.write_text("v1\n")
    known = KnownDigests(stamping=lambda device: False)
    remembered(path, known)
    assert known.lookup(str(path)) is None and len(known) == 0


def test_this_machine_s_own_disk_is_trusted(tmp_path: Path) -> None:
    types = file_systems(Path("/proc/self/mountinfo").read_text())
    device = os.stat(tmp_path).st_dev
    if types.get(device) not in STAMPING_FILE_SYSTEMS:
        pytest.skip(f"tmp_path is on {types.get(device)}, not a stamping file system")
    assert StampingDevices()(device)
