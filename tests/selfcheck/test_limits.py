"""Limits the kernel enforces on a worker, each met by a hostile file.

In bubblewrap the worker's ``/tmp`` (its working folder too) and ``/dev/shm`` are RAM file
systems of ``TMPFS_MB`` each; where this process may make a cgroup, the whole worker (every
process, and those files) has a memory cap and at most ``PIDS_MAX`` processes; every process
has ``RLIMIT_CPU``, ``RLIMIT_FSIZE`` and ``RLIMIT_AS``. The tests that take ``start`` run with a
fresh worker and with one the zygote forked."""

import signal
import subprocess
import sys

import pytest

from selfcheck.solutions import write
from transformer_lab.selfcheck import Limits
from transformer_lab.selfcheck.isolation import (
    BUBBLEWRAP,
    PIDS_MAX,
    TMPFS_MB,
    isolation,
    worker_cgroup,
)
from transformer_lab.selfcheck.worker import RemoteFunction, Worker

needs_bubblewrap = pytest.mark.skipif(
    isolation().level != BUBBLEWRAP, reason="bubblewrap does not work on this machine"
)


def cgroups_here() -> bool:
    cgroup = worker_cgroup(100)
    if cgroup is None:
        return False
    cgroup.remove()
    return True


needs_cgroup = pytest.mark.skipif(
    not cgroups_here(), reason="this process may not make a cgroup here"
)


MINUTE = Limits(seconds=60)


def run(tmp_path, source: str, limits: Limits = MINUTE):
    """The result of the file's ``hog()`` in a worker (or the line that ended it)."""
    path = write(tmp_path, "student.py", source)
    with Worker(path, ["hog"], limits) as worker:
        worker.start()
        worker.begin_check(limits.seconds)
        try:
            return RemoteFunction(worker, "hog").call().result
        except Exception as error:  # noqa: BLE001 - the worker was ended: that is a limit too
            return str(error)


FILL_RAM_FILE_SYSTEMS = """
import os


def hog():
    total = 0
    for folder in ("/tmp", "/dev/shm", "."):
        for i in range(200):  # files of 1 MB: no single file reaches the file-size cap
            try:
                with open(os.path.join(folder, f"fill-{i}"), "wb") as out:
                    out.write(b"x" * 2**20)
                total += 2**20
            except OSError:
                break
    return total
"""


@needs_bubblewrap
def test_files_in_tmp_and_dev_shm_are_capped(tmp_path, start):
    written = run(tmp_path, FILL_RAM_FILE_SYSTEMS)
    assert isinstance(written, int), written
    # Before: the working folder was on the machine's disk (200 MB here; an attack wrote 955 MB).
    assert written <= 2 * TMPFS_MB * 2**20


FORK_MANY = """
import os, time


def hog():
    started = 0
    for _ in range(150):
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            time.sleep(20)
            os._exit(0)
        started += 1
    return started
"""


@needs_bubblewrap
@needs_cgroup
def test_the_number_of_processes_is_capped(tmp_path, start):
    started = run(tmp_path, FORK_MANY)
    assert isinstance(started, int), started
    assert started < PIDS_MAX  # 150 before (an attack reached 402)


FORKED_MEMORY = """
import os, time


def hog():
    read, write = os.pipe()
    for _ in range(5):
        if os.fork() == 0:
            block = bytearray(180 * 2**20)  # each child under its own address-space cap
            for i in range(0, len(block), 4096):
                block[i] = 1
            os.write(write, os.getpid().to_bytes(4, "little"))
            time.sleep(8)
            os._exit(0)
    os.close(write)
    filled, ended, held = set(), set(), 0  # held: the most children alive with a full block
    while len(filled) < 5:
        data = os.read(read, 4)
        if len(data) < 4:
            break
        filled.add(int.from_bytes(data, "little"))
        while True:  # the children the kernel ended (for memory) hold nothing any more
            try:
                pid = os.waitpid(-1, os.WNOHANG)[0]
            except ChildProcessError:
                break
            if pid == 0:
                break
            ended.add(pid)
        held = max(held, len(filled - ended))
    return held
"""


@needs_bubblewrap
@needs_cgroup
def test_the_memory_of_all_processes_together_is_capped(tmp_path, start):
    held = run(tmp_path, FORKED_MEMORY, Limits(seconds=60, memory_mb=200))
    # 5 x 180 MB beside the worker is far over 200 MB + BASE_MB: at most three hold it at once
    # (the kernel ends one when the next fills its block; counted, not once but while alive).
    assert not isinstance(held, int) or held <= 3, held


SPIN = """
import sys
sys.path.insert(0, sys.argv[1])
from transformer_lab.selfcheck.sandbox import _caps

_caps({"output_bytes": 10**6, "memory_mb": None, "cpu_seconds": 1})
while True:
    pass
"""


def test_cpu_time_is_capped_by_the_kernel():
    from transformer_lab.selfcheck.isolation import skeleton

    done = subprocess.run(
        [sys.executable, "-I", "-c", SPIN, skeleton()], timeout=60, check=False
    )
    assert done.returncode == -signal.SIGXCPU


OUT_OF_CPU = """
import resource


def hog():
    resource.setrlimit(resource.RLIMIT_CPU, (1, 5))  # the worker's own cap, lowered
    while True:
        pass
"""


def test_a_worker_out_of_cpu_time_is_said_to_be(tmp_path, start):
    """SIGXCPU ends the worker; its name reaches the report, through the zygote's relay too."""
    said = run(tmp_path, OUT_OF_CPU)
    assert "killed by SIGXCPU (out of CPU time)" in str(said), said
