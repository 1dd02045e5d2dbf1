"""The worker: a fresh interpreter that loads one student's file and calls its functions on request.

Run as ``python -I -u -c START CODE FD FILE CONFIG`` (:mod:`.isolation`): ``CODE`` is the package
copy it imports, ``FD`` its socket to the grader, ``CONFIG`` JSON (function names, limits). It
answers in plain data (:mod:`..transport`). Nothing here is a defence: the student's code may
change any of it. Isolation comes from where this process runs and the kernel's limits; what it
records (library attention, a call of the book's code) names a mistake, no more.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import sys

STUDENT_MODULE = "student_submission"
# Book modules every check may reach (the package's own start, the self-check itself).
ALWAYS_ALLOWED = (
    "transformer_lab",
    "transformer_lab.reproducibility",
    "transformer_lab.selfcheck",
)


def set_limits(limits: dict) -> None:
    """Kernel limits (``RLIMIT_`` and each key), inherited by every child: output file size
    (FSIZE), CPU time, address space (AS, set once torch is in), processes of this user (NPROC,
    the unprivileged-user level); no new privileges, and death with the grader."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too much output: the write fails
    for kind, cap in limits.items():
        if type(cap) is int and cap > 0:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(getattr(resource, "RLIMIT_" + kind), (cap, cap))
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class BookCalls:
    """Notes the first call from the student's file into a book module the check does not allow
    (the rule "write it by hand"), while :meth:`watch` runs: a check of what the student's code
    calls, not a defence."""

    def __init__(self):
        self.allowed: tuple[str, ...] = ()
        self.seen: list[str] = []

    def _profile(self, frame, event, arg) -> None:
        if event != "call" or self.seen:
            return
        module = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back else ""
        if (
            caller != STUDENT_MODULE
            or not module.startswith("transformer_lab.")
            or any(module == a or module.startswith(a + ".") for a in self.allowed)
        ):
            return
        self.seen.append(f"{module}.{frame.f_code.co_name}")

    def watch(self, allowed, call):
        self.allowed, self.seen = (*ALWAYS_ALLOWED[1:], *allowed), []
        sys.setprofile(self._profile)
        try:
            return call()
        finally:
            sys.setprofile(None)


class Server:
    def __init__(self, conn, path: str):
        self.conn, self.path, self.module = conn, path, None
        self.objects: dict[int, object] = {}
        self.book = BookCalls()

    def keep(self, value: object, anything: bool) -> int | None:
        from tokenizers import Tokenizer

        module = type(value).__module__ or ""
        if isinstance(value, Tokenizer) or (
            anything and (module.startswith("tokenizers") or callable(value))
        ):
            self.objects[len(self.objects) + 1] = value
            return len(self.objects)
        return None

    def encode(self, value, anything: bool = False):
        from transformer_lab.selfcheck.transport import encode

        return encode(value, keep=lambda v: self.keep(v, anything))

    def reply(self, message: tuple) -> None:
        from transformer_lab.selfcheck.errors import summarise_exception
        from transformer_lab.selfcheck.transport import pack

        try:
            data = pack(message)
        except BaseException as error:  # noqa: BLE001
            line = "the result could not be sent back: " + summarise_exception(error)
            data = pack(("raised", line))
        self.conn.send_bytes(data)

    def serve(self, message: tuple) -> tuple:
        from transformer_lab.selfcheck.core import StudentRaised
        from transformer_lab.selfcheck.errors import summarise_exception

        try:
            reply = self._serve(message)
        except NotImplementedError as error:
            return ("not_done", str(error).strip())
        except StudentRaised as raised:
            reply = ("raised", raised.line)
        except BaseException as error:  # noqa: BLE001
            reply = ("raised", summarise_exception(error, self.path))
        if self.book.seen:  # the book's code ran, whatever the function did next
            return ("book", self.book.seen[0])
        return reply

    def _serve(self, message: tuple) -> tuple:
        if message[0] == "call":
            return self._call(*message[1:])
        if message[0] == "gradient":
            return self._gradient(*message[1:])
        return self._use_object(message)

    def _call(self, name: str, args: list, options: dict) -> tuple:
        from transformer_lab.selfcheck.execution import execute

        function, hints = getattr(self.module, name), options.get("hints", ())
        quiet = options.get("quiet", False)
        returned = self.book.watch(
            options.get("book", ()),
            lambda: execute(function, args, hints, True, True, quiet),
        )
        result, arguments = self.encode(returned.result), self.encode(returned.args)
        return ("returned", result, arguments, returned.library)

    def _gradient(self, name: str, args: list, options: dict) -> tuple:
        from transformer_lab.selfcheck.execution import execute_gradient

        function, hints = getattr(self.module, name), options.get("hints", ())
        names, pick, seed = options["names"], options["pick"], options.get("seed", 0)
        report = self.book.watch(
            options.get("book", ()),
            lambda: execute_gradient(function, args, names, pick, hints, True, seed),
        )
        return ("gradient", self.encode(report))

    def _use_object(self, message: tuple) -> tuple:
        """``getattr`` or ``invoke`` on an object kept here (a tokenizer)."""
        from transformer_lab.selfcheck.execution import execute

        self.book.seen = []
        target = self.objects[message[1]]
        if message[0] == "getattr":
            value = execute(getattr, [target, message[2]], catch_interrupt=True).result
        else:  # "invoke"
            arguments = list(message[2])
            value = execute(target, arguments, catch_interrupt=True, quiet=True).result
        return ("value", self.encode(value, True))


def main() -> None:
    from multiprocessing.connection import Connection

    conn = Connection(int(sys.argv[1]))
    path, config = sys.argv[2], json.loads(sys.argv[3])
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    for stream in (sys.stdout, sys.stderr):  # unbuffered (python -u) on the output file
        stream.reconfigure(errors="replace")
    set_limits(config["limits"])
    if conn.poll(0):  # the grader's end closed before the parent-death signal was set
        return
    import torch  # noqa: F401 - before the student's file, as in the checking process

    import transformer_lab  # noqa: F401 - the canonical numeric mode
    from transformer_lab.selfcheck import errors, execution, transport  # noqa: F401

    execution.install_library_spies()
    server = Server(conn, path)
    server.reply(("ready", os.getpid()))
    try:  # the file loads (and its time limit starts) when the grader asks, with the address
        # space it measured from outside (no /proc in the sandbox): our size now plus the student's
        set_limits({"AS": pickle.loads(conn.recv_bytes())[1]})
    except (EOFError, OSError):
        return
    try:
        server.module = execution.load_module(path, STUDENT_MODULE)
    except BaseException as error:  # noqa: BLE001 - SystemExit, KeyboardInterrupt too
        server.reply(("load_error", errors.summarise_exception(error, path)))
        return
    found = {name: getattr(server.module, name, None) for name in config["names"]}
    described = {n: execution.describe(f) for n, f in found.items() if f is not None}
    server.reply(("loaded", described))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        server.reply(server.serve(message))
