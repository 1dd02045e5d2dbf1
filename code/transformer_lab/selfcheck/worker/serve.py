"""The worker: a fresh interpreter that loads one student's file and calls its functions on request.

Run as ``python -I -c START CODE FD FILE CONFIG`` (see :mod:`.isolation`): ``CODE`` is the
package copy it imports from, ``FD`` its socket to the grader, ``CONFIG`` JSON (the function
names, the limits). It answers in plain data (:mod:`transformer_lab.selfcheck.transport`), never
a pickle; a returned tokenizer stays here and the checks call its methods remotely.

Nothing here is a defence: the student's code runs in this interpreter and may change any of it.
Isolation comes from where this process runs (its user, its view of the files) and the limits
the kernel enforces. What this module records (library attention, a call of the book's own
code) names a mistake for the student; it does not keep a determined one out.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import sys
import types

STUDENT_MODULE = "student_submission"
# Book modules every check may reach (the package's own start, the self-check itself).
ALWAYS_ALLOWED = (
    "transformer_lab",
    "transformer_lab.reproducibility",
    "transformer_lab.selfcheck",
)


def set_limits(limits: dict) -> None:
    """Kernel limits, inherited by every child: output file size, CPU time, processes of this
    user (the unprivileged-user level), no new privileges, and death with the grader."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too much output: the write fails
    caps = [(resource.RLIMIT_FSIZE, limits["output_bytes"])]
    caps.append((resource.RLIMIT_CPU, limits["cpu_seconds"]))
    if limits.get("processes"):
        caps.append((resource.RLIMIT_NPROC, limits["processes"]))
    for kind, cap in caps:
        try:
            resource.setrlimit(kind, (cap, cap))
        except (ValueError, OSError):
            pass
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def cap_address_space(cap: object) -> None:
    """``RLIMIT_AS``: the worker's size once torch is in (measured by the grader), plus the
    student's memory."""
    if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0:
        import resource

        try:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ValueError, OSError):
            pass


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
        from transformer_lab.selfcheck.execution import execute, execute_gradient

        op = message[0]
        if op in ("call", "gradient"):
            _, name, args, options = message
            function = getattr(self.module, name)
            hints, allowed = options.get("hints", ()), options.get("book", ())
            if op == "gradient":
                report = self.book.watch(
                    allowed,
                    lambda: execute_gradient(
                        function,
                        args,
                        options["names"],
                        options["pick"],
                        hints,
                        catch_interrupt=True,
                        seed=options.get("seed", 0),
                    ),
                )
                return ("gradient", self.encode(report))
            returned = self.book.watch(
                allowed,
                lambda: execute(
                    function,
                    args,
                    hints,
                    True,
                    catch_interrupt=True,
                    quiet=options.get("quiet", False),
                ),
            )
            return (
                "returned",
                self.encode(returned.result),
                self.encode(returned.args),
                returned.library,
            )
        from transformer_lab.selfcheck.execution import execute as run

        self.book.seen = []
        target = self.objects[message[1]]
        if op == "getattr":
            value = run(getattr, [target, message[2]], catch_interrupt=True).result
        else:  # "invoke"
            value = run(target, list(message[2]), catch_interrupt=True, quiet=True).result
        return ("value", self.encode(value, True))


def describe_functions(module: types.ModuleType, names: list[str]) -> dict[str, dict]:
    from transformer_lab.selfcheck.execution import static_library_use

    info = {}
    for name in names:
        function = getattr(module, name, None)
        if function is not None:
            info[name] = {
                "callable": callable(function),
                "module": str(getattr(function, "__module__", "") or ""),
                "library": static_library_use(function) if callable(function) else [],
            }
    return info


def _streams() -> None:
    """Text streams on the inherited output file, and no keyboard."""
    sys.stdin = open(os.devnull)  # noqa: SIM115
    for fd, name in ((1, "stdout"), (2, "stderr")):
        stream = io.TextIOWrapper(
            os.fdopen(fd, "wb", buffering=0, closefd=False),
            line_buffering=True,
            errors="replace",
            write_through=True,
        )
        setattr(sys, name, stream)


def main() -> None:
    from multiprocessing.connection import Connection

    conn = Connection(int(sys.argv[1]))
    path, config = sys.argv[2], json.loads(sys.argv[3])
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    _streams()
    set_limits(config["limits"])
    import torch  # noqa: F401 - before the student's file, as in the checking process

    import transformer_lab  # noqa: F401 - the canonical numeric mode
    from transformer_lab.selfcheck import errors, execution, transport  # noqa: F401

    execution.install_library_spies()
    server = Server(conn, path)
    server.reply(("ready", os.getpid()))
    try:  # the file loads (and its time limit starts) when the grader asks
        request = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    cap_address_space(request[1])
    try:
        server.module = execution.load_source(path, STUDENT_MODULE)
    except BaseException as error:  # noqa: BLE001 - SystemExit, KeyboardInterrupt too
        server.reply(("load_error", errors.summarise_exception(error, path)))
        return
    server.reply(("loaded", describe_functions(server.module, config["names"])))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        server.reply(server.serve(message))
