"""The zygote: one interpreter that imports torch once and forks a ready worker into each sandbox.

A fresh worker spends most of its start importing torch (about 2 CPU-seconds), so a class of
300 submissions spent most of its grading time there. While ``grade`` runs (Linux, bubblewrap
level), one zygote imports torch and tokenizers once, with exactly a worker's environment (so
the canonical numeric mode's ATen variables are set before torch loads), and nothing of the
book; it runs no tensor operation, so it has one thread when it forks. Why join a sandbox
that bubblewrap built rather than build one here: every worker's view, namespaces and limits
still come from the one place that builds them (``isolation.worker_command``), so the view
tests keep their meaning and nothing is kept in step twice. Each worker is then:

1. **A sandbox built as before.** Bubblewrap builds the worker's exact view, namespaces and
   limits through the same supervisor (the grader's ``Popen``, its process group, its cgroup),
   but runs :data:`~transformer_lab.selfcheck.isolation.HOLDER` in the worker's place: a tiny
   interpreter that says it runs (the view is complete then), waits for the worker's status and
   ends the same way (the same exit status, or the same signal). So ``Popen``'s status is the
   worker's, and killing the supervisor's group ends the sandbox: the kernel then ends every
   process of its PID namespace, the forked worker included.
2. **A fork that joins it.** The grader sends the zygote a small JSON request (the holder's
   host pid, the worker's cgroups, its arguments and environment; no pickle either way) with
   the worker's descriptors (its socket, alarm pipe, output file, and the status pipe's write
   end) over a unix socket. The zygote forks ``C``, which moves into the worker's cgroups, joins
   the holder's namespaces with ``setns`` (bubblewrap's outer user namespace first, which owns
   the others; the holder's own user namespace last: joining it first would leave no right to
   join the others), and forks the worker ``G`` inside the sandbox's PID namespace. ``C`` stays
   outside, waits for ``G`` and writes its status for the holder; if ``C`` dies, the holder
   reads no status, exits :data:`~transformer_lab.selfcheck.isolation.HOLDER_LOST`, and the
   sandbox (with ``G``) ends.
3. **What G drops before any student code.** A session of its own (``kill(0)`` cannot reach the
   zygote's process group), every descriptor but ``/dev/null``, its output, its socket and its
   alarm pipe (0-4), every capability ``setns`` gave it (the bounding set, the ambient set,
   ``capset`` to zero) and ``NO_NEW_PRIVS``; then it checks with ``capget`` and ``prctl`` that
   none is left and exits without running anything if one is. It takes the worker's
   environment and arguments, reseeds torch's, Python's and NumPy's random state (a fresh
   interpreter draws its own; forks would share the zygote's), forgets the zygote's
   temporary-folder choice, and runs the worker's start exactly as a fresh one does (the
   sandbox's skeleton, :func:`transformer_lab.selfcheck.sandbox.main`). Its uid is the
   sandbox's (65534) through the user namespace's mapping; ``getppid()`` is 0 (its parent is
   outside the PID namespace). It cannot make a user namespace of its own either (bubblewrap's
   ``--disable-userns``, where supported, holds for every process in the sandbox). Before its
   file loads, the grader lowers its cgroup's memory cap by what it shares with the zygote but
   is not charged for (``Worker._share_memory``): its student has a fresh worker's room.

A failure never costs a row: when the zygote is dead, cannot join a sandbox, or ``G`` cannot
drop a capability, that worker starts the normal way (a fresh interpreter in bubblewrap). A
zygote that does not answer is ended and restarted for the next worker (one that answers "no"
keeps serving the other jobs); after :data:`RESTARTS` failures it stays off for the run, with
one line on the grader's error output.

Nothing outlives the grader: the zygote gets SIGKILL when the grader dies (``launcher``), ``C``
when the zygote dies (so a zygote that dies mid-run ends the checks its forks were running:
they get their rows, saying the process ended), and ``G`` when its sandbox ends, as before.

``SELFCHECK_ZYGOTE=0`` (:data:`VARIABLE`) turns it off: every worker is then a fresh
interpreter.

The zygote's command line carries :data:`ZYGOTE_MARK` (so does every process it forks), never
``WORKER_MARK``: the grader's orphan hunt (``worker.end_orphans``) is not about it, and the
tests' check for processes left behind looks for both marks.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

VARIABLE = "SELFCHECK_ZYGOTE"  # "0": no zygote, every worker a fresh interpreter
ZYGOTE_MARK = (
    b"transformer_lab.selfcheck.zygote"  # in the zygote's (and its forks') command line
)
START_SECONDS = 120.0  # the zygote's own start: importing torch on a loaded machine
REPLY_SECONDS = 30.0  # one fork into a sandbox (about 10 ms)
RESTARTS = 2  # failed zygotes per run before it stays off

# The zygote's program, run as text (``python -I -c SERVER <control fd>``), never imported: it
# must not import the book (a worker imports ``transformer_lab`` from its sandbox's skeleton).
SERVER_FILE = Path(__file__).with_name("zygote_server.py")


@functools.cache
def server_source() -> str:
    """The zygote's program; its command line carries :data:`ZYGOTE_MARK`."""
    text = SERVER_FILE.read_text(encoding="utf-8")
    if ZYGOTE_MARK.decode() not in text or b"selfcheck.sandbox" in text.encode():
        raise RuntimeError(f"{SERVER_FILE} must name {ZYGOTE_MARK!r} and not the worker")
    return text


class ZygoteFailed(Exception):
    """The zygote could not fork this worker (the caller starts a fresh one instead); ``dead``:
    it did not answer (it is ended and restarted), rather than said why not."""

    def __init__(self, why: str, dead: bool = True):
        super().__init__(why)
        self.dead = dead


class Zygote:
    """One zygote process and its control socket (see the module docstring)."""

    def __init__(self, environment: dict[str, str], prefix: list[str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        python = os.path.abspath(sys.executable)
        try:
            self.process = subprocess.Popen(
                [*prefix, python, "-I", "-c", server_source(), str(theirs.fileno())],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                cwd="/",
                env=environment,
            )
        finally:
            theirs.close()
        self.socket = ours
        self.ready = False

    def _answer(self, seconds: float) -> dict:
        readable, _, _ = select.select([self.socket], [], [], seconds)
        if not readable:
            raise ZygoteFailed(f"no answer in {seconds:g} s")
        try:
            data = self.socket.recv(65536)
            answer = json.loads(data) if data else None
        except (OSError, ValueError) as error:
            raise ZygoteFailed(f"unreadable answer ({error})") from None
        if not isinstance(answer, dict):
            raise ZygoteFailed("the zygote ended")
        return answer

    def fork_worker(self, request: dict, fds: list[int]) -> int:
        """Fork a worker into the sandbox of ``request["holder"]``; its host pid."""
        if not self.ready:
            if self._answer(START_SECONDS).get("ready") is not True:
                raise ZygoteFailed("the zygote did not start")
            self.ready = True
        try:
            socket.send_fds(self.socket, [json.dumps(request).encode()], fds)
        except OSError as error:
            raise ZygoteFailed(f"the zygote is gone ({error})") from None
        answer = self._answer(REPLY_SECONDS)
        pid = answer.get("pid")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
            raise ZygoteFailed(str(answer.get("error", "no pid"))[:500], dead=False)
        return pid

    def close(self) -> None:
        """End the zygote and its forks outside the sandboxes (their sandboxes end with them)."""
        self.socket.close()
        with contextlib.suppress(OSError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


class Service:
    """The zygote of one ``grade`` run: started at once, restarted after a failure (at most
    :data:`RESTARTS` times; then off for the run, said in one line)."""

    def __init__(self, environment: dict[str, str], prefix: list[str]):
        self.environment, self.prefix = environment, prefix
        self.lock = threading.Lock()  # one request at a time: one zygote serves every job
        self.failures = 0
        self.forked = 0  # workers forked (the tests check that the zygote was used)
        self.zygote: Zygote | None = Zygote(environment, prefix)

    def fork_worker(self, request: dict, fds: list[int]) -> int:
        """The forked worker's host pid (see :meth:`Zygote.fork_worker`)."""
        with self.lock:
            if self.zygote is None:
                if self.failures > RESTARTS:
                    raise ZygoteFailed("off for this run")
                self.zygote = Zygote(self.environment, self.prefix)
            try:
                pid = self.zygote.fork_worker(request, fds)
                self.forked += 1
                return pid
            except ZygoteFailed as failed:
                # A zygote that answers "no" keeps serving (ending it would end the workers it
                # forked for the other jobs); one that does not answer is ended, and restarted
                # for the next worker.
                if failed.dead or self.failures >= RESTARTS:
                    self.zygote.close()
                    self.zygote = None
                self.failures += 1
                if self.failures > RESTARTS:
                    print(
                        f"zygote: off for the rest of this run after {self.failures} "
                        f"failures (the last: {failed}); every worker starts afresh",
                        file=sys.stderr,
                        flush=True,
                    )
                raise

    def close(self) -> None:
        with self.lock:
            zygote, self.zygote = self.zygote, None
            self.failures = RESTARTS + 1
        if zygote is not None:
            zygote.close()


_SERVICES: list[Service] = []


def wanted() -> bool:
    """Linux, and not turned off with ``SELFCHECK_ZYGOTE=0``."""
    return sys.platform.startswith("linux") and os.environ.get(VARIABLE, "1") != "0"


@contextlib.contextmanager
def serving(environment: dict[str, str], prefix: list[str]) -> Iterator[Service | None]:
    """A zygote for the workers started inside the block (none when not :func:`wanted`)."""
    if not wanted():
        yield None
        return
    service = Service(environment, prefix)
    _SERVICES.append(service)
    try:
        yield service
    finally:
        _SERVICES.remove(service)
        service.close()


def service() -> Service | None:
    """The zygote service of the ``grade`` run in progress, if any."""
    return _SERVICES[-1] if _SERVICES else None


def wait_ready(read_fd: int, process: subprocess.Popen, seconds: float) -> None:
    """Wait for the holder's byte on ``read_fd`` (its sandbox is built); ``ZygoteFailed`` if
    the sandbox ended or took over ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        readable, _, _ = select.select([read_fd], [], [], 0.1)
        if readable:
            if os.read(read_fd, 1) == b"r":
                return
            raise ZygoteFailed("the sandbox ended before it was ready")
        if process.poll() is not None:
            raise ZygoteFailed("the sandbox ended before it was ready")
    raise ZygoteFailed(f"the sandbox was not ready in {seconds:g} s")
