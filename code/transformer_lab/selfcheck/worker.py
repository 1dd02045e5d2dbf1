"""Student code runs in a worker process, so that it cannot hang, end or fool the self-check.

The worker loads the student's file and calls its functions on request; the checks (and the
reference implementations they compare with) stay in the parent, which never imports the
student's file. Each check has a time limit: a worker that overruns it is killed and a fresh one
is started for the next check. ``sys.exit``, ``os._exit``, a crash or ``KeyboardInterrupt`` in
student code end at most that check. The worker's output goes to a capped file (a flood of
prints cannot reach the report), and on Linux its memory is capped too.

On Linux the worker is forked from the parent, which has already imported torch, so starting one
costs milliseconds; elsewhere it is spawned (one more import of torch).
"""

from __future__ import annotations

import faulthandler
import importlib.util
import io
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path

from transformer_lab.selfcheck.core import (
    ENDED,
    TIMED_OUT,
    StudentNotDone,
    StudentRaised,
    StudentStopped,
)
from transformer_lab.selfcheck.errors import summarise_exception
from transformer_lab.selfcheck.execution import (
    GradientReport,
    Returned,
    StudentFunction,
    execute,
    execute_gradient,
    install_library_spies,
    static_library_use,
)
from transformer_lab.selfcheck.transport import decode, encode, loads_plain

STUDENT_MODULE = "student_submission"
DEFAULT_SECONDS = 10.0
DEFAULT_MEMORY_MB = 2048
DEFAULT_OUTPUT_BYTES = 4_000_000
SPAWN_SECONDS = 60.0  # extra time to load the file in a spawned (not forked) worker


@dataclass(frozen=True)
class Limits:
    """Per-check time limit; memory the worker may add to its size at start (Linux; None = no
    cap); bytes of output kept per file."""

    seconds: float = DEFAULT_SECONDS
    memory_mb: int | None = DEFAULT_MEMORY_MB
    output_bytes: int = DEFAULT_OUTPUT_BYTES


def load_module(path: Path | str, name: str = STUDENT_MODULE) -> types.ModuleType:
    """Import a Python file by path (without running its ``if __name__ == "__main__"`` block)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class LoadFailed(Exception):
    """The student's file could not be loaded (one summarised line)."""


# ---------------------------------------------------------------------------------------------
# The worker process
# ---------------------------------------------------------------------------------------------


def _reply(conn, message: tuple) -> None:
    """Send plain data only (see ``transport``)."""
    try:
        data = pickle.dumps(message)
    except Exception as error:  # noqa: BLE001
        data = pickle.dumps(
            ("raised", "the result could not be sent back: " + summarise_exception(error))
        )
    conn.send_bytes(data)


def _serve(module: types.ModuleType, message: tuple) -> tuple:
    op, name, args, options = message
    function = getattr(module, name)
    try:
        if op == "gradient":
            report = execute_gradient(
                function,
                args,
                options["names"],
                options["pick"],
                options.get("hints", ()),
                catch_interrupt=True,
            )
            return ("gradient", encode(report))
        returned = execute(
            function,
            args,
            options.get("hints", ()),
            options.get("watch_library", False),
            catch_interrupt=True,
            quiet=options.get("quiet", False),
        )
        return (
            "returned",
            encode(returned.result),
            encode(returned.args),
            list(returned.library),
        )
    except NotImplementedError as error:
        return ("not_done", str(error).strip())
    except StudentRaised as raised:
        return ("raised", raised.line)


def _describe_functions(module: types.ModuleType, names: list[str]) -> dict[str, dict]:
    info = {}
    for name in names:
        function = getattr(module, name, None)
        if function is None:
            continue
        info[name] = {
            "callable": callable(function),
            "module": getattr(function, "__module__", "") or "",
            "library": static_library_use(function) if callable(function) else [],
        }
    return info


def _isolate(limits: Limits, output_path: str) -> None:
    """Own session, output to the capped file, no keyboard, and (Linux) a memory cap."""
    if hasattr(os, "setsid"):
        try:
            os.setsid()
        except OSError:
            pass
    fd = os.open(output_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = io.TextIOWrapper(
        os.fdopen(1, "wb", buffering=0, closefd=False),
        line_buffering=True,
        errors="replace",
        write_through=True,
    )
    sys.stderr = io.TextIOWrapper(
        os.fdopen(2, "wb", buffering=0, closefd=False),
        line_buffering=True,
        errors="replace",
        write_through=True,
    )
    if faulthandler.is_enabled():  # e.g. pytest's, still writing to the parent's terminal
        faulthandler.enable(file=sys.stderr)
    try:
        import resource
    except ImportError:  # Windows
        return
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(
            signal.SIGXFSZ, signal.SIG_IGN
        )  # too much output: a write fails, no kill
    try:
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (limits.output_bytes, limits.output_bytes)
        )
    except (ValueError, OSError):
        pass
    if limits.memory_mb is not None and sys.platform.startswith("linux"):
        try:
            pages = int(Path("/proc/self/statm").read_text().split()[0])
            cap = pages * resource.getpagesize() + limits.memory_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ValueError, OSError):
            pass


def _child_main(
    conn, path: str, names: list[str], limits: Limits, output_path: str
) -> None:
    """The worker: load the file, say which functions it has, then serve calls until told to stop."""
    _isolate(limits, output_path)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    install_library_spies()
    try:
        module = load_module(path)
    except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
        _reply(conn, ("load_error", summarise_exception(error, path)))
        return
    _reply(conn, ("loaded", _describe_functions(module, names)))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        try:
            reply = _serve(module, message)
        except BaseException as error:  # noqa: BLE001 - e.g. SystemExit raised while summarising
            reply = ("raised", summarise_exception(error, path))
        _reply(conn, reply)


# ---------------------------------------------------------------------------------------------
# The parent's side
# ---------------------------------------------------------------------------------------------


def _context():
    method = "fork" if sys.platform.startswith("linux") else "spawn"
    return multiprocessing.get_context(method)


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
        "SIGABRT": " (an abort in native code)",
    }.get(name, "")
    return f"the process running your code was killed by {name}{why}"


class Worker:
    """One worker process for one student file, restarted after a time-out or a crash."""

    def __init__(self, path: Path | str, names: list[str], limits: Limits = Limits()):
        self.path, self.names, self.limits = str(path), list(names), limits
        handle, self.output_path = tempfile.mkstemp(prefix="selfcheck-", suffix=".out")
        os.close(handle)
        self.read_offset = 0
        self.process = None
        self.conn = None
        self.functions: dict[str, dict] = {}
        self.deadline = float("inf")
        self.limit = limits.seconds

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> dict[str, dict]:
        """Start a worker and load the file; ``LoadFailed`` if it does not load in time."""
        self.kill()
        context = _context()
        self.conn, child = context.Pipe()
        self.process = context.Process(
            target=_child_main,
            daemon=True,
            args=(child, self.path, self.names, self.limits, self.output_path),
        )
        self.process.start()
        child.close()
        # A spawned worker imports torch again before it loads the file: allow for that.
        self.limit = self.limits.seconds + (
            0 if context.get_start_method() == "fork" else SPAWN_SECONDS
        )
        self.deadline = time.monotonic() + self.limit
        try:
            reply = self._receive()
        except StudentStopped as stopped:
            raise LoadFailed(
                f"loading the file {stopped.line}"
                if stopped.status == TIMED_OUT
                else f"while loading the file, {stopped.line}"
            ) from None
        if reply[0] == "load_error":
            self.kill()
            raise LoadFailed(reply[1])
        self.functions = reply[1]
        return self.functions

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()

    def begin_check(self, seconds: float) -> None:
        """Give the next requests ``seconds`` in total (restarting a worker that died)."""
        if not self.alive:
            self.start()
        self.limit = seconds
        self.deadline = time.monotonic() + seconds

    def kill(self) -> None:
        if self.process is None:
            return
        if self.process.is_alive():
            try:
                os.killpg(
                    self.process.pid, signal.SIGKILL
                )  # the worker and anything it started
            except (AttributeError, OSError):
                self.process.kill()
        self.process.join(5)
        if self.conn is not None:
            self.conn.close()
        self.process, self.conn = None, None

    def close(self) -> None:
        if self.alive:
            try:
                self.conn.send_bytes(pickle.dumps(("stop",)))
                self.process.join(1)
            except OSError:
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
            data = self.conn.recv_bytes()
        except (EOFError, OSError):
            self.process.join(5)
            exitcode = self.process.exitcode
            self.kill()
            raise StudentStopped(ENDED, describe_exit(exitcode)) from None
        try:
            return loads_plain(data)
        except Exception as error:  # noqa: BLE001
            raise StudentRaised(
                "the result could not be read back: " + summarise_exception(error)
            ) from None

    def request(self, op: str, name: str, args: list, **options) -> tuple:
        if not self.alive:
            raise StudentStopped(ENDED, "the process running your code had already ended")
        self.conn.send_bytes(pickle.dumps((op, name, list(args), options)))
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


class RemoteFunction(StudentFunction):
    """A student function that runs in a :class:`Worker`."""

    def __init__(self, worker: Worker, name: str):
        self.worker, self.name = worker, name
        self.library_names = worker.functions.get(name, {}).get("library", [])

    def _unpack(self, reply: tuple):
        kind = reply[0]
        if kind == "not_done":
            raise StudentNotDone(reply[1])
        if kind == "raised":
            raise StudentRaised(reply[1])
        return reply

    def call(
        self, *args, hints=(), watch_library: bool = False, quiet: bool = False
    ) -> Returned:
        reply = self._unpack(
            self.worker.request(
                "call",
                self.name,
                list(args),
                hints=list(hints),
                watch_library=watch_library,
                quiet=quiet,
            )
        )
        try:
            result, arguments = decode(reply[1]), decode(reply[2])
        except Exception as error:  # noqa: BLE001 - e.g. a tokenizer whose JSON does not load
            raise StudentRaised(
                "the result could not be read back: " + summarise_exception(error)
            ) from None
        return Returned(result, list(arguments), [str(name) for name in reply[3]])

    def gradient(self, args, names, pick: str, hints=()) -> GradientReport:
        reply = self._unpack(
            self.worker.request(
                "gradient",
                self.name,
                list(args),
                names=list(names),
                pick=pick,
                hints=list(hints),
            )
        )
        return decode(reply[1])
