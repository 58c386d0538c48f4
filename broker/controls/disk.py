"""Storage faults: the disk fails the next append or fsync of a broker's logs.

Made at the OS boundary, as tests/broker/test_storage_errors.py makes a disk fail: storage's
view of the `os` module (and its `syncfs`) is wrapped so that a `writev` on a partition's
`.log` file, or an `fdatasync`/`fsync`/`syncfs` of a file under the data directory, fails
with EIO. Everything after that is storage's and the broker's own handling, as on a real
failing disk:

  append   the write fails, storage cuts the segment back to where it was, and the request
           that appended (a Produce partition, an OffsetCommit) is answered
           KAFKA_STORAGE_ERROR. The log stays online: the next append works.
  fsync    the group-commit fsync fails: the writes waiting for it (acks=all, OffsetCommit)
           are answered KAFKA_STORAGE_ERROR, and the logs it covered go offline until the
           broker restarts (Kafka takes the log directory offline: after a failed fsync the
           kernel may have dropped the dirty pages). One syncfs covers every log of the
           file system, so a `topic` filter on an fsync fault only says which log's sync it
           waits for when there is no syncfs.

The wrapper is installed, for the whole process, when the first storage fault is armed,
and stays: until then storage calls `os` directly. Faults of several brokers in one process
(the pytest fixtures) are told apart by the data directory in the file's path
(/proc/self/fd: Linux). Fsyncs run in worker threads, so taking a fault is locked.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

from broker.controls.faults import Fault

__all__ = ["arm"]

_lock = threading.Lock()
_armed: dict[str, list[Fault]] = {}  # data directory (resolved, with a trailing /) -> faults
_installed = False


def arm(data_dir: Path, faults: list[Fault]) -> None:
    """Make `faults` (the broker's storage fault list, shared) fire on `data_dir`'s files."""
    global _installed
    with _lock:
        _armed[str(data_dir.resolve()) + os.sep] = faults
        if not _installed:
            _install()
            _installed = True


def disarm(data_dir: Path) -> None:
    with _lock:
        _armed.pop(str(data_dir.resolve()) + os.sep, None)


def _take(fd: int, kind: str) -> bool:
    """Whether this call on `fd` is to fail (a matching fault's count taken)."""
    if not _armed:
        return False
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    with _lock:
        for prefix, faults in _armed.items():
            if not path.startswith(prefix):
                continue
            rel = path[len(prefix) :]
            for fault in faults:
                if fault.storage != kind or not _matches(fault, rel, kind):
                    continue
                fault.count -= 1
                fault.fired += 1
                if fault.count <= 0:
                    faults.remove(fault)
                return True
    return False


def _matches(fault: Fault, rel: str, kind: str) -> bool:
    directory, _, name = rel.partition(os.sep)
    if kind == "append" and not name.endswith(".log"):
        return False
    if fault.topic is None or kind == "fsync":
        return True
    topic, _, partition = directory.rpartition("-")
    if topic != fault.topic:
        return False
    return fault.partition is None or partition == str(fault.partition)


def _fail() -> OSError:
    return OSError(errno.EIO, os.strerror(errno.EIO) + " (injected storage fault)")


class _FailingOs:
    """The `os` module as storage sees it once a storage fault was armed."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def writev(self, fd: int, buffers: Any) -> int:
        if _take(fd, "append"):
            raise _fail()
        return int(self._real.writev(fd, buffers))

    def fdatasync(self, fd: int) -> None:
        if _take(fd, "fsync"):
            raise _fail()
        self._real.fdatasync(fd)

    def fsync(self, fd: int) -> None:
        if _take(fd, "fsync"):
            raise _fail()
        self._real.fsync(fd)


def _install() -> None:
    import storage.log
    import storage.segment

    real_syncfs = storage.segment.syncfs

    def syncfs(fd: int) -> bool:
        if _take(fd, "fsync"):
            raise _fail()
        return real_syncfs(fd)

    failing = _FailingOs(os)
    storage.segment.os = failing  # type: ignore[assignment]
    storage.log.os = failing  # type: ignore[assignment]
    storage.log.syncfs = syncfs
