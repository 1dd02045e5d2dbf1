"""Student code runs in a worker process, so that it cannot hang, end or fool the self-check.

The worker (:mod:`transformer_lab.selfcheck.sandbox`) is a fresh interpreter started in the
strongest sandbox the machine offers (:mod:`transformer_lab.selfcheck.isolation`), on a copy of
the student's file in a fresh temporary folder. The checks, and the reference implementations
they compare with, stay in this process, which never imports the student's file nor runs any
object it returned: a returned tokenizer stays in the worker and :class:`RemoteObject` calls its
methods there. Each check has a time limit: a worker that overruns it is killed with everything
it started, and a fresh one is started for the next check. ``sys.exit``, ``os._exit``, a crash or
``KeyboardInterrupt`` in student code end at most that check. The worker's output goes to a
capped file (a flood of prints cannot reach the report), and on Linux its memory is capped too.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import types
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from transformer_lab.selfcheck import zygote
from transformer_lab.selfcheck.core import (
    ENDED,
    TIMED_OUT,
    Failed,
    Finding,
    StudentNotDone,
    StudentRaised,
    StudentStopped,
)
from transformer_lab.selfcheck.errors import summarise_exception
from transformer_lab.selfcheck.execution import (
    GradientReport,
    Returned,
    StudentFunction,
    load_source,
)
from transformer_lab.selfcheck.isolation import (
    BUBBLEWRAP,
    HOLDER,
    SANDBOX_ENVIRONMENT,
    SANDBOX_SKELETON,
    WORKER_START,
    data_folders,
    hidden_paths,
    isolation,
    launcher,
    remove_folder,
    runs_folder,
    seen_paths,
    with_imports,
    worker_cgroup,
    worker_command,
)
from transformer_lab.selfcheck.sandbox import BOOK_PREFIX, STUDENT_MODULE
from transformer_lab.selfcheck.transport import (
    Malformed,
    TooLarge,
    budget,
    decode,
    unpack,
)

DEFAULT_SECONDS = 10.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_OUTPUT_BYTES = 4_000_000
# A fresh worker's own start (importing torch, arming its defences), before it says it is ready;
# the student's file then has the check's time limit to load.
START_SECONDS = 60.0
MAX_REPLY_BYTES = 64 * 2**20  # a bigger reply is refused (a flood of data, not an answer)


_LIVE: set = set()  # workers with a process, so that Ctrl-C can end them all
# Held while a worker is launched and while Ctrl-C signals the live ones: a worker is either
# launched before Ctrl-C (and signalled) or refused after it, never started unseen in between.
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()
_SUBREAPER: list[bool] = []  # [True] once this process adopts orphaned worker processes
WORKER_MARK = b"transformer_lab.selfcheck.sandbox"  # in every worker's command line


def kill_all_workers() -> None:
    """End every worker of this process (Ctrl-C while grading) and start no new one until
    :func:`allow_workers`.

    Only signals: each worker's own thread, waiting on its socket, wakes as the process dies and
    cleans up itself (closing a socket another thread is polling would not wake that thread)."""
    with _LIVE_LOCK:
        _STOPPING.set()
        for worker in _LIVE:
            worker.signal_kill()


def allow_workers() -> None:
    _STOPPING.clear()


def stopping() -> bool:
    """Has :func:`kill_all_workers` been called (and no :func:`allow_workers` since)?"""
    return _STOPPING.is_set()


def _become_subreaper() -> bool:
    """Linux: orphaned descendants of our workers (a ``setsid`` daemon) become our children, so
    that :func:`end_orphans` can end them (the ``process`` level has no PID namespace)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None).prctl(36, 1) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def end_orphans(rounds: int = 20) -> None:
    """End every orphaned worker process adopted by this one (a daemon a student started), and
    any it started meanwhile."""
    me = str(os.getpid())
    for _ in range(rounds):
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                command = (entry / "cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if fields[1] == me and WORKER_MARK in command:
                with _LIVE_LOCK:
                    ours = any(
                        w.process and w.process.pid == int(entry.name) for w in _LIVE
                    )
                if not ours:
                    found.append(int(entry.name))
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _descendant(root: int, matches) -> int | None:
    """The host process id of the first descendant of process ``root`` whose argv
    ``matches``; None off Linux."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if matches(argv):
            return pid
        todo += children.get(pid, [])
    return None


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks after boot; with the pid, it names one
    process), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _is_worker(argv: list[bytes]) -> bool:
    return argv[1:3] == [b"-I", b"-c"] and len(argv) > 3 and WORKER_MARK in argv[3]


def _is_holder(argv: list[bytes]) -> bool:
    return argv[1:4] == [b"-I", b"-S", b"-c"] and argv[4:5] == [HOLDER.encode()]


def worker_pid(root: int) -> int | None:
    """The host process id of the worker interpreter that process ``root`` (its supervisor)
    started, through bubblewrap or not: the descendant whose command line is the worker's
    (``python -I -c <start>``, the start naming the sandbox module). None off Linux, and for
    a worker the zygote forked (not a descendant: ``Worker.forked_pid`` holds it)."""
    return _descendant(root, _is_worker)


@dataclass(frozen=True)
class Limits:
    """Per-check time limit; memory the worker may add to its size at start (Linux; None = no
    cap); bytes of output kept per file."""

    seconds: float = DEFAULT_SECONDS
    memory_mb: int | None = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_BYTES


def load_module(path: Path | str, name: str = STUDENT_MODULE) -> types.ModuleType:
    """Import a Python file by path (without running its ``if __name__ == "__main__"`` block),
    in this process: for trusted code only."""
    return load_source(path, name)


def cpu_seconds(seconds: float, checks: int) -> int:
    """The CPU time one worker may use (``RLIMIT_CPU``): its start, and each of its ``checks``
    with two cores busy for its whole time limit."""
    return int(START_SECONDS + 2 * seconds * max(1, checks)) + 1


class LoadFailed(Exception):
    """The student's file could not be loaded (one summarised line)."""


# ---------------------------------------------------------------------------------------------
# The parent's side
# ---------------------------------------------------------------------------------------------


def describe_exit(exitcode: int | None) -> str:
    """Why a worker ended, in words a student can act on."""
    if exitcode is None:
        return "the process running your code stopped answering"
    if exitcode >= 0:
        return (
            f"your code ended the process that ran it (exit status {exitcode}): os._exit() or a crash; "
            "return the result instead"
        )
    try:
        name = signal.Signals(-exitcode).name
    except ValueError:
        name = f"signal {-exitcode}"
    why = {
        "SIGKILL": " (out of memory?)",
        "SIGSEGV": " (a crash in native code)",
        "SIGXFSZ": " (too much output)",
        "SIGXCPU": " (out of CPU time)",
        "SIGABRT": " (an abort in native code)",
    }.get(name, "")
    return f"the process running your code was killed by {name}{why}"


class Worker:
    """One worker process for one student file, restarted after a time-out or a crash.

    ``hidden``: more paths the worker must not see (the submissions folder, the results).
    ``book_modules``: package modules the student's code may import (a check whose exercise
    builds on the book's classes, e.g. ``transformer_lab.char_transformer``); they and what they
    import are real in that worker, and the book's data folder is readable when they load it.
    ``library_attention``: leave PyTorch's attention usable (no tripwires for it)."""

    def __init__(
        self,
        path: Path | str,
        names: list[str],
        limits: Limits = Limits(),
        hidden: tuple[str, ...] = (),
        book_modules: tuple[str, ...] = (),
        library_attention: bool = False,
    ):
        self.path, self.names, self.limits = Path(path), list(names), limits
        self.book_modules = tuple(book_modules)
        self.library_attention = library_attention
        self.isolation = isolation()
        self.hidden = hidden_paths((str(self.path.resolve().parent), *hidden))
        self.visible = data_folders(self.book_modules)
        handle, self.output_path = tempfile.mkstemp(suffix=".out", dir=runs_folder())
        os.close(handle)
        self.read_offset = 0
        self.process: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.alarm = -1
        self.workdir: str | None = None
        self.functions: dict[str, dict] = {}
        self.deadline = float("inf")
        self.limit = limits.seconds
        self.alarms: list[str] = []
        self.prepared = False
        self.cgroup = None
        # The worker's host pid when the zygote forked it (not a descendant of self.process).
        self.forked_pid: int | None = None

    # -- life cycle -----------------------------------------------------------------------------

    def _launch(self, fresh: bool = False) -> None:
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                raise LoadFailed("interrupted (Ctrl-C) before the file was checked")
            self._popen(fresh)
            _LIVE.add(self)

    def _popen(self, fresh: bool = False) -> None:
        if self.isolation.level != BUBBLEWRAP and not _SUBREAPER:
            _SUBREAPER.append(_become_subreaper())
        self.workdir = tempfile.mkdtemp(prefix="run-", dir=runs_folder())
        copy = Path(self.workdir) / self.path.name
        shutil.copyfile(self.path, copy)
        self.cgroup = worker_cgroup(self.limits.memory_mb)
        level = self.isolation.level
        # In bubblewrap the worker's view holds none of the hidden paths, so it is not told
        # them; nor where the data lives on the host (its arguments name no host path).
        seen_data = seen_paths(level, self.visible)
        config = {
            "names": self.names,
            "limits": {
                "output_bytes": self.limits.output_bytes,
                "memory_mb": self.limits.memory_mb,
                "cpu_seconds": cpu_seconds(self.limits.seconds, len(self.names)),
            },
            "hidden": [] if level == BUBBLEWRAP else self.hidden,
            "level": level,
            "book_modules": with_imports(self.book_modules),
            "library_tripwires": not self.library_attention,
            "visible": seen_data,
        }
        env = {
            **_clean_environment(seen_data),
            "TMPDIR": self.workdir,
            "HOME": self.workdir,
        }
        self.alarms = []  # a fresh worker: what the last one reported is not this one's
        service = zygote.service() if level == BUBBLEWRAP and not fresh else None
        if service is not None:
            try:
                self._fork(service, config, env)
                return
            except zygote.ZygoteFailed:
                pass  # this worker starts afresh; the zygote is restarted for the next one
        self._spawn(config, env)

    def _command(self, arguments: list[str], holder: tuple[int, int] | None = None):
        return worker_command(
            self.isolation.level,
            self.workdir,
            self.hidden,
            arguments,
            self.book_modules,
            tuple(self.visible),
            self.cgroup,
            self.path.name,
            holder,
        )

    def _spawn(self, config: dict, env: dict[str, str]) -> None:
        """A fresh interpreter (in a sandbox at the bubblewrap level)."""
        ours, theirs = socket.socketpair()
        alarm_read, alarm_write = os.pipe()
        fcntl.fcntl(alarm_read, fcntl.F_SETFL, os.O_NONBLOCK)
        command, seen = self._command(
            [str(theirs.fileno()), str(alarm_write), "", json.dumps(config)]
        )
        command[-2] = os.path.join(seen, self.path.name)
        with open(self.output_path, "ab") as output:
            self.process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                pass_fds=(theirs.fileno(), alarm_write),
                start_new_session=True,
                cwd=self.workdir,
                env=env,
            )
        theirs.close()
        os.close(alarm_write)
        self.conn = Connection(ours.detach())
        self.alarm = alarm_read
        self.forked_pid = None

    def _fork(self, service: zygote.Service, config: dict, env: dict[str, str]) -> None:
        """A sandbox built by bubblewrap around a holder, and the zygote's fork inside it (see
        :mod:`transformer_lab.selfcheck.zygote`); ``ZygoteFailed`` leaves nothing running."""
        ours, theirs = socket.socketpair()
        alarm_read, alarm_write = os.pipe()
        fcntl.fcntl(alarm_read, fcntl.F_SETFL, os.O_NONBLOCK)
        ready_read, ready_write = os.pipe()
        status_read, status_write = os.pipe()
        command, seen = self._command([], holder=(ready_write, status_read))
        arguments = ["3", "4", os.path.join(seen, self.path.name), json.dumps(config)]
        request = {
            "cgroups": [str(f / "cgroup.procs") for f in self.cgroup.folders]
            if self.cgroup
            else [],
            "workdir": seen,
            "start": WORKER_START,
            "argv": [SANDBOX_SKELETON, *arguments],
            "env": {**env, **SANDBOX_ENVIRONMENT},
        }
        process = None
        try:
            with open(self.output_path, "ab") as output:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=output,
                    stderr=output,
                    pass_fds=(ready_write, status_read),
                    start_new_session=True,
                    cwd=self.workdir,
                    env=env,
                )
                os.close(ready_write)
                os.close(status_read)
                ready_write = status_read = -1
                zygote.wait_ready(ready_read, process, START_SECONDS)
                request["holder"] = holder = _descendant(process.pid, _is_holder)
                # The zygote joins the namespaces of this process, not of one that took its pid.
                request["holder_started"] = _start_time(holder) if holder else None
                if request["holder_started"] is None:
                    raise zygote.ZygoteFailed("no holder in the sandbox")
                fds = [theirs.fileno(), alarm_write, output.fileno(), status_write]
                pid = service.fork_worker(request, fds)
        except BaseException:
            if process is not None:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            ours.close()
            os.close(alarm_read)
            raise
        finally:
            theirs.close()
            for fd in (alarm_write, ready_read, ready_write, status_read, status_write):
                if fd >= 0:
                    os.close(fd)
        self.process = process
        self.conn = Connection(ours.detach())
        self.alarm = alarm_read
        self.forked_pid = pid

    def prepare(self) -> None:
        """Start the worker's interpreter now, so that a later :meth:`start` finds it ready: it
        imports torch and the checks' code, then waits. The student's file is not read before
        :meth:`start` asks for it, so a prepared worker runs none of the student's code."""
        self.kill()
        self._launch()
        self.prepared = True

    def start(self) -> dict[str, dict]:
        """Start a worker (or take the prepared one) and load the file; ``LoadFailed`` if it
        does not load in time."""
        if not (self.prepared and self.alive):
            self.kill()
            self._launch()
        self.prepared = False
        forked = self.forked_pid is not None  # (a failed start's kill forgets it)
        try:
            self._ready()
            self._share_memory()
        except (LoadFailed, OSError, ValueError):
            if not forked:
                raise
            # The zygote's fork did not get ready, or its memory cap could not be set: this
            # worker starts afresh (a failure of the zygote costs no row).
            self.kill()
            self._launch(fresh=True)
            self._ready()
        try:
            self.conn.send_bytes(pickle.dumps(("load", self._address_cap())))
        except OSError:
            self.kill()
            raise LoadFailed(
                "the process to run your code ended before it loaded the file"
            ) from None
        self.limit = self.limits.seconds
        self.deadline = time.monotonic() + self.limits.seconds
        try:
            reply = self._receive()
        except StudentStopped as stopped:
            raise LoadFailed(
                f"loading the file {stopped.line}"
                if stopped.status == TIMED_OUT
                else f"while loading the file, {stopped.line}"
            ) from None
        except StudentRaised as raised:
            self.kill()
            raise LoadFailed(raised.line) from None
        if reply[0] == "tripped":
            self.kill()
            raise LoadFailed(f"the file calls {_label(reply[1][0])} while loading")
        if reply[0] != "loaded" or not isinstance(reply[1], dict):
            self.kill()
            raise LoadFailed(str(reply[1]) if reply[0] == "load_error" else "no answer")
        self.functions = _functions(reply[1])
        return self.functions

    def _ready(self) -> None:
        """Wait for the worker's "ready": a fresh worker imports torch first (START_SECONDS at
        most); asked to, it loads the file, which has the check's time limit for that."""
        self.limit, self.deadline = START_SECONDS, time.monotonic() + START_SECONDS
        try:
            ready = self._receive()
        except (StudentStopped, StudentRaised) as failed:
            timed_out = getattr(failed, "status", "") == TIMED_OUT
            why = (
                f"in {START_SECONDS:g} s (an overloaded machine?)"
                if timed_out
                else failed.line
            )
            raise LoadFailed(f"the process to run your code did not start: {why}") from None
        if ready[0] != "ready":
            self.kill()
            raise LoadFailed("the process to run your code did not start")

    def _share_memory(self) -> None:
        """A worker the zygote forked shares the zygote's memory (torch's heap), which the
        cgroup charges to the zygote: before the file loads, its cap is lowered by what it
        holds but is not charged for, so that its student has a fresh worker's room."""
        if self.forked_pid is None or self.cgroup is None or self.limits.memory_mb is None:
            return
        with open(f"/proc/{self.forked_pid}/status", encoding="ascii") as handle:
            held = next(
                int(line.split()[1]) for line in handle if line.startswith("RssAnon:")
            )
        self.cgroup.lower_memory(max(0, held * 1024 - self.cgroup.charged()))

    def _address_cap(self) -> int | None:
        """The worker's ``RLIMIT_AS``: its size now (torch loaded, no student code run yet),
        read from this side's ``/proc``, plus ``Limits.memory_mb``; None off Linux or with no
        memory limit."""
        if self.limits.memory_mb is None or self.process is None:
            return None
        pid = self.forked_pid or worker_pid(self.process.pid)
        if pid is None:
            return None
        try:
            pages = int(Path(f"/proc/{pid}/statm").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pages * os.sysconf("SC_PAGE_SIZE") + self.limits.memory_mb * 2**20

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def begin_check(self, seconds: float) -> None:
        """Give the next requests ``seconds`` in total (restarting a worker that died)."""
        if not self.alive:
            self.start()
        self.limit = seconds
        self.deadline = time.monotonic() + seconds

    def signal_kill(self) -> None:
        """SIGKILL the worker's process group (safe from any thread; :meth:`kill` cleans up)."""
        process = self.process
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass

    def kill(self) -> None:
        """End the worker and everything it started, then remove its folder (from the thread
        that uses the worker)."""
        with _LIVE_LOCK:
            _LIVE.discard(self)
        process, self.process = self.process, None
        self.forked_pid = None
        if process is not None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                process.kill()
            except OSError:
                pass
            process.wait()
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()
        alarm, self.alarm = self.alarm, -1
        if alarm >= 0:
            self._drain(alarm)
            os.close(alarm)
        if process is not None and any(_SUBREAPER):
            end_orphans()
        cgroup, self.cgroup = self.cgroup, None
        if cgroup is not None:
            cgroup.remove()
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            remove_folder(workdir)  # never following a link the student left

    def close(self) -> None:
        if self.alive:
            try:
                self.conn.send_bytes(pickle.dumps(("stop",)))
                self.process.wait(1)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        try:
            os.unlink(self.output_path)
        except OSError:
            pass

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests ---------------------------------------------------------------------------------

    def _drain(self, alarm: int | None = None) -> None:
        """Tripwires the worker reported on its alarm pipe."""
        alarm = self.alarm if alarm is None else alarm
        chunks = b""
        while alarm >= 0 and len(chunks) < 65536:
            try:
                chunk = os.read(alarm, 65536)
            except (BlockingIOError, OSError):
                break
            if not chunk:
                break
            chunks += chunk
        text = chunks.decode("utf-8", "replace")
        self.alarms += [line for line in text.splitlines() if line][:20]

    def _receive(self) -> tuple:
        remaining = self.deadline - time.monotonic()
        ready = remaining > 0 and self.conn.poll(remaining)
        if not ready:
            self.kill()
            raise StudentStopped(
                TIMED_OUT,
                f"took longer than {self.limit:g} s and was stopped "
                "(an endless loop? a sleep? input()?)",
            )
        try:
            data = self.conn.recv_bytes(MAX_REPLY_BYTES)
        except (EOFError, ConnectionError):
            exitcode = self._exitcode()
            self.kill()
            raise StudentStopped(ENDED, describe_exit(exitcode)) from None
        except OSError:
            self.kill()
            raise StudentRaised(
                "the result was too large to read back (over 64 MB)"
            ) from None
        try:
            reply = unpack(data)
            if not isinstance(reply, list) or not reply or not isinstance(reply[0], str):
                raise Malformed("not a reply")
            reply = tuple(reply)
        except TooLarge as error:
            self.kill()
            raise StudentRaised(str(error)) from None
        except Exception as error:  # noqa: BLE001
            self.kill()
            raise StudentRaised(
                "the result could not be read back: " + summarise_exception(error)
            ) from None
        self._drain()
        if self.alarms:  # a tripwire fired, whatever the reply says
            labels, self.alarms = list(dict.fromkeys(self.alarms)), []
            return ("tripped", labels)
        return reply

    def _exitcode(self) -> int | None:
        process = self.process
        if process is None:
            return None
        try:
            code = process.wait(5)
        except subprocess.TimeoutExpired:
            return None
        if self.isolation.level == BUBBLEWRAP and code > 128:  # bwrap: 128 + the signal
            return -(code - 128)
        return code

    def request(self, op: str, *fields) -> tuple:
        if not self.alive:
            raise StudentStopped(ENDED, "the process running your code had already ended")
        try:
            self.conn.send_bytes(pickle.dumps((op, *fields)))
        except OSError:
            exitcode = self._exitcode()
            self.kill()
            raise StudentStopped(ENDED, describe_exit(exitcode)) from None
        return self._receive()

    def new_output(self, limit: int = 4000) -> str:
        """What the worker printed since the last call (at most ``limit`` characters)."""
        try:
            with open(self.output_path, "rb") as handle:
                handle.seek(self.read_offset)
                data = handle.read(limit + 1)
                handle.seek(0, os.SEEK_END)
                self.read_offset = handle.tell()
        except OSError:
            return ""
        text = data[:limit].decode("utf-8", errors="replace")
        return text + ("\n..." if len(data) > limit else "")


@contextlib.contextmanager
def forking_workers():
    """While the block runs, workers at the bubblewrap level are forked by one zygote (see
    :mod:`transformer_lab.selfcheck.zygote`; ``SELFCHECK_ZYGOTE=0`` turns it off): started
    here, with exactly a worker's environment, and ended when the block ends."""
    if isolation().level != BUBBLEWRAP:
        yield
        return
    environment = {**_clean_environment([]), **SANDBOX_ENVIRONMENT}
    with zygote.serving(environment, launcher()):
        yield


def _clean_environment(visible: list[str]) -> dict[str, str]:
    """The worker's environment: what Python and the numeric mode need, nothing of the grader's
    (its command line, tokens or paths); the book's data folder when the worker may read it."""
    from transformer_lab.reproducibility import CANONICAL_ENVIRONMENT, DEFAULT_ENVIRONMENT

    # The numeric mode as this process applied it (the worker's /proc/cpuinfo may be absent).
    keep = (
        "PATH",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        *CANONICAL_ENVIRONMENT,
        *DEFAULT_ENVIRONMENT,
    )
    env = {
        k: v for k, v in os.environ.items() if k in keep or k.startswith("TRANSFORMER_LAB")
    }
    if visible:
        env["CLOUDWAVE_DATA_DIR"] = visible[0]
    return env


def _functions(info: dict) -> dict[str, dict]:
    """The worker's description of the file's functions, reduced to plain, well-formed fields."""
    functions = {}
    for name, fields in info.items():
        if not isinstance(name, str) or not isinstance(fields, dict):
            continue
        library = fields.get("library", [])
        functions[name] = {
            "callable": bool(fields.get("callable")),
            "module": str(fields.get("module", "")),
            "library": [str(x) for x in library] if isinstance(library, list) else [],
        }
    return functions


def _label(label: str) -> str:
    return label[len(BOOK_PREFIX) :] if label.startswith(BOOK_PREFIX) else label


def tripped(labels: list[str], watch_library: bool) -> Returned:
    """A tripwire fired during a call: the book's own code is a failure of any check; library
    attention is returned as ``Returned.library`` when the check watches for it."""
    labels = [str(label) for label in labels]
    book = [_label(x) for x in labels if x.startswith(BOOK_PREFIX)]
    if book:
        raise Failed(
            Finding(
                "book_implementation",
                f"Your function uses the book's implementation ({book[0]}) instead of its own",
                "your own code (the self-check compares it with the book's)",
                f"a call to {book[0]}",
                "write the function yourself; the book's code is not available while it runs",
            )
        )
    if watch_library:
        return Returned(None, [], labels)
    raise Failed(
        Finding(
            "library_attention",
            f"A library function ({labels[0]}) computes the attention for you; this exercise "
            "asks you to write it by hand",
            "your own code (no library attention call)",
            f"a call to {labels[0]}",
            "write the steps yourself: scores, mask, softmax, mix",
        )
    )


class RemoteFunction(StudentFunction):
    """A student function that runs in a :class:`Worker`."""

    def __init__(self, worker: Worker, name: str):
        self.worker, self.name = worker, name
        self.library_names = worker.functions.get(name, {}).get("library", [])

    def _unpack(self, reply: tuple, watch_library: bool = False):
        kind = reply[0]
        if kind == "not_done":
            raise StudentNotDone(str(reply[1]))
        if kind == "raised":
            raise StudentRaised(str(reply[1]))
        if kind == "tripped":
            return tripped(list(reply[1]), watch_library)
        return reply

    def _decode(self, node):
        # Rebuilding a reply counts against the check's time limit (a second at least).
        deadline = max(self.worker.deadline, time.monotonic() + 1.0)
        try:
            return decode(node, remote=self.worker_object, budget=budget(deadline))
        except TooLarge as error:
            raise StudentRaised(str(error)) from None
        except Exception as error:  # noqa: BLE001
            raise StudentRaised(
                "the result could not be read back: " + summarise_exception(error)
            ) from None

    def worker_object(self, handle: int, module: str, name: str) -> RemoteObject:
        return remote_object(self.worker, handle, module, name)

    def call(
        self, *args, hints=(), watch_library: bool = False, quiet: bool = False
    ) -> Returned:
        reply = self._unpack(
            self.worker.request(
                "call",
                self.name,
                list(args),
                {"hints": list(hints), "quiet": quiet},
            ),
            watch_library,
        )
        if isinstance(reply, Returned):
            return reply
        if reply[0] != "returned" or len(reply) < 3:
            raise StudentRaised("the worker sent an answer the self-check cannot read")
        result, arguments = self._decode(reply[1]), self._decode(reply[2])
        if not isinstance(arguments, list):
            arguments = []
        return Returned(result, arguments, [])

    def gradient(self, args, names, pick: str, hints=(), seed: int = 0) -> GradientReport:
        reply = self._unpack(
            self.worker.request(
                "gradient",
                self.name,
                list(args),
                {"names": list(names), "pick": pick, "hints": list(hints), "seed": seed},
            )
        )
        report = self._decode(reply[1]) if reply[0] == "gradient" else None
        if not isinstance(report, GradientReport):
            raise StudentRaised("the worker sent an answer the self-check cannot read")
        return report


class RemoteObject:
    """Stands in for an object that stayed in the worker (a returned tokenizer, its model, an
    encoding): attribute look-ups and calls run there, under the check's time limit, and come
    back as plain data or as further stand-ins. Its class has the remote class's name, and
    ``isinstance`` sees a ``tokenizers.Tokenizer`` stand-in as a ``Tokenizer``."""

    _worker: Worker
    _handle: int

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _value(self._worker, self._worker.request("getattr", self._handle, name))

    def __call__(self, *args):
        return _value(
            self._worker, self._worker.request("invoke", self._handle, list(args))
        )

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} in the worker>"


def _value(worker: Worker, reply: tuple):
    function = RemoteFunction(worker, "")
    reply = function._unpack(reply)
    if isinstance(reply, Returned) or reply[0] != "value":
        raise StudentRaised("the worker sent an answer the self-check cannot read")
    value = function._decode(reply[1])
    if isinstance(value, str) and len(value) > 100_000:
        raise StudentRaised("the object returned a string of over 100,000 characters")
    return value


_STAND_INS: dict[tuple[str, str], type] = {}


def remote_object(worker: Worker, handle: int, module: str, name: str) -> RemoteObject:
    """A :class:`RemoteObject` for ``handle``, of a class named after the remote one."""
    key = (module[:100], name[:100])
    if key not in _STAND_INS:
        namespace: dict = {"__module__": key[0]}
        if key == ("tokenizers", "Tokenizer"):
            from tokenizers import Tokenizer

            namespace["__class__"] = property(lambda self: Tokenizer)
        identifier = name if name.isidentifier() else "RemoteObject"
        _STAND_INS[key] = type(identifier, (RemoteObject,), namespace)
    stand_in = object.__new__(_STAND_INS[key])
    object.__setattr__(stand_in, "_worker", worker)
    object.__setattr__(stand_in, "_handle", handle)
    return stand_in
