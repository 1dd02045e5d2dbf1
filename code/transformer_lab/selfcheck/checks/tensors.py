"""What every check shares: the :class:`Check` that ``@checker`` makes of a check's body, the
:class:`Evidence` its failures show, and the drawing, comparing and printing of the tensors the
checks exchange with the student's functions."""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from transformer_lab.selfcheck.core import (
    CheckResult,
    Mistake,
    article,
    diagnose,
    fail,
    fail_if_none,
    fail_with,
    run_check,
)
from transformer_lab.selfcheck.execution import (
    StudentFunction,
    as_student,
    execute_gradient,
    type_name,
)
from transformer_lab.selfcheck.transport import bounded_repr

# How close a student's gradient must come to the reference's: two float32 computations of the
# same function differ in the last digits; a part left out of autograd differs in the first.
GRADIENT_RTOL = 1e-4
GRADIENT_ATOL = 1e-5


@dataclass(frozen=True)
class Check:
    """One graded function: its name, its exercise, its signature and the check that runs it."""

    name: str
    exercise: str
    signature: str
    run: Callable[[object], CheckResult]
    # A stretch exercise: leaving it alone is "not attempted", not a failure.
    optional: bool = False
    requires: str | None = None  # a check whose function this one calls: it must pass first
    # Book modules the student's code builds on (the model it is handed, a helper it imports):
    # only these load for real in the worker; every other book module is a tripwire there.
    book_modules: tuple[str, ...] = ()
    # True when PyTorch's attention may run in the worker (inside the book's own encoder layer).
    library_attention: bool = False

    def __call__(self, function) -> CheckResult:
        return self.run(function)


def checker(exercise: str, signature: str, **options) -> Callable:
    """Make ``body(student)``, which fails at the first mistake, the :class:`Check` of
    ``signature`` (its name is the function's; ``options``: its other fields)."""
    name = signature.partition("(")[0]

    def make(body: Callable[[StudentFunction], None]) -> Check:
        def run(function) -> CheckResult:
            student = as_student(function)
            return run_check(name, exercise, lambda: body(student))

        return Check(name, exercise, signature, run, **options)

    return make


# --------------------------------------------------------------------------- probes every CPU draws alike

# The sum of four uniform integers in [-64, 64] has this standard deviation, √(4 (129² − 1) / 12).
_SPREAD = math.sqrt(4 * (129**2 - 1) / 12)


def exact_normal(generator: torch.Generator, *shape: int, std: float = 1.0) -> torch.Tensor:
    """float32 numbers of the given shape, spread like N(0, std²), that every CPU draws bit for bit.

    A stored answer is found by the exact bytes of its input, so a probe must not depend on the
    CPU. ``torch.randn`` computes its numbers with logarithms and cosines whose vectorised
    kernels round differently with and without AVX2, and on ARM; and a probe drawn from the
    global generator changes when another thread draws from it. Here only integers are drawn,
    from ``generator`` alone: the sum of four uniform integers in [-64, 64] (bell-shaped), times
    one float (a single, correctly rounded multiplication)."""
    counts = torch.randint(-64, 65, (4, *shape), generator=generator).sum(dim=0)
    return counts.to(torch.float32) * (std / _SPREAD)


def draw_parameters(module: nn.Module, generator: torch.Generator) -> nn.Module:
    """Refill every parameter of ``module`` in place from ``generator`` by :func:`exact_normal`;
    returns ``module``. Hand it a copy (of a layer built once, e.g. with ``functools.cache``):
    its numbers then owe nothing to the global generator, which other threads share.

    An embedding table gets std 1 and a zero padding row (as ``nn.Embedding`` starts); a
    LayerNorm its ones and zeros; any other matrix or bias std 1/√(3·fan_in), the spread of
    PyTorch's default start, fan_in being the last axis of its module's matrix."""
    with torch.no_grad():
        for part in module.modules():
            if isinstance(part, nn.LayerNorm):
                part.reset_parameters()
                continue
            own = dict(part.named_parameters(recurse=False))
            matrices = [p for p in own.values() if p.dim() >= 2]
            for parameter in own.values():
                embedding = isinstance(part, nn.Embedding)
                std = 1.0 if embedding else 1.0 / math.sqrt(3 * matrices[0].shape[-1])
                parameter.copy_(exact_normal(generator, *parameter.shape, std=std))
            if isinstance(part, nn.Embedding) and part.padding_idx is not None:
                part.weight[part.padding_idx] = 0.0
    return module


def shape_text(value) -> str:
    """'(2, 3, 4)' for anything with a ``shape`` ('(3,)' for one axis, '()' for none)."""
    sizes = [str(n) for n in value.shape]
    return "(" + ", ".join(sizes) + ("," if len(sizes) == 1 else "") + ")"


ROW_VALUES = 200  # values row_text shows: a student's tensor of any size costs no more


def row_text(tensor: torch.Tensor, digits: int = 3) -> str:
    """The first :data:`ROW_VALUES` values of ``tensor`` (any shape), rounded, as one row."""
    flat = tensor.detach().reshape(-1)
    values = [round(float(x), digits) for x in flat[:ROW_VALUES].tolist()]
    more = ", ..." if flat.numel() > ROW_VALUES else ""
    return (
        "["
        + ", ".join(f"{x:.{digits}f}" if math.isfinite(x) else str(x) for x in values)
        + more
        + "]"
    )


def close(
    received: object, expected: object, atol: float = 1e-4, rtol: float = 1e-4
) -> bool:
    """Same shape and the same numbers (NaN equals NaN), whatever the dtypes."""
    if not isinstance(received, torch.Tensor) or not isinstance(expected, torch.Tensor):
        return False
    if tuple(received.shape) != tuple(expected.shape):
        return False
    if received.dtype == torch.bool or expected.dtype == torch.bool:
        return received.dtype == expected.dtype and torch.equal(received, expected)
    a, b = received.detach().double(), expected.detach().double()
    return bool(torch.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True).all())


def worst_index(received: torch.Tensor, expected: torch.Tensor) -> tuple[int, ...]:
    """Index (all but the last axis) of the row where ``received`` differs most from ``expected``."""
    gap = (received.detach().double() - expected.detach().double()).abs()
    gap = gap.nan_to_num(nan=1e9, posinf=1e9).amax(dim=-1)
    return tuple(int(i) for i in (gap == gap.max()).nonzero()[0])


def compare_rows(
    name: str, received: torch.Tensor, expected: torch.Tensor
) -> tuple[str, str]:
    """'name[0, 1] = [...]' for the most different row, expected and received."""
    if received.dim() == 0:
        return f"{name} = {row_text(expected)}", f"{name} = {row_text(received)}"
    index = worst_index(received, expected)
    label = f"{name}[{', '.join(str(i) for i in index)}]" if index else name
    return (
        f"{label} = {row_text(expected[index])}",
        f"{label} = {row_text(received[index])}",
    )


@dataclass(frozen=True)
class Evidence:
    """What a failure shows (the expected and the received value) and a ``note`` that ends its
    message (e.g. the smallest input that fails): one check's many failures share it."""

    expected: object
    received: object
    note: str = ""

    def fail(self, code: str, message: str, advice: str) -> None:
        fail(code, message + self.note, self.expected, self.received, advice)

    def fail_with(self, mistake: Mistake) -> None:
        fail_with(mistake, self.expected, self.received, self.note)

    def diagnose(self, received, mistakes, probe, same=close) -> None:
        """Fail with the first of ``mistakes`` that gives ``received`` on ``probe``."""
        diagnose(received, mistakes, probe, same, self.expected, self.received, self.note)


def require_shape(
    tensor: torch.Tensor,
    shape: tuple,
    expected: str,
    other: Mistake,
    known: dict | None = None,
) -> None:
    """Fail unless ``tensor`` has ``shape``: with the mistake ``known`` holds for the shape it
    has, else with ``other``."""
    if tuple(tensor.shape) != tuple(shape):
        mistake = (known or {}).get(tuple(tensor.shape), other)
        fail_with(mistake, expected, f"shape {shape_text(tensor)}")


def require_tensor(
    result, what: str, expected_shape: tuple[int, ...], code_prefix: str
) -> torch.Tensor:
    """Fail unless ``result`` is a tensor; name what came back instead."""
    if isinstance(result, torch.Tensor):
        return result
    expected = f"a torch.Tensor of shape {tuple(expected_shape)}"
    none = f"{what} is None: the function has no `return` (or returns nothing)"
    fail_if_none(result, expected, "end the function with `return ...`", none)
    fail(
        f"{code_prefix}_not_a_tensor",
        f"{what} is {article(type_name(result))}, not a torch.Tensor",
        expected,
        type_name(result),
        "keep the computation in torch (torch.softmax, @, .sum) so gradients can flow",
    )


def check_unchanged(
    originals: Sequence[object], passed: Sequence[object], names: Sequence[str]
) -> None:
    """Fail if the function changed one of its input tensors in place (NaN equals NaN)."""
    for original, given, name in zip(originals, passed, names):
        if not close(given, original, atol=0, rtol=0):
            fail(
                "changed_input",
                f"the function changed its input `{name}` in place",
                f"{name} unchanged after the call",
                f"{name} modified (e.g. by masked_fill_ or {name}[...] = 0)",
                "use the out-of-place versions (masked_fill without the underscore, or multiply by a mask)",
            )


def check_gradient(
    student: StudentFunction,
    inputs: Sequence[object],
    names: Sequence[str],
    pick: str,
    reference: Callable[..., object],
) -> None:
    """The result must be differentiable with respect to the named inputs, and the gradient that
    reaches each of them must be ``reference``'s (training follows it).

    The result's entries are weighted by a cotangent drawn afresh for every check
    (``execution.cotangent``), and the expected gradients are computed here, in the checking
    process: the right numbers come back only from code that computes the right derivative."""
    seed = secrets.randbelow(2**31)
    report = student.gradient(list(inputs), list(names), pick, seed=seed)
    if not report.requires_grad:
        fail(
            "no_gradient",
            "no gradient flows back through the function (the result is detached)",
            "a result with requires_grad=True when the inputs require gradients",
            "requires_grad=False",
            "avoid .detach(), .numpy(), torch.tensor(...) re-wrapping and torch.no_grad()",
        )
    expected = execute_gradient(reference, list(inputs), list(names), pick, seed=seed)
    for name in names:
        reached = report.reached.get(name, "none")
        if reached != "finite":
            fail(
                "no_gradient",
                f"the gradient does not reach `{name}` (or is not finite)",
                f"a finite gradient for {name}",
                "None" if reached == "none" else "NaN/inf in the gradient",
                "build the result from the inputs with torch operations only",
            )
        want, got = expected.gradients[name], report.gradients.get(name)
        if not (
            isinstance(got, torch.Tensor)
            and got.shape == want.shape
            and got.dtype == torch.float64
            and torch.allclose(got, want, rtol=GRADIENT_RTOL, atol=GRADIENT_ATOL)
        ):
            fail(
                "wrong_gradient",
                f"the values are right, but the gradient that reaches `{name}` is wrong",
                f"the gradient of the book's result with respect to {name}",
                "a different gradient" if isinstance(got, torch.Tensor) else "no gradient",
                "some step was computed outside autograd and joined back (.detach(), .data, "
                ".item(), numpy or torch.no_grad() on a part that depends on the inputs): "
                "the numbers come out right, but training would follow the wrong slope",
            )


def smallest_failure(
    probes: Sequence[object],
    call: Callable[[object], object],
    expected: Callable[..., object],
    same: Callable[[object, object], bool],
) -> tuple[object, object, object] | None:
    """The first probe (list them from the smallest) on which ``call(probe)`` is not ``same`` as
    ``expected(*probe)``: ``(probe, received, expected)``, or ``None`` when every probe agrees.

    A "differs" message built from it shows the smallest input on which the answer goes wrong."""
    for probe in probes:
        arguments = probe if isinstance(probe, tuple) else (probe,)
        received = call(probe)
        wanted = expected(*arguments)
        if not same(received, wanted):
            return probe, received, wanted
    return None


def smallest_input_note(
    student: StudentFunction,
    reference: Callable[..., object],
    probes: Sequence[tuple],
    same: Callable[[object, object], bool],
    show: Callable[..., str],
    text: Callable[[object], str] = lambda value: (
        row_text(value) if isinstance(value, torch.Tensor) else bounded_repr(value, 80)
    ),
    **options,
) -> str:
    """' (smallest input where it goes wrong: ...: expected ..., received ...)' for the first of
    ``probes`` (list them from the smallest) on which the student's answer is not ``same`` as
    ``reference(*probe)``; '' when every probe agrees or fails to run. For a "differs" message
    whose mistake no table foresaw: the student can redo that small case by hand. ``options``
    go to the student's call (``quiet=True``)."""
    from transformer_lab.selfcheck.core import StudentRaised

    for probe in probes:
        arguments = [p.clone() if isinstance(p, torch.Tensor) else p for p in probe]
        try:
            received = student.call(*arguments, **options).result
        except StudentRaised:
            continue
        expected = reference(*probe)
        if not same(received, expected):
            return (
                f" (smallest input where it goes wrong: {show(*probe)}: expected "
                f"{text(expected)}, received {text(received)})"
            )
    return ""
