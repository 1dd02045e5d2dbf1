"""transformer_lab.selfcheck.zygote: a worker the zygote forked is as confined as a fresh one.

It holds no capability and cannot gain one, cannot reach the zygote or another worker, sees the
same files, inherits nothing from the submission graded before it, and a dead zygote, or a
killed grader, costs no row and leaves nothing behind."""

import contextlib
import os
import signal
import subprocess
import sys
import time

import pytest

from selfcheck.processes import processes
from selfcheck.solutions import SOLUTION, with_body, write
from selfcheck.test_view import LIST_EVERYTHING
from transformer_lab.selfcheck import Limits, check_file, zygote
from transformer_lab.selfcheck.grading import csv_rows, grade_folder
from transformer_lab.selfcheck.isolation import BUBBLEWRAP, isolation
from transformer_lab.selfcheck.worker import RemoteFunction, Worker, forking_workers
from transformer_lab.selfcheck.zygote import ZYGOTE_MARK

pytestmark = pytest.mark.skipif(
    isolation().level != BUBBLEWRAP or not zygote.wanted(),
    reason="the zygote forks bubblewrap workers only (or SELFCHECK_ZYGOTE=0)",
)

MINUTE = Limits(seconds=60)


def call(worker: Worker, name: str, *args):
    worker.begin_check(MINUTE.seconds)
    return RemoteFunction(worker, name).call(*args).result


PROBE = """
import ctypes, os, signal

LIBC = ctypes.CDLL(None, use_errno=True)


class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def probe(targets, own_group):
    header, data = Header(0x20080522, 0), (Data * 2)()
    LIBC.capget(ctypes.byref(header), data)
    seen = {
        "capabilities": [[d.effective, d.permitted, d.inheritable] for d in data],
        "bounding": [c for c in range(64) if LIBC.prctl(23, c, 0, 0, 0) == 1],
        "no_new_privs": LIBC.prctl(39, 0, 0, 0, 0),
        "uid": [os.getuid(), os.geteuid(), os.getgid()],
        "ppid": os.getppid(),
        "own_session": os.getsid(0) == os.getpid(),
        "descriptors": [fd for fd in range(1024) if _open(fd)],
        "unshare": [LIBC.unshare(flag) for flag in (0x10000000, 0x00020000, 0x40000000)],
        "mount": LIBC.mount(b"none", b"/tmp", b"tmpfs", 0, None),
        "setns": [LIBC.setns(fd, 0) for fd in (0, 3)],
        "signalled": [],
    }
    signal.signal(signal.SIGUSR1, lambda *_: None)
    if own_group:  # the zygote's group, had the worker not left it (a fresh one's sandbox)
        os.kill(0, signal.SIGUSR1)
    for pid in targets:
        try:
            os.kill(pid, signal.SIGUSR1)
            seen["signalled"].append(pid)
        except OSError:
            pass
    return seen


def _open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False


def wait():
    import time
    time.sleep(30)
"""


def test_a_forked_worker_holds_no_capability_and_reaches_nothing_outside(tmp_path):
    """No capability (capget, bounding set), NO_NEW_PRIVS, no new namespace nor mount, no
    descriptor beyond a fresh worker's, uid 65534, its parent outside its PID namespace, and no
    signal reaches the zygote or another worker (kill(0) included: a session of its own)."""
    path = write(tmp_path, "student.py", PROBE)
    with Worker(path, ["probe"], MINUTE) as worker:
        worker.start()
        fresh = call(worker, "probe", [], False)
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda *_: received.append(1))
    try:
        with forking_workers(), Worker(path, ["probe", "wait"], MINUTE) as other:
            other.start()
            with Worker(path, ["probe"], MINUTE) as worker:
                worker.start()
                assert worker.forked_pid and other.forked_pid
                zygote_pid = zygote.service().zygote.process.pid
                targets = [zygote_pid, other.forked_pid, os.getpid()]
                seen = call(worker, "probe", targets, True)
            assert (
                call(other, "probe", [], False)["uid"] == [65534] * 3
            )  # still alive and answering
            assert zygote.service().zygote.process.poll() is None
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert isinstance(seen, dict), seen
    assert seen["capabilities"] == [[0, 0, 0], [0, 0, 0]]
    assert seen["bounding"] == [] and seen["no_new_privs"] == 1
    assert seen["uid"] == [65534] * 3
    assert seen["ppid"] == 0 and seen["own_session"]
    assert seen["descriptors"][:5] == [0, 1, 2, 3, 4]
    assert len(seen["descriptors"]) == len(fresh["descriptors"])
    assert all(code == -1 for code in seen["unshare"]), seen["unshare"]
    assert seen["mount"] == -1 and seen["setns"] == [-1, -1]
    assert seen["signalled"] == [] and not received
    for key in ("capabilities", "bounding", "no_new_privs", "uid", "unshare", "mount"):
        assert fresh[key] == seen[key], key  # as confined as a fresh worker


def test_a_forked_worker_sees_the_same_files_as_a_fresh_one(tmp_path):
    path = write(tmp_path, "student.py", LIST_EVERYTHING)
    views = []
    for forked in (False, True):
        with (
            forking_workers() if forked else contextlib.nullcontext(),
            Worker(path, ["look"], MINUTE) as w,
        ):
            w.start()
            assert bool(w.forked_pid) == forked
            views.append(call(w, "look"))
    fresh, forked = views
    assert fresh["uid"] == forked["uid"] == 65534
    for key in ("folders", "readable", "tables"):
        assert sorted(fresh[key]) == sorted(forked[key]), key
    # Arguments: the same but the descriptors' numbers; the same environment and import path.
    assert sorted(t for t in fresh["told"] if "=" in t) == sorted(
        t for t in forked["told"] if "=" in t
    )


HOSTILE = """
import os, subprocess, threading, time, random
import torch


def attack():
    torch.Tensor.__add__ = lambda self, other: torch.zeros(())
    torch.matmul = lambda a, b: torch.zeros(())
    torch.manual_seed(1234)
    random.seed(1234)
    os.environ["LEFT_BEHIND"] = "yes"
    with open("left-behind", "w") as out:  # the audit hook allows its own folder only...
        out.write("x")
    for folder in ("/tmp", "/dev/shm"):  # ...a program may write in the sandbox's RAM folders
        subprocess.run(["sh", "-c", f"echo x > {folder}/left-behind"], check=True)
    threading.Thread(target=time.sleep, args=(600,)).start()
    subprocess.Popen(["sleep", "600"])
    return "done"
"""

HONEST = """
import os, threading, random
import torch


def look():
    a = torch.arange(6.0).reshape(2, 3)
    return {
        "sum": (a + 1).tolist(),
        "matmul": torch.matmul(a, a.T).tolist(),
        "torch_seed": torch.initial_seed(),
        "random": random.random(),
        "environment": sorted(os.environ),
        "files": sorted(os.listdir("/tmp") + os.listdir("/dev/shm") + os.listdir(".")),
        "threads": threading.active_count(),
        "modules": sorted(m for m in __import__("sys").modules if m.startswith("transformer_lab")),
    }
"""


def test_a_submission_inherits_nothing_from_the_one_before(tmp_path):
    """A hostile file (patched torch, files in /tmp and /dev/shm, environment, a thread and a
    child left running) first, then an honest one through the same zygote: the honest one's
    results are a fresh worker's."""
    hostile = write(tmp_path, "hostile.py", HOSTILE)
    honest = write(tmp_path, "honest.py", HONEST)
    with Worker(honest, ["look"], MINUTE) as worker:
        worker.start()
        fresh = call(worker, "look")
    with forking_workers():
        with Worker(hostile, ["attack"], MINUTE) as worker:
            worker.start()
            assert worker.forked_pid and call(worker, "attack") == "done"
        forked = []
        for _ in range(2):
            with Worker(honest, ["look"], MINUTE) as worker:
                worker.start()
                assert worker.forked_pid
                forked.append(call(worker, "look"))
    for key in ("random", "torch_seed"):  # each worker seeds its own, as a fresh one does
        assert len({fresh[key], forked[0][key], forked[1][key]}) == 3, key
        fresh.pop(key), forked[0].pop(key), forked[1].pop(key)
    forked, second = forked
    assert forked == fresh == second
    assert (
        "left-behind" not in forked["files"] and "LEFT_BEHIND" not in forked["environment"]
    )


def test_a_class_graded_through_the_zygote_gets_a_fresh_workers_results(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(folder, "a_hostile.py", SOLUTION + HOSTILE + "\nattack()\n")
    write(folder, "b_honest.py", SOLUTION)
    write(folder, "c_wrong.py", with_body(SOLUTION, "accuracy", "return 0.5"))
    forked = []
    reports = grade_folder(
        folder,
        limits=Limits(seconds=10),
        progress=lambda _: forked.append(zygote.service().forked),
    )
    assert forked == [1, 2, 3]
    for report in reports[1:]:
        fresh = check_file(folder / report.path, limits=Limits(seconds=10))
        assert [(r.name, r.status, r.code) for r in report.results] == [
            (r.name, r.status, r.code) for r in fresh.results
        ]
    assert reports[1].all_passed and not reports[2].all_passed


def test_a_dead_zygote_costs_no_row(tmp_path, monkeypatch, capsys):
    """Killed during the run, it is restarted; when its forks die before they are ready, or it
    cannot start at all, every worker starts afresh (and the grader says so in one line)."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in ("a", "b", "c", "d"):
        write(folder, f"{name}.py", SOLUTION)

    def kill_the_zygote(report):
        service = zygote.service()
        if service is not None and service.zygote is not None:
            os.kill(service.zygote.process.pid, signal.SIGKILL)

    reports = grade_folder(folder, limits=Limits(seconds=10), progress=kill_the_zygote)
    assert [r.path for r in reports] == ["a.py", "b.py", "c.py", "d.py"]
    # A worker forked just before the kill ends with it (its check says so); every file has
    # its rows, and the first (graded before any kill) passed.
    assert len(csv_rows(reports)) == 4 * len(reports[0].results) and reports[0].all_passed
    # A fork that dies before it is ready (here: every one): each file starts afresh.
    source = zygote.server_source()
    dying = source.replace("def run(job):\n", "def run(job):\n    os._exit(1)\n")
    assert dying != source
    monkeypatch.setattr(zygote, "server_source", lambda: dying)
    reports = grade_folder(folder, limits=Limits(seconds=10), jobs=2)
    assert all(r.load_error is None and r.all_passed for r in reports), reports
    # A zygote that cannot start: every file starts afresh, and the grader says so.
    monkeypatch.setattr(zygote, "server_source", lambda: "import os; os._exit(3)")
    reports = grade_folder(folder, limits=Limits(seconds=10), jobs=2)
    assert all(r.load_error is None and r.all_passed for r in reports), reports
    assert "zygote: off for the rest of this run" in capsys.readouterr().err


def test_no_zygote_when_switched_off(tmp_path, monkeypatch):
    monkeypatch.setenv(zygote.VARIABLE, "0")
    path = write(tmp_path, "student.py", SOLUTION)
    with forking_workers():
        assert zygote.service() is None
        with Worker(path, ["accuracy"], MINUTE) as worker:
            worker.start()
            assert worker.forked_pid is None


def test_a_killed_grader_leaves_no_zygote_and_no_worker(tmp_path):
    """kill -9 of the grader while a forked worker loops: the zygote (parent-death signal), its
    forks (theirs, and the holder's sandbox ending) all end."""
    folder, out = tmp_path / "class", tmp_path / "grades.csv"
    folder.mkdir()
    token = f"zygote{os.getpid()}"
    write(folder, f"{token}.py", with_body(SOLUTION, "accuracy", "while True: pass"))
    grader = subprocess.Popen(
        [sys.executable, "-m", "transformer_lab.selfcheck", "grade", ".", "--csv", str(out)]
        + ["--time-limit", "600"],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    mark = f"TRANSFORMER_LAB_TEST_SESSION={os.environ['TRANSFORMER_LAB_TEST_SESSION']}".encode()
    try:
        deadline = time.monotonic() + 120
        # The zygote and the worker it forked (a second process with the zygote's mark).
        while len(processes(ZYGOTE_MARK, mark)) < 2 or not processes(token.encode()):
            assert grader.poll() is None and time.monotonic() < deadline, "no forked worker"
            time.sleep(0.05)
        time.sleep(1)  # into the checks
        grader.kill()
        grader.wait()
        deadline = time.monotonic() + 10
        while processes(ZYGOTE_MARK, mark) or processes(token.encode()):
            assert time.monotonic() < deadline, "the zygote or a worker outlived the grader"
            time.sleep(0.1)
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
