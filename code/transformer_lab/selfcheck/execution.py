"""Calling a student's function and describing what happened, in this process or in a worker.

A check calls student code only through a :class:`StudentFunction`: it returns the result (and
the arguments after the call, to catch in-place changes) or raises ``NotImplementedError``,
``core.StudentRaised`` (one summarised line) or ``core.StudentStopped`` (a time-out or an ended
worker). :class:`LocalFunction` (tests, pages) and the worker both use :func:`execute` and
:func:`execute_gradient`, so a diagnosis is the same either way.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tokenize
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch

from transformer_lab.selfcheck.core import StudentRaised
from transformer_lab.selfcheck.errors import summarise_exception

# Library functions that compute attention for the student; Exercise 3 and the multi-head stretch
# ask for it by hand. (module, attribute, the name the report uses)
LIBRARY_ATTENTION: tuple[tuple[object, str, str], ...] = (
    (torch.nn.functional, "scaled_dot_product_attention", "F.scaled_dot_product_attention"),
    (torch.nn.functional, "multi_head_attention_forward", "F.multi_head_attention_forward"),
    (torch, "_native_multi_head_attention", "torch._native_multi_head_attention"),
    (torch.nn.MultiheadAttention, "forward", "nn.MultiheadAttention"),
)


@dataclass
class Returned:
    """What a call gave back: the result, the arguments after the call, library attention used."""

    result: object
    args: list = field(default_factory=list)
    library: list[str] = field(default_factory=list)


@dataclass
class GradientReport:
    """Did a gradient flow from the (picked) result back to each named input, and which?

    ``gradients[name]`` is the gradient of ⟨c, result⟩ with respect to that input (float64, the
    input's shape), for the cotangent c = :func:`cotangent` (result's shape, ``seed``): the
    checking process compares it with the reference's, so a worker cannot claim a gradient
    without computing the right one."""

    requires_grad: bool
    reached: dict[str, str]  # name -> "finite", "none" or "not finite"
    gradients: dict[str, torch.Tensor] = field(default_factory=dict)


@dataclass(frozen=True)
class Opaque:
    """Stands in for a returned object that does not travel between processes as data (a
    generator, a lambda, an instance of a class defined in the student's file)."""

    type_name: str
    text: str
    category: str = ""  # "trainer" or "model" for a tokenizers trainer or model

    def __repr__(self) -> str:
        return self.text


def type_name(value: object) -> str:
    """'int', 'numpy.float32', 'torch.Tensor', or the original type of an :class:`Opaque`."""
    if isinstance(value, Opaque):
        return value.type_name
    kind = type(value)
    if kind.__module__ in ("builtins", "__main__"):
        return kind.__name__
    module = kind.__module__.split(".")[0]
    return f"{module}.{kind.__name__}"


_RECORDS: list[list[str]] = []  # the open recordings; spies append to each
_INSTALLED: list[tuple[object, str, object]] = []  # (owner, attribute, original)


def install_library_spies() -> None:
    """Wrap each library attention function so that a call is recorded (and still computed).

    For code run in this process (:class:`LocalFunction`: tests, pages) and in a worker, which
    installs them before the student's file loads. A record names a mistake; it is no defence."""
    if _INSTALLED:
        return
    for owner, attribute, label in LIBRARY_ATTENTION:
        original = getattr(owner, attribute, None)
        if original is None:
            continue

        def spy(*args, _original=original, _label=label, **kwargs):
            for record in _RECORDS:
                record.append(_label)
            return _original(*args, **kwargs)

        _INSTALLED.append((owner, attribute, original))
        setattr(owner, attribute, spy)


def remove_library_spies() -> None:  # (owner, attribute, original) back in place
    while _INSTALLED:
        owner, attribute, original = _INSTALLED.pop()
        setattr(owner, attribute, original)


@contextlib.contextmanager
def library_spy() -> Iterator[list[str]]:
    """Record every call of a library attention function while the block runs.

    Spies installed here (none were in place) are removed again afterwards."""
    temporary = not _INSTALLED
    if temporary:
        install_library_spies()
    record: list[str] = []
    _RECORDS.append(record)
    try:
        yield record
    finally:
        _RECORDS.remove(record)
        if temporary:
            remove_library_spies()


def static_library_use(function: Callable) -> list[str]:
    """Library attention named in the function's code: an attribute such as
    ``F.scaled_dot_product_attention`` or a global bound to one (``from ... import ...``)."""
    code = getattr(function, "__code__", None)
    if code is None:
        return []
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    found = []
    bound = [getattr(function, "__globals__", {}).get(name) for name in names]
    for owner, attribute, label in LIBRARY_ATTENTION:
        originals = [o for w, a, o in _INSTALLED if (w, a) == (owner, attribute)]
        targets = [
            t for t in (getattr(owner, attribute, None), *originals) if t is not None
        ]
        by_alias = any(value is t for value in bound for t in targets)
        if by_alias or (attribute in names and attribute != "forward"):
            found.append(label)
    return sorted(set(found))


_DOT_T_SEEN: list[int] = []  # the dimensions of the tensors .T met during the current call


def _recording_dot_t(self):
    if self.dim() != 2:
        _DOT_T_SEEN.append(self.dim())
    return torch._C.TensorBase.T.__get__(self)


@contextlib.contextmanager
def dot_t_spy() -> Iterator[list[int]]:
    """While the block runs, note the dimension of every tensor that is not 2-D and meets
    ``.T`` (PyTorch warns only once per process, so the warning alone would miss the second)."""
    _DOT_T_SEEN.clear()
    torch.Tensor.T = property(_recording_dot_t)
    try:
        yield _DOT_T_SEEN
    finally:
        del torch.Tensor.T


def uses_dot_t(function: Callable, caught: Sequence[warnings.WarningMessage]) -> bool:
    """Did the function use ``.T`` on a tensor that is not 2-D (a batched one)? Only such a
    ``.T`` counts: a ``.T`` of a 2-D tensor (a padding mask, a matrix) is an ordinary transpose."""
    if any("on tensors of dimension other than 2" in str(w.message) for w in caught):
        return True
    return bool(_DOT_T_SEEN)


def describe(function: object) -> dict:
    """What the runner needs to know of a name in the student's file before checking it."""
    return {
        "callable": callable(function),
        "module": str(getattr(function, "__module__", "") or ""),
        "library": static_library_use(function) if callable(function) else [],
    }


def _summarise(function: Callable, error: BaseException, hints, caught) -> str:
    extra = list(hints)
    if isinstance(error, Exception) and uses_dot_t(function, caught):
        # First: this call did put a batched tensor through .T (seen, not guessed from the
        # source), and every shape after it is wrong, so a task hint matching the later shape
        # error would send the student after a symptom (a mask already lined up, say).
        extra.insert(
            0, (r".", ".T on a 3-D tensor reverses all three axes; use k.transpose(-2, -1)")
        )
    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    return summarise_exception(error, filename, extra)


@contextlib.contextmanager
def silenced_terminal() -> Iterator[None]:
    """Send what native code writes straight to file descriptors 1 and 2 (the tokenizer trainer's
    progress bars) to /dev/null while the block runs, so that the report stays readable."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def _catchable(catch_interrupt: bool) -> tuple[type[BaseException], ...]:
    return (Exception, SystemExit) + ((KeyboardInterrupt,) if catch_interrupt else ())


def execute(
    function: Callable,
    args: Sequence[object],
    hints=(),
    watch_library: bool = False,
    catch_interrupt: bool = False,
    quiet: bool = False,
) -> Returned:
    """Call ``function(*args)``; ``NotImplementedError`` passes through, any other exception
    (``SystemExit`` included; ``KeyboardInterrupt`` when ``catch_interrupt``) becomes
    ``StudentRaised`` with one summarised line. ``quiet`` silences the terminal meanwhile."""
    args = list(args)
    spy = library_spy() if watch_library else contextlib.nullcontext([])
    catchable = _catchable(catch_interrupt)
    silence = silenced_terminal() if quiet else contextlib.nullcontext()
    with warnings.catch_warnings(record=True) as caught, spy as used, silence, dot_t_spy():
        warnings.simplefilter("always")
        try:
            result = function(*args)
        except NotImplementedError:
            raise
        except catchable as error:  # noqa: BLE001 - any student error becomes one line
            raise StudentRaised(_summarise(function, error, hints, caught)) from None
    return Returned(result, args, list(dict.fromkeys(used)))


def load_module(
    path: str | os.PathLike, name: str = "student_submission"
) -> types.ModuleType:
    """Run a Python file as module ``name`` in this process (trusted code, or the worker),
    reading it as ``python FILE`` would: bytes decoded by its encoding declaration or BOM
    (else UTF-8, strictly), never a cached ``.pyc``."""
    with open(path, "rb") as handle:
        source = handle.read()
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding)  # "utf-8-sig" drops a BOM
    except (SyntaxError, UnicodeDecodeError) as error:
        raise _undecodable(source, error) from None
    code = compile(text, os.fspath(path), "exec", dont_inherit=True)
    module = types.ModuleType(name)
    module.__file__ = os.fspath(path)
    sys.modules[name] = module
    exec(code, module.__dict__)  # noqa: S102 - the point: the student's file
    return module


def _undecodable(source: bytes, error: SyntaxError | UnicodeDecodeError) -> SyntaxError:
    """The SyntaxError ``python FILE`` gives for a file it cannot decode, with advice."""
    advice = "Python rejects the file; save it as UTF-8, or declare its encoding on the first line"
    if isinstance(error, SyntaxError):  # a bad encoding declaration
        return SyntaxError(f"{error} ({advice})")
    line = source[: error.start].count(b"\n") + 1
    return SyntaxError(
        f"Non-{error.encoding.upper()} code starting with "
        f"{source[error.start : error.start + 1]!r} on line {line}, but no encoding declared "
        f"({advice})"
    )


def cotangent(shape: Sequence[int], seed: int) -> torch.Tensor:
    """A float64 tensor of ``shape`` drawn from N(0, 1) with ``seed``: the weights of the
    result's entries in a gradient check (every entry counts, each with its own weight)."""
    return torch.randn(
        tuple(shape), dtype=torch.float64, generator=torch.Generator().manual_seed(seed)
    )


def execute_gradient(
    function: Callable,
    args: Sequence[object],
    names: Sequence[str],
    pick: str,
    hints=(),
    catch_interrupt: bool = False,
    seed: int = 0,
) -> GradientReport:
    """Call ``function`` with the first ``len(names)`` arguments requiring gradients, backpropagate
    ⟨c, picked result⟩ with c = ``cotangent(result shape, seed)``, and report for each input
    whether a finite gradient reached it, and the gradient itself."""
    leaves = [
        torch.as_tensor(a).detach().clone().requires_grad_(True) for a in args[: len(names)]
    ]
    returned = execute(
        function, [*leaves, *args[len(names) :]], hints, catch_interrupt=catch_interrupt
    )
    out = returned.result  # the whole result, or with pick "first" the first of a pair
    if pick == "first" and isinstance(out, (tuple, list)) and out:
        out = out[0]
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return GradientReport(False, {})
    try:
        (out.double() * cotangent(out.shape, seed)).sum().backward()
    except _catchable(catch_interrupt) as error:  # noqa: BLE001 - e.g. an in-place change
        raise StudentRaised(
            "the gradient could not be computed: " + summarise_exception(error)
        ) from None
    reached, gradients = {}, {}
    for leaf, name in zip(leaves, names):
        if leaf.grad is None:
            reached[name] = "none"
        else:
            reached[name] = (
                "finite" if bool(torch.isfinite(leaf.grad).all()) else "not finite"
            )
            gradients[name] = leaf.grad.detach().double()
    return GradientReport(True, reached, gradients)


class StudentFunction:
    """The student's function as the checks see it: ``call(*args, hints, watch_library,
    quiet)`` gives a :class:`Returned` (as :func:`execute`), ``gradient(args, names, pick,
    hints, seed)`` a :class:`GradientReport` (as :func:`execute_gradient`)."""

    name: str = ""
    library_names: list[str] = []


class LocalFunction(StudentFunction):
    """A student function run in this process (no time limit; ``KeyboardInterrupt`` stops it)."""

    def __init__(self, function: Callable):
        self.function = function
        self.name = getattr(function, "__name__", "function")
        self.library_names = static_library_use(function)

    def call(
        self, *args, hints=(), watch_library: bool = False, quiet: bool = False
    ) -> Returned:
        return execute(self.function, args, hints, watch_library, quiet=quiet)

    def gradient(self, args, names, pick: str, hints=(), seed: int = 0) -> GradientReport:
        return execute_gradient(self.function, args, names, pick, hints, seed=seed)


def as_student(function) -> StudentFunction:
    """Wrap a plain callable; pass a :class:`StudentFunction` through."""
    return function if isinstance(function, StudentFunction) else LocalFunction(function)
