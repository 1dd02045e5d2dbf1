"""The worker: a fresh interpreter that loads one student's file and calls its functions on request.

It runs from the skeleton of :mod:`transformer_lab.selfcheck.isolation` (no answers in it), and
before the student's file is loaded it arms three defences that hold against code run later in
the same process:

- **tripwires for the book**: any other ``transformer_lab`` module imports as a stand-in whose
  every attribute is a function that reports "uses the book's implementation" and raises;
- **tripwires for the library's attention**: PyTorch's attention operators are replaced in the
  dispatcher (so every route to them, ``F.scaled_dot_product_attention`` under any name,
  ``torch.ops.aten``, ``getattr``, a default argument captured at import, ``nn.MultiheadAttention``
  and the encoder layers, reaches the tripwire), and the handle that could undo that is kept out
  of Python's reach; ``F.multi_head_attention_forward`` and ``nn.MultiheadAttention.forward`` are
  replaced too, and re-running a loaded torch module to get fresh copies is refused, as is code
  compiled, unmarshalled or run that is a copy of them under any file name (``copied_from``:
  the same torch names as the original, whatever its bytecode); so is the
  attention PyTorch keeps in Python (``disarm_python_attention``: the quantizable and quantized
  multi-head layers, flex attention, the decomposition tables), and importing a torch module
  that holds more of it;
- **an audit hook** (cannot be removed from Python) that refuses to open the hidden paths (the
  project, the package's source, other submissions, the results) or to write outside the working
  folder; at the ``process`` level (no bubblewrap) it also refuses to start programs, to use
  ``ctypes`` and to signal other processes.

A tripwire that fires writes its name to a pipe the checking process reads (so a student cannot
take it back), and the call is reported as tripped, whatever the function did next.

Everything the worker sends back is plain data in JSON and raw bytes, never a pickle (see
``transport``); a returned tokenizer stays here and the checks call its methods remotely, under
the same time limit.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import io
import json
import os
import pickle
import signal
import sys
import types
import warnings
import weakref
from pathlib import Path

STUDENT_MODULE = "student_submission"
SKELETON_MODULES = {
    "transformer_lab",
    "transformer_lab.reproducibility",
    "transformer_lab.validation",
    "transformer_lab.selfcheck",
    "transformer_lab.selfcheck.core",
    "transformer_lab.selfcheck.errors",
    "transformer_lab.selfcheck.execution",
    "transformer_lab.selfcheck.transport",
    "transformer_lab.selfcheck.sandbox",
    "transformer_lab.selfcheck.model_parts",
}
BOOK_PREFIX = "book:"
# aten operators that compute attention, and the name a report gives them.
ATTENTION_OPERATORS = {
    "scaled_dot_product_attention": "F.scaled_dot_product_attention",
    "_scaled_dot_product_attention_math": "F.scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu": "F.scaled_dot_product_attention",
    "_fused_sdp_choice": "F.scaled_dot_product_attention",
    "_native_multi_head_attention": "torch._native_multi_head_attention",
    "_transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer",
}
TRIPPED: list[str] = []
_ALARM = {"fd": -1}


class UsesTheAnswer(BaseException):
    """Raised by a tripwire (a BaseException, so that ``except Exception`` does not hide it)."""


def trip(label: str) -> None:
    """Record ``label`` here and on the alarm pipe, then stop the student's call."""
    TRIPPED.append(label)
    try:
        os.write(_ALARM["fd"], (label + "\n").encode("utf-8", "replace"))
    except OSError:
        pass
    raise UsesTheAnswer(label)


# ---------------------------------------------------------------------------------------------
# Tripwires
# ---------------------------------------------------------------------------------------------


def _book_function(module: str, name: str):
    def tripwire(*args, **kwargs):
        trip(f"{BOOK_PREFIX}{module}.{name}")

    tripwire.__module__, tripwire.__name__, tripwire.__qualname__ = module, name, name
    return tripwire


class _BookModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _book_function(self.__name__, name)


class BookStandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``transformer_lab.<anything not in the skeleton>`` imports as a module of tripwires."""

    def __init__(self, allowed: list[str] = ()):
        self.allowed = SKELETON_MODULES | set(allowed)

    def find_spec(self, fullname, path=None, target=None):
        if fullname.startswith("transformer_lab.") and fullname not in self.allowed:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _BookModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module) -> None:
        pass


def _library_function(label: str):
    def tripwire(*args, **kwargs):
        trip(label)

    tripwire.__name__ = tripwire.__qualname__ = label.rsplit(".", 1)[-1]
    return tripwire


def arm_library_tripwires() -> None:
    """Replace PyTorch's attention in the dispatcher and in ``torch.nn`` (see the docstring)."""
    import ctypes

    import torch

    library = torch.library.Library("aten", "IMPL")
    for operator, label in attention_operators().items():
        qualified = f"aten::{operator}"
        for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CPU"):
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    library.impl(operator, _library_function(label), key)
    # The C++ handle keeps the registrations. The Python object that could undo them goes (its
    # finalizer detached first), and one leaked reference keeps the handle alive: being invisible
    # to the garbage collector, it is out of reach of code that looks for it.
    for finalizer in list(weakref.finalize._registry):
        info = finalizer.peek()
        if info is not None and info[0] is library:
            finalizer.detach()
    handle = library.m
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(handle))
    library.m = None
    del library, handle, finalizer, info
    remember_code(
        torch.nn.functional.multi_head_attention_forward, "F.multi_head_attention_forward"
    )
    remember_code(torch.nn.MultiheadAttention.forward, "nn.MultiheadAttention")
    torch.nn.functional.multi_head_attention_forward = _library_function(
        "F.multi_head_attention_forward"
    )
    torch.nn.MultiheadAttention.forward = _library_function("nn.MultiheadAttention")
    disarm_python_attention()


# What the library's attention code *is*, whatever file it is compiled from: the names each of
# its code objects uses (torch's functions and attributes, its private helpers). A copy compiled
# from torch's source under another file name uses the same names, however its bytecode's
# jumps or line numbers came out; a student's own attention uses a few of them.
COPIED_CODE: list[tuple[frozenset, str]] = []
FINGERPRINT_NAMES = 12  # smaller code objects are too generic to recognise
SHARED_NAMES = 0.9  # the share of a fingerprint's names a copy uses


def _code_objects(code: types.CodeType, depth: int = 0):
    yield code
    if depth < 20:
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                yield from _code_objects(constant, depth + 1)


def remember_code(function: object, label: str) -> None:
    """Record the fingerprints of ``function``'s code (see :data:`COPIED_CODE`)."""
    code = getattr(function, "__code__", None)
    if not isinstance(code, types.CodeType):
        return
    for inner in _code_objects(code):
        if len(set(inner.co_names)) >= FINGERPRINT_NAMES:
            COPIED_CODE.append((frozenset(inner.co_names), label))


def copied_from(code: object, fingerprints: tuple) -> str | None:
    """The label of the library attention ``code`` (or code nested in it) is a copy of."""
    if not isinstance(code, types.CodeType):
        return None
    for inner in _code_objects(code):
        names = set(inner.co_names)
        if len(names) < FINGERPRINT_NAMES:
            continue
        for fingerprint, label in fingerprints:
            if len(fingerprint & names) >= SHARED_NAMES * len(fingerprint):
                return label
    return None


def attention_operators() -> dict[str, str]:
    """Every aten operator that computes attention (the named ones, and any other with
    "attention" in its name: the CPU math kernels, the quantized and backend variants)."""
    import torch

    operators = dict(ATTENTION_OPERATORS)
    for name in torch._C._dispatch_get_all_op_names():
        operator = name.removeprefix("aten::")
        if name.startswith("aten::") and "attention" in operator:
            operators.setdefault(operator, f"torch.ops.aten.{operator}")
    return operators


def _names_attention(name: str) -> bool:
    lowered = name.lower()
    return "attention" in lowered or "sdpa" in lowered


def disarm_python_attention() -> None:
    """Attention that PyTorch implements in Python, out of the dispatcher's reach: in every
    loaded ``torch`` module, a function named for attention becomes a tripwire, a module class
    named for it (the quantizable and quantized ``MultiheadAttention``) gets a tripwire for a
    forward, a higher-order operator named for it (flex attention) loses its kernels, and the
    decomposition tables lose their attention entries. Modules loaded later are refused
    (``Guard``: :data:`REFUSED_IMPORTS`)."""
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated names warn when looked at
        _disarm_modules(torch)
    for table in getattr(torch._decomp, "global_decomposition_table", {}).values():
        for key in [k for k in table if _names_attention(str(k))]:
            del table[key]


def _disarm_modules(torch) -> None:
    for module_name, module in list(sys.modules.items()):
        if module_name != "torch" and not module_name.startswith("torch."):
            continue
        if not isinstance(module, types.ModuleType):
            continue
        for name, value in list(vars(module).items()):
            if isinstance(value, dict) and "decomp" in module_name:
                for key in [k for k in value if _names_attention(str(k))]:
                    del value[key]
            if not _names_attention(name):
                continue
            label = f"{module_name}.{name}"
            if isinstance(value, types.FunctionType):
                remember_code(value, label)
                setattr(module, name, _library_function(label))
            elif isinstance(value, type) and issubclass(value, torch.nn.Module):
                remember_code(getattr(value, "forward", None), label)
                value.forward = _library_function(label)
                if hasattr(value, "_forward_impl"):
                    value._forward_impl = _library_function(label)
            elif isinstance(value, torch._ops.HigherOrderOperator):
                value.py_kernels.clear()
                value.python_key_table.clear()
                value._dispatch_cache.clear()
                setattr(module, name, _library_function(label))


# New ``torch`` modules whose name says attention (or quantized layers, where PyTorch keeps
# another multi-head attention in Python): refused while student code runs.
REFUSED_IMPORT_WORDS = ("attention", "quantiz", "testing._internal")


def refused_import(name: str) -> bool:
    return (name == "torch" or name.startswith("torch.")) and any(
        word in name for word in REFUSED_IMPORT_WORDS
    )


# ---------------------------------------------------------------------------------------------
# The audit hook
# ---------------------------------------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PATH_EVENTS = {
    "os.remove",
    "os.rename",
    "os.rmdir",
    "os.mkdir",
    "os.chmod",
    "os.chown",
    "os.symlink",
    "os.link",
    "os.truncate",
    "os.utime",
    "os.chflags",
    "os.lchflags",
    "os.setxattr",
    "os.removexattr",
    "shutil.rmtree",
    "shutil.copyfile",
    "shutil.move",
}
_PROGRAM_EVENTS = {
    "os.fork",  # a daemon outlives a grader that is killed (no PID namespace to end it)
    "subprocess.Popen",
    "os.system",
    "os.exec",
    "os.posix_spawn",
    "os.spawn",
    "os.forkpty",
    "pty.spawn",
}


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class Guard:
    """The audit hook's rules (see the module docstring)."""

    def __init__(self, hidden: list[str], workdir: str, strict: bool):
        self.hidden = [os.path.realpath(p) for p in hidden]
        self.workdir = os.path.realpath(workdir)
        self.writable = [self.workdir, "/dev/null"]
        self.visible = [
            os.path.realpath(p)
            for p in (sys.prefix, sys.base_prefix, os.path.dirname(os.__file__))
        ]
        self.visible += [self.workdir] + [
            os.path.realpath(p) for p in sys.path if p and "site-packages" in p
        ]
        self.skeleton = os.path.realpath(Path(__file__).parents[2])
        self.visible.append(self.skeleton)
        self.strict = strict
        self.library = (
            False  # refuse new torch modules that hold attention (tripwires armed)
        )
        self.armed = False
        self.busy = False
        self.copies: tuple = ()  # fingerprints of the library's attention (tripwires armed)
        self.reloading: set[str] = set()

    def arm(self) -> None:

        self.reloading = {
            os.path.realpath(m.__file__)
            for name, m in list(sys.modules.items())
            if (name == "torch" or name.startswith("torch."))
            and getattr(m, "__file__", None)
        }
        self.armed = True

    def _real(self, path) -> str | None:
        if isinstance(path, int) or path is None:
            return None
        try:
            return os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return None

    def _hidden(self, real: str) -> bool:
        if any(_inside(real, v) for v in self.visible):
            return False
        return any(_inside(real, h) for h in self.hidden)

    def _may_write(self, real: str) -> bool:
        return any(_inside(real, w) for w in self.writable)

    def _compiled(self, event: str, args: tuple) -> None:
        """Code compiled (or unmarshalled) while student code runs: a copy of the library's
        attention trips its tripwire, before a function can be taken out of it."""
        import marshal

        try:
            if event == "marshal.loads":
                code = marshal.loads(args[0])
            else:
                source = args[0]
                if not isinstance(source, (str, bytes, ast.AST)):
                    return
                code = compile(source, "<copy>", "exec", dont_inherit=True)
        except Exception:  # noqa: BLE001 - not code we can read: the real call says why
            return
        label = copied_from(code, self.copies)
        if label is not None:
            trip(label)

    def __call__(self, event: str, args: tuple) -> None:
        if not self.armed or self.busy:
            return
        self.busy = True
        try:
            self._check(event, args)
        finally:
            self.busy = False

    def _check(self, event: str, args: tuple) -> None:
        if event == "open":
            real = self._real(args[0])
            if real is None:
                return
            mode, flags = args[1] or "", args[2] or 0
            writing = any(c in str(mode) for c in "wax+") or bool(flags & _WRITE_FLAGS)
            if self._hidden(real):
                raise PermissionError(f"the self-check does not let your code open {real}")
            if writing and not self._may_write(real):
                raise PermissionError(
                    f"the self-check lets your code write only in its own folder, not {real}"
                )
        elif event in ("os.listdir", "os.scandir", "sqlite3.connect", "glob.glob"):
            real = self._real(args[0]) if args else None
            if real is not None and self._hidden(real):
                raise PermissionError(f"the self-check does not let your code read {real}")
        elif event in _PATH_EVENTS:
            for value in args[:2]:
                real = (
                    self._real(value)
                    if isinstance(value, (str, bytes, os.PathLike))
                    else None
                )
                if real is not None and not self._may_write(real):
                    raise PermissionError(
                        f"the self-check lets your code change files only in its own folder, not {real}"
                    )
        elif event == "import":
            name = args[0] if args else ""
            if self.library and isinstance(name, str) and name not in sys.modules:
                if refused_import(name):
                    raise PermissionError(
                        f"the self-check does not let your code import {name} (it holds "
                        "PyTorch's own attention)"
                    )
        elif event in ("compile", "marshal.loads") and self.copies:
            self._compiled(event, args)
        elif event == "exec":
            code = args[0] if args else None
            if self.copies:
                label = copied_from(code, self.copies)
                if label is not None:
                    trip(label)
            filename = getattr(code, "co_filename", "")
            if getattr(code, "co_name", "") == "<module>" and filename:
                if os.path.realpath(filename) in self.reloading:
                    raise PermissionError(
                        "the self-check does not let your code run a loaded torch module again"
                    )
        elif self.strict:
            if event in _PROGRAM_EVENTS:
                raise PermissionError(
                    "the self-check does not let your code start programs"
                )
            if event.startswith("ctypes."):
                raise PermissionError("the self-check does not let your code use ctypes")
            if event in ("os.kill", "os.killpg", "signal.pthread_kill"):
                pid = args[0] if args else 0
                if event != "signal.pthread_kill" and pid not in (0, os.getpid()):
                    raise PermissionError(
                        "the self-check does not let your code signal other processes"
                    )


# ---------------------------------------------------------------------------------------------
# Serving calls
# ---------------------------------------------------------------------------------------------


class Objects:
    """Objects that stay in the worker (a returned tokenizer, its parts); the parent holds handles."""

    def __init__(self):
        self.table: dict[int, object] = {}

    def keep(self, value: object, anything: bool) -> int | None:
        from tokenizers import Tokenizer

        module = type(value).__module__ or ""
        if isinstance(value, Tokenizer) or (
            anything and (module.startswith("tokenizers") or callable(value))
        ):
            handle = len(self.table) + 1
            self.table[handle] = value
            return handle
        return None


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


def _caps(limits: dict) -> None:
    """Per-process caps the kernel enforces (``setrlimit``, inherited by every child): file
    size and CPU time; the address space follows (:func:`cap_address_space`) once the parent
    has measured the worker. The cgroup of ``isolation.worker_cgroup``, where there is one,
    caps the whole sandbox."""
    try:
        import resource
    except ImportError:  # Windows
        return
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too much output: a write fails
    try:
        cap = limits["output_bytes"]
        resource.setrlimit(resource.RLIMIT_FSIZE, (cap, cap))
    except (ValueError, OSError):
        pass
    try:  # CPU time: SIGXCPU ends the worker, SIGKILL a few seconds later if it ignores that
        cap = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 5))
    except (KeyError, ValueError, OSError):
        pass


def cap_address_space(cap: object) -> None:
    """``RLIMIT_AS`` of ``cap`` bytes (Linux): the worker's size once torch is in, which the
    parent read from outside (the sandbox has no ``/proc``), plus the student's memory."""
    if not isinstance(cap, int) or isinstance(cap, bool) or cap <= 0:
        return
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def _die_with_parent() -> None:
    """Linux: SIGKILL when the launcher dies (in case ``setpriv`` was missing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _refuse(what: str):
    def refused(*args, **kwargs):
        raise PermissionError(f"the self-check does not let your code {what}")

    return refused


def close_unaudited_routes() -> None:
    """The process level: routes to other processes that raise no audit event (a pidfd sends a
    signal to any process; ``_posixsubprocess`` starts programs) are refused too."""
    import _posixsubprocess
    import posix

    for module in (os, posix, signal):
        for name in ("pidfd_open", "pidfd_send_signal"):
            if hasattr(module, name):
                setattr(module, name, _refuse("signal other processes"))
    _posixsubprocess.fork_exec = _refuse("start programs")


def describe_functions(module: types.ModuleType, names: list[str]) -> dict[str, dict]:
    from transformer_lab.selfcheck.execution import static_library_use

    info = {}
    for name in names:
        function = getattr(module, name, None)
        if function is None:
            continue
        info[name] = {
            "callable": callable(function),
            "module": str(getattr(function, "__module__", "") or ""),
            "library": static_library_use(function) if callable(function) else [],
        }
    return info


class Server:
    def __init__(self, conn, module, path: str):
        self.conn, self.module, self.path = conn, module, path
        self.objects = Objects()

    def reply(self, message: tuple) -> None:
        from transformer_lab.selfcheck.errors import summarise_exception
        from transformer_lab.selfcheck.transport import pack

        try:
            data = pack(message)
        except BaseException as error:  # noqa: BLE001
            data = pack(
                (
                    "raised",
                    "the result could not be sent back: " + summarise_exception(error),
                )
            )
        self.conn.send_bytes(data)

    def encode(self, value, anything: bool):
        from transformer_lab.selfcheck.transport import encode

        return encode(value, keep=lambda v: self.objects.keep(v, anything))

    def serve(self, message: tuple) -> tuple:
        TRIPPED.clear()
        reply = self._serve(message)
        if TRIPPED:  # even when the function caught the tripwire's exception and went on
            return ("tripped", list(dict.fromkeys(TRIPPED)))
        return reply

    def _serve(self, message: tuple) -> tuple:
        from transformer_lab.selfcheck.core import StudentRaised
        from transformer_lab.selfcheck.errors import summarise_exception
        from transformer_lab.selfcheck.execution import execute, execute_gradient

        op = message[0]
        try:
            if op == "gradient":
                _, name, args, options = message
                report = execute_gradient(
                    getattr(self.module, name),
                    args,
                    options["names"],
                    options["pick"],
                    options.get("hints", ()),
                    catch_interrupt=True,
                    seed=options.get("seed", 0),
                )
                return ("gradient", self.encode(report, False))
            if op == "call":
                _, name, args, options = message
                returned = execute(
                    getattr(self.module, name),
                    args,
                    options.get("hints", ()),
                    False,
                    catch_interrupt=True,
                    quiet=options.get("quiet", False),
                )
                return (
                    "returned",
                    self.encode(returned.result, False),
                    self.encode(returned.args, False),
                    [],
                )
            target = self.objects.table[message[1]]
            if op == "getattr":
                value = execute(getattr, [target, message[2]], catch_interrupt=True).result
            else:  # "invoke"
                value = execute(
                    target, list(message[2]), catch_interrupt=True, quiet=True
                ).result
            return ("value", self.encode(value, True))
        except NotImplementedError as error:
            return ("not_done", str(error).strip())
        except StudentRaised as raised:
            return ("raised", raised.line)
        except BaseException as error:  # noqa: BLE001 - a tripwire, or an error while summarising
            return ("raised", summarise_exception(error, self.path))


def load_file(path: str) -> types.ModuleType:
    from transformer_lab.selfcheck.execution import load_source

    return load_source(path, STUDENT_MODULE)


def main() -> None:
    """``argv``: the socket's fd, the alarm pipe's fd, the file, then a JSON configuration."""
    from multiprocessing.connection import Connection

    conn_fd, alarm_fd, path, config = (
        int(sys.argv[1]),
        int(sys.argv[2]),
        sys.argv[3],
        json.loads(sys.argv[4]),
    )
    _ALARM["fd"] = alarm_fd
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the grader's to handle
    _die_with_parent()
    _streams()
    conn = Connection(conn_fd)
    import torch  # noqa: F401 - loaded before the hook is armed

    import transformer_lab  # noqa: F401 - the canonical numeric mode, as in the checking process
    from transformer_lab.selfcheck import errors, execution, transport  # noqa: F401

    try:
        import tokenizers  # noqa: F401
    except ImportError:  # pragma: no cover
        pass
    _caps(config["limits"])
    sys.meta_path.insert(0, BookStandIns(config.get("book_modules", [])))
    if config.get("library_tripwires", True):
        arm_library_tripwires()
    guard = Guard(config["hidden"], os.path.dirname(path), config["level"] != "bubblewrap")
    guard.library = config.get("library_tripwires", True)
    if guard.library:
        guard.copies = tuple(COPIED_CODE)
    if guard.strict:
        close_unaudited_routes()
    guard.visible += [os.path.realpath(p) for p in config.get("visible", [])]
    sys.addaudithook(guard)
    guard.arm()
    server = Server(conn, None, path)
    server.reply(("ready",))
    # A worker may be started ahead of its checks: the file loads (and the parent's time limit
    # for that starts) only when the parent asks.
    try:
        request = pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return
    if request[0] != "load":
        return
    cap_address_space(request[1] if len(request) > 1 else None)
    try:
        module = load_file(path)
    except BaseException as error:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, tripwires too
        if TRIPPED:
            server.reply(("load_error", f"the file calls {TRIPPED[0]} while loading"))
        else:
            server.reply(("load_error", errors.summarise_exception(error, path)))
        return
    server.module = module
    server.reply(("loaded", describe_functions(module, config["names"])))
    while True:
        try:
            message = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if message[0] == "stop":
            return
        server.reply(server.serve(message))
