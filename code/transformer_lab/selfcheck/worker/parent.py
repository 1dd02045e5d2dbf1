"""The grader's side of a worker: start it where :mod:`.isolation` says, time it, end it.

One worker (:mod:`.serve`) per student file, on a copy of the file. The checks and their answers
stay in this process, which never imports the file nor runs an object it returned (a tokenizer
stays in the worker: :class:`RemoteObject`). A check may use ``Limits.seconds`` of the worker's
CPU time, and ``WALL_FACTOR`` times that on the wall clock; past either, the worker is killed with
every process of its user or sandbox. Its output goes to a capped file.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from pathlib import Path

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
from transformer_lab.selfcheck.execution import GradientReport, Returned, StudentFunction
from transformer_lab.selfcheck.transport import Malformed, TooLarge, decode, unpack
from transformer_lab.selfcheck.worker import isolation as places

DEFAULT_SECONDS = 10.0  # CPU seconds per check
WALL_FACTOR = 5  # the wall-clock backstop: this many times the CPU limit
DEFAULT_MEMORY_MB = 2048
DEFAULT_OUTPUT_BYTES = 4_000_000
START_SECONDS = 60.0  # a fresh worker's own start (importing torch), wall clock
PROCESSES = 64  # processes and threads of the worker's user (unprivileged-user level)
MAX_REPLY_BYTES = 64 * 2**20
POLL_SECONDS = 0.05

# Set by Ctrl-C while grading: no worker starts until it is cleared. The running ones end
# with this process (their parent-death signal), or with their user's processes.
STOPPING = threading.Event()


@dataclass(frozen=True)
class Limits:
    """CPU seconds per check; memory the worker may add to its size at start (None: no cap);
    bytes of output kept per file."""

    seconds: float = DEFAULT_SECONDS
    memory_mb: int | None = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_BYTES


class LoadFailed(Exception):
    """The student's file could not be loaded (one summarised line)."""


def describe_exit(exitcode: int | None) -> str:
    """Why a worker ended, in words a student can act on."""
    if exitcode is None:
        return "the process running your code stopped answering"
    if exitcode >= 0:
        return (
            f"your code ended the process that ran it (exit status {exitcode}): os._exit() or "
            "a crash; return the result instead"
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


def _did_not_start(failed: StudentStopped | StudentRaised) -> LoadFailed:
    """A worker that timed out or ended before the file loaded: no line of the student's ran."""
    why = (
        f"in {START_SECONDS:g} s (an overloaded machine?)"
        if getattr(failed, "status", "") == TIMED_OUT
        else "it ended before your file was loaded: this Python's set-up, not your "
        "code, is the cause (its last lines below say what failed); run the "
        "self-check with the Python that `make book` set up (.venv/bin/python)"
    )
    return LoadFailed(f"the process to run your code did not start: {why}")


class Worker:
    """One worker process for one student file, restarted after a time-out or a crash."""

    def __init__(self, path: Path | str, names: list[str], limits: Limits = Limits()):
        self.path, self.names, self.limits = Path(path), list(names), limits
        self.isolation = places.isolation()
        handle, self.output_path = tempfile.mkstemp(suffix=".out", dir=places.runs_folder())
        os.close(handle)
        self.read_offset = 0
        self.process: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.pid: int | None = None  # the worker interpreter's host pid
        self.uid: int | None = None
        self.workdir: str | None = None
        self.functions: dict[str, dict] = {}  # start() fills it; the limits too

    def _launch(self) -> None:
        """Start the worker where the isolation level says (none once Ctrl-C came)."""
        if STOPPING.is_set():
            raise LoadFailed("interrupted (Ctrl-C) before the file was checked")
        level = self.isolation.level
        self.workdir = tempfile.mkdtemp(prefix="run-", dir=places.runs_folder())
        shutil.copyfile(self.path, Path(self.workdir) / self.path.name)
        os.chmod(Path(self.workdir) / self.path.name, 0o644)
        if level == places.USER:
            self.uid = places.take_uid()
            places.kill_user(self.uid)
            os.chown(self.workdir, self.uid, self.uid)
        command, workdir, code = places.worker_command(
            level, self.workdir, self.path.name, self.uid
        )
        cpu = int(START_SECONDS + 2 * self.limits.seconds * len(self.names))
        limits = {"FSIZE": self.limits.output_bytes, "CPU": cpu}  # serve.set_limits
        limits["NPROC"] = PROCESSES if level == places.USER else 0
        # (bubblewrap sets the sandbox's own TMPDIR, HOME and PATH)
        env = _environment() | {"TMPDIR": self.workdir, "HOME": self.workdir}
        ours, theirs = Pipe()  # a pair of connected sockets
        arguments = [code, str(theirs.fileno()), os.path.join(workdir, self.path.name)]
        arguments.append(json.dumps({"names": self.names, "limits": limits}))
        user = {}  # as the worker's uid: setpriv's flags do it, else Popen's arguments
        if level == places.USER and not command[0].endswith("setpriv"):
            user = {"user": self.uid, "group": self.uid, "extra_groups": []}
        with open(self.output_path, "ab") as output:
            self.process = subprocess.Popen(
                [*command, *arguments],
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                cwd=self.workdir,
                env=env,
                **user,
            )
        theirs.close()
        self.conn = ours

    def start(self) -> dict[str, dict]:
        """Start a worker and load the file; ``LoadFailed`` if it does not load in time."""
        self.kill()
        self._launch()
        self.limit = self.wall_limit = START_SECONDS
        self.wall_end = time.monotonic() + START_SECONDS
        self.cpu_end = float("inf")
        try:
            ready = self._receive()
        except (StudentStopped, StudentRaised) as failed:
            raise _did_not_start(failed) from None
        if ready[0] != "ready":
            self.kill()
            raise LoadFailed("the process to run your code did not start")
        self.pid = self.process.pid
        if self.isolation.level == places.BUBBLEWRAP:  # bwrap starts it a few levels down
            self.pid = places.find_worker(self.process.pid, 5.0)
        self.begin_check(self.limits.seconds)
        try:
            reply = self.request("load", self._address_cap())
        except StudentStopped as stopped:
            timed_out = stopped.status == TIMED_OUT
            why = "loading the file " if timed_out else "while loading the file, "
            raise LoadFailed(why + stopped.line) from None
        except StudentRaised as raised:
            self.kill()
            raise LoadFailed(raised.line) from None
        if reply[0] != "loaded" or len(reply) != 2 or not isinstance(reply[1], dict):
            self.kill()
            said = reply[1] if reply[0] == "load_error" and len(reply) == 2 else "no answer"
            raise LoadFailed(str(said))
        self.functions = _functions(reply[1])
        return self.functions

    def _address_cap(self) -> int | None:
        """``RLIMIT_AS``: the worker's size now (torch in, no student code yet) plus
        ``Limits.memory_mb``; None off Linux or with no memory limit."""
        if self.limits.memory_mb is None or self.pid is None:
            return None
        try:
            pages = int(Path(f"/proc/{self.pid}/statm").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pages * os.sysconf("SC_PAGE_SIZE") + self.limits.memory_mb * 2**20

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _cpu(self) -> float:
        """The worker's CPU seconds so far (the wall clock off Linux)."""
        used = places.process_cpu(self.pid) if self.pid else None
        return time.monotonic() if used is None else used

    def begin_check(self, seconds: float) -> None:
        """Give the next requests ``seconds`` of CPU in total (restarting a worker that died)."""
        if not self.alive:
            self.start()
        self.limit, self.wall_limit = seconds, WALL_FACTOR * seconds
        self.cpu_end = self._cpu() + seconds
        self.wall_end = time.monotonic() + self.wall_limit

    def kill(self) -> None:
        """End the worker and every process of its user or sandbox, then remove its folder."""
        process, self.process, self.pid = self.process, None, None
        if process is not None:
            _kill_session(process)
            process.wait()
        if self.uid is not None:
            places.kill_user(self.uid)
            places.remove_files_of(self.uid)
            places.give_back_uid(self.uid)
            self.uid = None
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.close()
        workdir, self.workdir = self.workdir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)  # rmtree never follows a link

    def close(self) -> None:
        """End the worker (it holds nothing to save) and remove its output file."""
        self.kill()
        with contextlib.suppress(OSError):
            os.unlink(self.output_path)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _wait(self) -> None:
        """Until a reply is ready; a time-out kills the worker and raises ``StudentStopped``."""
        while not self.conn.poll(POLL_SECONDS):
            cpu, waited = self._cpu(), time.monotonic() > self.wall_end
            # A loop starved on a busy machine meets the wall clock first; a wait uses no CPU.
            computed = cpu > self.cpu_end or (
                waited and cpu > self.cpu_end - 0.8 * self.limit
            )
            if computed or waited:
                self.kill()
                raise self._timed_out(computed)

    def _timed_out(self, computed: bool) -> StudentStopped:
        """Why a request ran out of time: it ``computed`` past its CPU limit, or it waited."""
        if computed:
            return StudentStopped(
                TIMED_OUT,
                f"kept computing past its time limit ({self.limit:g} s of CPU time) and was "
                "stopped (an endless loop? a computation far bigger than the exercise needs?)",
            )
        return StudentStopped(
            TIMED_OUT,
            f"gave no answer within {self.wall_limit:g} s of waiting and was stopped (a sleep? "
            "input()? a wait for another process?)",
        )

    def _receive(self) -> tuple:
        self._wait()
        try:
            data = self.conn.recv_bytes(MAX_REPLY_BYTES)
        except (EOFError, ConnectionError):
            raise self._ended() from None
        except OSError:
            self.kill()
            raise StudentRaised(
                "the result was too large to read back (over 64 MB)"
            ) from None
        try:
            reply = unpack(data)
            if not isinstance(reply, list) or not reply or not isinstance(reply[0], str):
                raise Malformed("not a reply")
            return tuple(reply)
        except Exception as error:  # noqa: BLE001
            self.kill()
            raise unreadable(error) from None

    def _ended(self) -> StudentStopped:
        """The worker died: why (its exit status), once it is cleaned up."""
        exitcode = self._exitcode()
        self.kill()
        return StudentStopped(ENDED, describe_exit(exitcode))

    def _exitcode(self) -> int | None:
        process = self.process
        if process is None:
            return None
        try:
            code = process.wait(5)
        except subprocess.TimeoutExpired:
            return None
        if self.isolation.level == places.BUBBLEWRAP and code > 128:  # bwrap: 128 + signal
            return -(code - 128)
        return code

    def request(self, op: str, *fields) -> tuple:
        if not self.alive:
            raise StudentStopped(ENDED, "the process running your code had already ended")
        try:
            self.conn.send_bytes(pickle.dumps((op, *fields)))
        except OSError:
            raise self._ended() from None
        return self._receive()

    def new_output(self, limit: int = 4000) -> str:
        """What the worker printed since the last call (at most ``limit`` characters)."""
        try:
            with open(self.output_path, "rb") as handle:
                handle.seek(self.read_offset)
                data = handle.read(limit + 1)
                self.read_offset = handle.seek(0, os.SEEK_END)
        except OSError:
            return ""
        text = data[:limit].decode("utf-8", errors="replace")
        return text + ("\n..." if len(data) > limit else "")


def unreadable(error: Exception) -> StudentRaised:
    """A reply the parent refuses (too large, malformed), as one line for the student."""
    if isinstance(error, TooLarge):
        return StudentRaised(str(error))
    return StudentRaised("the result could not be read back: " + summarise_exception(error))


def _kill_session(process: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()


def _environment() -> dict[str, str]:
    """The worker's environment: what Python and the numeric mode need, nothing of the
    grader's (its command line, tokens or paths)."""
    from transformer_lab.reproducibility import CANONICAL_ENVIRONMENT, DEFAULT_ENVIRONMENT

    keep = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH")
    keep += (*CANONICAL_ENVIRONMENT, *DEFAULT_ENVIRONMENT)
    return {
        k: v for k, v in os.environ.items() if k in keep or k.startswith("TRANSFORMER_LAB")
    }


def _functions(info: dict) -> dict[str, dict]:
    """The worker's description of the file's functions (``execution.describe``), made plain."""
    functions = {}
    for name, fields in info.items():
        if isinstance(fields, dict):
            library = fields.get("library")
            functions[name] = {
                "callable": bool(fields.get("callable")),
                "module": str(fields.get("module", "")),
                "library": [str(x) for x in library] if isinstance(library, list) else [],
            }
    return functions


def book_finding(name: str) -> Finding:
    return Finding(
        "book_implementation",
        f"Your function uses the book's implementation ({name}) instead of its own",
        "your own code (the self-check compares it with the book's)",
        f"a call to {name}",
        "write the function yourself; the exercise is to build it, not to call the book's",
    )


def library_finding(name: str) -> Finding:
    return Finding(
        "library_attention",
        f"A library function ({name}) computes the attention for you; this exercise asks you "
        "to write it by hand",
        "your own code (no library attention call)",
        f"a call to {name}",
        "write the steps yourself: scores, mask, softmax, mix",
    )


class RemoteFunction(StudentFunction):
    """A student function that runs in a :class:`Worker`; ``check`` (a ``registry.Check``) says
    which book modules it may call and whether library attention may run."""

    def __init__(self, worker: Worker, name: str, check=None):
        self.worker, self.name = worker, name
        self.book = list(getattr(check, "book_modules", ()))
        self.library_ok = bool(getattr(check, "library_attention", False))
        self.library_names = worker.functions.get(name, {}).get("library", [])

    def _unpack(self, reply: tuple):
        kind = reply[0]
        if kind == "not_done":
            raise StudentNotDone(str(reply[1]))
        if kind == "raised":
            raise StudentRaised(str(reply[1]))
        if kind == "book":
            raise Failed(book_finding(str(reply[1])[:200]))
        return reply

    def _decode(self, node):
        deadline = time.monotonic() + max(1.0, self.worker.limit)
        try:
            return decode(node, lambda *a: remote_object(self.worker, *a), deadline)
        except Exception as error:  # noqa: BLE001
            raise unreadable(error) from None

    def call(
        self, *args, hints=(), watch_library: bool = False, quiet: bool = False
    ) -> Returned:
        options = {"hints": list(hints), "quiet": quiet, "book": self.book}
        reply = self._unpack(self.worker.request("call", self.name, list(args), options))
        if reply[0] != "returned" or len(reply) < 4:
            raise StudentRaised("the worker sent an answer the self-check cannot read")
        library = [str(x)[:100] for x in reply[3]] if isinstance(reply[3], list) else []
        if library and not watch_library and not self.library_ok:
            raise Failed(library_finding(library[0]))
        result, arguments = self._decode(reply[1]), self._decode(reply[2])
        return Returned(result, arguments if isinstance(arguments, list) else [], library)

    def gradient(self, args, names, pick: str, hints=(), seed: int = 0) -> GradientReport:
        options = {"names": list(names), "pick": pick, "hints": list(hints), "seed": seed}
        options["book"] = self.book
        reply = self._unpack(
            self.worker.request("gradient", self.name, list(args), options)
        )
        report = self._decode(reply[1]) if reply[0] == "gradient" else None
        if not isinstance(report, GradientReport):
            raise StudentRaised("the worker sent an answer the self-check cannot read")
        return report


class RemoteObject:
    """Stands in for an object that stayed in the worker (a returned tokenizer, its model, an
    encoding): attribute look-ups and calls run there, under the check's time limit, and come
    back as plain data or as further stand-ins."""

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
    if reply[0] != "value":
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
