"""Self-checks for the homework: run a student's functions and name the likely mistake.

    python -m transformer_lab.selfcheck [PATH] [--only NAME ...]

PATH is a Python file holding the homework functions (default: exercises/homework/starter.py,
relative to the folder you run from). Each function is called on small, fixed inputs and compared
with the package's own implementation (the single source of truth). A wrong answer is compared
with the answers that typical mistakes produce, so the report can say *which* mistake it looks
like, what was expected and what came back. An unfinished function (it raises
``NotImplementedError``) is reported as "not done yet"; any other exception is summarised in one
line. Exit status: 0 when every selected check passes, 1 otherwise, 2 when PATH cannot be loaded.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import itertools
import math
import numbers
import os
import re
import sys
import time
import traceback
import types
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transformer_lab import attention as reference_attention
from transformer_lab import metrics as reference_metrics
from transformer_lab import pooling as reference_pooling
from transformer_lab.timing import format_wall_time

DEFAULT_PATH = Path("exercises") / "homework" / "starter.py"

PASSED, NOT_DONE, FAILED, RAISED, MISSING = "passed", "not done yet", "FAILED", "raised an error", "missing"


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One diagnosed mistake: a stable ``code`` (used by tests), what it is, and the evidence."""

    code: str
    mistake: str
    expected: str
    received: str
    advice: str = ""


@dataclass
class CheckResult:
    """The outcome of one check: a status, a one-line summary and (when it failed) a finding."""

    name: str
    exercise: str
    status: str
    summary: str = ""
    finding: Finding | None = None

    @property
    def code(self) -> str | None:
        return None if self.finding is None else self.finding.code


class _Failed(Exception):
    """Raised inside a check to stop at the first diagnosed mistake."""

    def __init__(self, finding: Finding):
        super().__init__(finding.mistake)
        self.finding = finding


class _StudentRaised(Exception):
    """The student's function raised something other than NotImplementedError."""

    def __init__(self, error: BaseException, line: str):
        super().__init__(line)
        self.error = error
        self.line = line


def fail(code: str, mistake: str, expected: object, received: object, advice: str = "") -> None:
    """Stop the current check with a diagnosed mistake."""
    raise _Failed(Finding(code, mistake, str(expected), str(received), advice))


# ---------------------------------------------------------------------------------------------
# Calling student code safely
# ---------------------------------------------------------------------------------------------

# (pattern in the exception text, hint) pairs: the errors students meet most, with a pointer.
COMMON_ERROR_HINTS: list[tuple[str, str]] = [
    (r"bool tensor is not supported|Subtraction, the `-` operator",
     "padding is a boolean tensor: use ~padding (not 1 - padding) to flip it"),
    (r"numpy\(\) on Tensor that requires grad",
     "stay in torch: .numpy() cuts the gradient; use torch operations throughout"),
    (r"could not infer output dtype|mean\(\): .*Bool",
     "a boolean tensor has no mean: convert with .float() first"),
    (r"mat1 and mat2 shapes cannot be multiplied|Expected size for first two dimensions of batch2",
     "check the matrix product: q @ k.transpose(-2, -1) turns (B, Lk, D) into (B, D, Lk)"),
    (r"size of tensor a .* must match the size of tensor b|The size of tensor a",
     "two tensors do not broadcast: print their shapes; add the missing axis with [:, None, :] or "
     "unsqueeze"),
    (r"masked_fill.* expected .*bool|expected BoolTensor|mask.*must be.*bool",
     "masked_fill needs a boolean mask (True = fill)"),
    (r"object is not callable|has no attribute",
     "a name is used wrongly: check the spelling and that you call functions with ()"),
]


def _student_location(error: BaseException, filename: str | None) -> str:
    """'starter.py:42 in attention' for the deepest frame of the student's file, if any."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if filename is not None and Path(f.filename).resolve() == Path(filename).resolve()]
    frame = mine[-1] if mine else (frames[-1] if frames else None)
    if frame is None:
        return ""
    return f" at {Path(frame.filename).name}:{frame.lineno} in {frame.name}"


def summarise_exception(error: BaseException, filename: str | None = None, hints=()) -> str:
    """One line: the exception type, where in the student's file it came from, its first line,
    and a hint when the message matches a common mistake."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else "(no message)"
    if len(text) > 160:
        text = text[:157] + "..."
    line = f"{type(error).__name__}{_student_location(error, filename)}: {text}"
    for pattern, hint in list(hints) + COMMON_ERROR_HINTS:
        if re.search(pattern, str(error), flags=re.IGNORECASE | re.DOTALL):
            return f"{line} (hint: {hint})"
    return line


def _uses_dot_t(function: Callable, caught: list[warnings.WarningMessage]) -> bool:
    """Did the function use ``.T`` on a batched tensor? PyTorch warns only once per process, so
    the source is read too."""
    if any("on tensors of dimension other than 2" in str(w.message) for w in caught):
        return True
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    return re.search(r"\.T\b", source) is not None


def _call(function: Callable, *args, hints=()):
    """Call a student function; turn anything but NotImplementedError into ``_StudentRaised``."""
    filename = getattr(getattr(function, "__code__", None), "co_filename", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = function(*args)
        except NotImplementedError:
            raise
        except Exception as error:  # noqa: BLE001 - any student error becomes one line
            extra = list(hints)
            if _uses_dot_t(function, caught):
                extra.insert(0, (r".", ".T on a 3-D tensor reverses all three axes; use k.transpose(-2, -1)"))
            raise _StudentRaised(error, summarise_exception(error, filename, extra)) from error
    return result


def _run(name: str, exercise: str, body: Callable[[], None]) -> CheckResult:
    """Run one check body and convert its outcome into a ``CheckResult``."""
    try:
        body()
    except NotImplementedError as error:
        message = str(error).strip() or "raises NotImplementedError"
        return CheckResult(name, exercise, NOT_DONE, f"NotImplementedError: {message}")
    except _Failed as failure:
        return CheckResult(name, exercise, FAILED, failure.finding.mistake, failure.finding)
    except _StudentRaised as raised:
        return CheckResult(name, exercise, RAISED, raised.line)
    except Exception as error:  # noqa: BLE001 - an unusable result is reported, never a traceback
        return CheckResult(name, exercise, RAISED, "the result could not be checked: " + summarise_exception(error))
    return CheckResult(name, exercise, PASSED, "all checks passed")


# ---------------------------------------------------------------------------------------------
# Small formatting and comparison helpers
# ---------------------------------------------------------------------------------------------


def _shape(value) -> str:
    return "(" + ", ".join(str(n) for n in value.shape) + ")"


def _row(tensor: torch.Tensor, digits: int = 3) -> str:
    values = [round(float(x), digits) for x in tensor.detach().reshape(-1).tolist()]
    return "[" + ", ".join(f"{x:.{digits}f}" if math.isfinite(x) else str(x) for x in values) + "]"


def _close(received: torch.Tensor, expected: torch.Tensor, atol: float = 1e-4, rtol: float = 1e-4) -> bool:
    if tuple(received.shape) != tuple(expected.shape):
        return False
    a, b = received.detach().double(), expected.detach().double()
    return bool(torch.isclose(a, b, atol=atol, rtol=rtol, equal_nan=True).all())


def _worst_index(received: torch.Tensor, expected: torch.Tensor) -> tuple[int, ...]:
    """Index (all but the last axis) of the row where ``received`` differs most from ``expected``."""
    gap = (received.detach().double() - expected.detach().double()).abs().nan_to_num(nan=1e9, posinf=1e9)
    gap = gap.reshape(-1, received.shape[-1]).amax(dim=1)
    flat = int(gap.argmax())
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), received.shape[:-1]))


def _compare_rows(name: str, received: torch.Tensor, expected: torch.Tensor) -> tuple[str, str]:
    """'name[0, 1] = [...]' for the most different row, expected and received."""
    index = _worst_index(received, expected)
    label = f"{name}[{', '.join(str(i) for i in index)}]"
    return f"{label} = {_row(expected[index])}", f"{label} = {_row(received[index])}"


def _require_tensor(result, what: str, expected_shape: tuple[int, ...], code_prefix: str) -> torch.Tensor:
    """Fail unless ``result`` is a tensor; name what came back instead."""
    if result is None:
        fail("returned_none", f"{what} is None: the function has no `return` (or returns nothing)",
             f"a torch.Tensor of shape {tuple(expected_shape)}", "None", "end the function with `return ...`")
    if not isinstance(result, torch.Tensor):
        kind = f"{type(result).__module__}.{type(result).__name__}"
        fail(f"{code_prefix}_not_a_tensor", f"{what} is a {kind}, not a torch.Tensor",
             f"a torch.Tensor of shape {tuple(expected_shape)}", type(result).__name__,
             "keep the computation in torch (torch.softmax, @, .sum) so gradients can flow")
    return result


def _check_unchanged(originals: Sequence[torch.Tensor], passed: Sequence[torch.Tensor], names: Sequence[str]) -> None:
    for original, given, name in zip(originals, passed, names):
        if not torch.equal(original, given):
            fail("changed_input", f"the function changed its input `{name}` in place",
                 f"{name} unchanged after the call", f"{name} modified (e.g. by masked_fill_ or {name}[...] = 0)",
                 "use the out-of-place versions (masked_fill without the underscore, or multiply by a mask)")


# ---------------------------------------------------------------------------------------------
# Exercise 1: attention
# ---------------------------------------------------------------------------------------------

# Sizes are all different, so a wrong axis or a wrong width shows up as a different number.
ATT_B, ATT_LQ, ATT_LK, ATT_D, ATT_DV = 2, 3, 4, 5, 7


def attention_probe(seed: int = 20, scale: float = 1.0):
    """q (2, 3, 5), k (2, 4, 5), v (2, 4, 7) and a padding mask with at least one real and one
    padded key per example (so even an inverted mask gives finite numbers to compare)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(ATT_B, ATT_LQ, ATT_D, generator=g) * scale
    k = torch.randn(ATT_B, ATT_LK, ATT_D, generator=g) * scale
    v = torch.randn(ATT_B, ATT_LK, ATT_DV, generator=g)
    padding = torch.tensor([[False, False, False, True], [False, True, True, True]])
    return q, k, v, padding


# Each ingredient of the weights, with the mistake that replaces it. The first entry is correct.
_SCALES = {
    "sqrt_d": None,
    "no_scaling": "the scores were not divided by √d",
    "divided_by_d": "the scores were divided by d instead of √d",
    "multiplied_by_sqrt_d": "the scores were multiplied by √d instead of divided",
    "wrong_width": "the scores were divided by the square root of the wrong size (d is q.shape[-1])",
}
_AXES = {
    "keys": None,
    "softmax_over_queries": "the softmax ran over the queries (dim=1 or -2) instead of the keys (dim=-1)",
    "softmax_over_batch": "the softmax ran over the batch axis (dim=0) instead of the keys (dim=-1)",
}
_MASKS = {
    "before_inf": None,
    "mask_after_softmax": "padded keys were zeroed after the softmax instead of set to −∞ before it",
    "mask_with_zero": "padded scores were set to 0 instead of −∞ before the softmax",
    "inverted_mask": "the mask was inverted: the real keys were hidden and the padded ones kept",
    "mask_ignored": "the padding mask had no effect",
    "inf_after_softmax": "−∞ was written into the weights after the softmax",
}

_ADVICE = {
    "no_scaling": "divide the scores by math.sqrt(q.shape[-1]) before the softmax",
    "divided_by_d": "the scale is the square root of the key width: / math.sqrt(d), not / d",
    "multiplied_by_sqrt_d": "divide by √d: large scores saturate the softmax",
    "wrong_width": "on batched tensors q.shape[1] is Lq, not d; use d = q.shape[-1]",
    "softmax_over_queries": "torch.softmax(scores, dim=-1): each query row spreads its weight over the keys",
    "softmax_over_batch": "torch.softmax(scores, dim=-1): the batch axis holds separate examples "
                          "(F.softmax without dim picks dim=0 on a 3-D tensor)",
    "mask_after_softmax": "masked_fill(padding[:, None, :], float('-inf')) on the scores, then softmax",
    "mask_with_zero": "exp(0) = 1, so a 0 score still takes weight; fill with float('-inf')",
    "inverted_mask": "True means ignore: fill where padding is True, not where it is False",
    "mask_ignored": "masked_fill returns a new tensor: scores = scores.masked_fill(...); and pass padding[:, None, :]",
    "inf_after_softmax": "fill the scores with −∞ before the softmax; weights must be between 0 and 1",
}


def _attention_weight_variants(q, k, padding) -> dict[tuple[str, str, str], torch.Tensor]:
    """Weights for every combination of (scale, softmax axis, masking), correct one included."""
    d = q.shape[-1]
    raw = q.double() @ k.double().transpose(-2, -1)
    other_sizes = sorted({n for n in (q.shape[0], q.shape[1], k.shape[1]) if n != d})
    scales = {"sqrt_d": [math.sqrt(d)], "no_scaling": [1.0], "divided_by_d": [d],
              "multiplied_by_sqrt_d": [1 / math.sqrt(d)], "wrong_width": [math.sqrt(n) for n in other_sizes]}
    ignore = padding[:, None, :].expand_as(raw)
    axes = {"keys": -1, "softmax_over_queries": -2, "softmax_over_batch": 0}
    variants = {}
    for (scale_name, divisors), (axis_name, dim), mask_name in itertools.product(scales.items(), axes.items(), _MASKS):
        for divisor in divisors:
            scores = raw / divisor
            if mask_name == "before_inf":
                scores = scores.masked_fill(ignore, float("-inf"))
            elif mask_name == "mask_with_zero":
                scores = scores.masked_fill(ignore, 0.0)
            elif mask_name == "inverted_mask":
                scores = scores.masked_fill(~ignore, float("-inf"))
            weights = torch.softmax(scores, dim=dim)
            if mask_name == "mask_after_softmax":
                weights = weights.masked_fill(ignore, 0.0)
            elif mask_name == "inf_after_softmax":
                weights = weights.masked_fill(ignore, float("-inf"))
            variants[(scale_name, axis_name, mask_name, divisor)] = weights
    return variants


def _describe_variant(key: tuple) -> tuple[str, str, str]:
    """(code, mistake sentence, advice) for a wrong weights variant."""
    mistakes = [name for name in key[:3] if name not in ("sqrt_d", "keys", "before_inf")]
    text = {**_SCALES, **_AXES, **_MASKS}
    code = "+".join(mistakes)
    sentence = "; and ".join(text[m] for m in mistakes)
    advice = "; ".join(_ADVICE[m] for m in mistakes)
    return code, sentence[0].upper() + sentence[1:], advice


def _match_weights(weights, q, k, padding):
    """The variant key the student's weights match, preferring the fewest mistakes (None if none)."""
    variants = _attention_weight_variants(q, k, padding)
    matches = [key for key, w in variants.items() if _close(weights, w)]
    if not matches:
        return None, variants
    matches.sort(key=lambda key: sum(name not in ("sqrt_d", "keys", "before_inf") for name in key[:3]))
    return matches[0], variants


def _unpack_attention(result, out_shape, w_shape):
    """Check the return value is (output, weights) and return the two tensors."""
    if result is None:
        fail("returned_none", "the function returned None: it has no `return`",
             f"(output {out_shape}, weights {w_shape})", "None", "end with `return output, weights`")
    if isinstance(result, torch.Tensor):
        if tuple(result.shape) == out_shape:
            fail("returned_only_output", "only the output was returned, not (output, weights)",
                 f"a pair: output {out_shape} and weights {w_shape}", f"one tensor of shape {_shape(result)}",
                 "return output, weights")
        if tuple(result.shape) == w_shape:
            fail("returned_only_weights", "only the weights were returned, not (output, weights)",
                 f"a pair: output {out_shape} and weights {w_shape}", f"one tensor of shape {_shape(result)}",
                 "return output, weights")
        fail("returned_one_tensor", "a single tensor was returned instead of the pair (output, weights)",
             f"a pair: output {out_shape} and weights {w_shape}", f"one tensor of shape {_shape(result)}",
             "return output, weights")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = type(result).__name__
        if isinstance(result, (tuple, list)):
            got += f" of length {len(result)}"
        fail("wrong_return_count", "the function should return exactly two things: (output, weights)",
             f"a pair: output {out_shape} and weights {w_shape}", got, "return output, weights")
    output, weights = result
    if isinstance(output, torch.Tensor) and isinstance(weights, torch.Tensor):
        if tuple(output.shape) == w_shape and tuple(weights.shape) == out_shape:
            fail("swapped_outputs", "the pair came back in the wrong order: (weights, output)",
                 f"(output {out_shape}, weights {w_shape})", f"({_shape(output)}, {_shape(weights)})",
                 "return output, weights — output first")
    output = _require_tensor(output, "the returned output", out_shape, "output")
    weights = _require_tensor(weights, "the returned weights", w_shape, "weights")
    return output, weights


def _check_attention_shapes(output, weights, out_shape, w_shape, d):
    b, lq, lk = w_shape
    if tuple(weights.shape) != w_shape:
        if tuple(weights.shape) == (b, lk, lq):
            fail("weights_transposed", "the weights have keys and queries swapped (did you compute k @ qᵀ?)",
                 f"weights of shape {w_shape} = (B, Lq, Lk)", f"shape {_shape(weights)}",
                 "scores = q @ k.transpose(-2, -1): one row per query, one column per key")
        fail("weights_shape", "the weights have the wrong shape",
             f"weights of shape {w_shape} = (B, Lq, Lk)", f"shape {_shape(weights)}",
             "one row per query and one column per key, for every example")
    if tuple(output.shape) != out_shape:
        if tuple(output.shape) == (b, lq, d):
            fail("mixed_keys", "the output has the width of the keys: the weights mixed k instead of v",
                 f"output of shape {out_shape} = (B, Lq, Dv)", f"shape {_shape(output)}", "output = weights @ v")
        fail("output_shape", "the output has the wrong shape",
             f"output of shape {out_shape} = (B, Lq, Dv)", f"shape {_shape(output)}",
             "output = weights @ v: (B, Lq, Lk) @ (B, Lk, Dv) -> (B, Lq, Dv)")


def _check_attention_values(function, q, k, v, padding):
    """One probe: structure, shapes, weights (against every typical mistake), then output."""
    out_shape, w_shape = (q.shape[0], q.shape[1], v.shape[2]), (q.shape[0], q.shape[1], k.shape[1])
    inputs = [q.clone(), k.clone(), v.clone(), padding.clone()]
    result = _call(function, *inputs, hints=ATTENTION_HINTS)
    _check_unchanged([q, k, v, padding], inputs, ["q", "k", "v", "padding"])
    output, weights = _unpack_attention(result, out_shape, w_shape)
    _check_attention_shapes(output, weights, out_shape, w_shape, q.shape[-1])
    expected_output, expected_weights = reference_attention.attention(q.double(), k.double(), v.double(), padding)
    if not _close(weights, expected_weights):
        key, variants = _match_weights(weights, q, k, padding)
        expected, received = _compare_rows("weights", weights, expected_weights)
        if key is not None:
            code, mistake, advice = _describe_variant(key)
            fail(code, mistake, expected, received, advice)
        if not torch.isfinite(weights).all():
            fail("weights_not_finite", "the weights contain NaN or ±inf", expected, received,
                 "every row needs at least one finite score; fill padded scores with −∞ before softmax only")
        sums = weights.detach().double().sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            fail("rows_do_not_sum_to_one", "the rows of the weights do not sum to 1",
                 "every row sums to 1.000", f"row sums {_row(sums.reshape(-1))}",
                 "apply torch.softmax over the keys (dim=-1) as the last step of the weights")
        fail("weights_differ", "the weights differ from softmax(q kᵀ / √d) with padded keys masked",
             expected, received, "compare your scores with q @ k.transpose(-2, -1) / math.sqrt(d) step by step")
    if not _close(output, expected_output):
        expected, received = _compare_rows("output", output, expected_output)
        for key, w in _attention_weight_variants(q, k, padding).items():
            if key[:3] != ("sqrt_d", "keys", "before_inf") and _close(output, w @ v.double()):
                code, mistake, advice = _describe_variant(key)
                fail("output_from_other_weights",
                     f"the weights are right but the output was mixed with other weights: {mistake[0].lower() + mistake[1:]}",
                     expected, received, "compute output = weights @ v with the weights you return")
        fail("output_differs", "the weights are right but the output is not weights @ v",
             expected, received, "output = weights @ v")


ATTENTION_HINTS = [
    (r"size of tensor a .* must match the size of tensor b",
     "the scores are (B, Lq, Lk): padding (B, Lk) needs a query axis to line up, padding[:, None, :]"),
]


def check_attention(function: Callable) -> CheckResult:
    """Check ``attention(q, k, v, padding) -> (output, weights)`` against the package's version."""

    def body():
        q, k, v, padding = attention_probe()
        _check_attention_values(function, q, k, v, padding)
        # no padding at all, and a self-attention shape with Lq == Lk
        g = torch.Generator().manual_seed(21)
        x = torch.randn(3, 4, ATT_D, generator=g)
        _check_attention_values(function, x, x, torch.randn(3, 4, ATT_DV, generator=g), torch.zeros(3, 4, dtype=torch.bool))
        _check_overflow(function)
        _check_gradient(function, [*attention_probe(seed=22)], ["q", "k", "v"],
                        lambda result: result[0] if isinstance(result, (tuple, list)) else result)

    return _run("attention", "Exercise 1", body)


def overflow_probe():
    """Scores in the hundreds: every query lines up with the first key (score about 400), the
    other real keys are random and the padded keys are zero vectors (score 0). exp(400) overflows
    float32, so a softmax written as exp(s) / sum(exp(s)) returns inf / inf = NaN, while
    torch.softmax (which subtracts the row maximum) returns almost all weight on the first key."""
    q, k, v, padding = attention_probe(seed=23)
    direction = torch.nn.functional.normalize(torch.ones(ATT_D), dim=0) * 30
    q = direction + 0.1 * q
    k = (3 * k).masked_fill(padding[:, :, None], 0.0)
    k[:, 0] = direction
    return q, k, v, padding


def _check_overflow(function):
    """Large scores: a hand-written exp(s) / sum(exp(s)) overflows to inf / inf = NaN."""
    q, k, v, padding = overflow_probe()
    output, weights = _call(function, q, k, v, padding)
    if not (torch.isfinite(weights[~padding[:, None, :].expand_as(weights)]).all() and torch.isfinite(output).all()):
        fail("softmax_overflow", "with large scores the weights become NaN: a hand-written softmax overflowed",
             "finite weights for scores in the hundreds", f"{int((~torch.isfinite(weights)).sum())} non-finite weights",
             "use torch.softmax, or subtract each row's maximum before exp")
    expected_output, _ = reference_attention.attention(q.double(), k.double(), v.double(), padding)
    if not _close(output, expected_output, atol=1e-3, rtol=1e-3):
        expected, received = _compare_rows("output", output, expected_output)
        fail("large_scores_differ", "with large scores (in the hundreds) the output goes wrong",
             expected, received, "use torch.softmax and fill padded scores with float('-inf') or a value below -1e4")


def _check_gradient(function, inputs, names, pick):
    """The result must be differentiable with respect to the float inputs (training needs it)."""
    leaves = [t.clone().requires_grad_(True) for t in inputs[: len(names)]]
    result = _call(function, *leaves, *inputs[len(names):])
    out = pick(result)
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        fail("no_gradient", "no gradient flows back through the function (the result is detached)",
             "a result with requires_grad=True when the inputs require gradients",
             "requires_grad=False", "avoid .detach(), .numpy(), torch.tensor(...) re-wrapping and torch.no_grad()")
    out.double().sum().backward()
    for leaf, name in zip(leaves, names):
        if leaf.grad is None or not torch.isfinite(leaf.grad).all():
            fail("no_gradient", f"the gradient does not reach `{name}` (or is not finite)",
                 f"a finite gradient for {name}", "None" if leaf.grad is None else "NaN/inf in the gradient",
                 "build the result from the inputs with torch operations only")


# ---------------------------------------------------------------------------------------------
# Exercise 3: masked mean
# ---------------------------------------------------------------------------------------------


def masked_mean_probe(batch: int = 3, length: int = 5, width: int = 3, seed: int = 30):
    """x (B, L, D) whose padded rows hold large values, and a mask with real and padded tokens in
    every example. With B == D, dividing by counts of shape (B,) broadcasts silently, so the
    default probe uses B == D to catch that too."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, width, generator=g)
    lengths = torch.tensor([2, 4, 3, 1, 3][:batch])
    padding = torch.arange(length)[None, :] >= lengths[:, None]
    x = torch.where(padding[:, :, None], 50.0 + 10 * torch.rand(batch, length, width, generator=g), x)
    return x, padding


def _masked_mean_variants(x, padding) -> dict[str, torch.Tensor]:
    keep = (~padding)[:, :, None].double()
    x = x.double()
    total, count, length = (x * keep).sum(1), keep.sum(1), x.shape[1]
    pad = 1 - keep
    variants = {
        "mean_over_padding": x.mean(1),
        "divided_by_full_length": total / length,
        "inverted_mask": (x * pad).sum(1) / pad.sum(1),
        "sum_not_mean": total,
        "divided_by_padding_count": total / pad.sum(1),
        "max_not_mean": x.masked_fill(padding[:, :, None], float("-inf")).amax(1),
    }
    if x.shape[0] == x.shape[2]:
        variants["counts_broadcast_wrong"] = total / count[:, 0]
    return variants


MASKED_MEAN_MISTAKES = {
    "mean_over_padding": ("the mean included the padded tokens",
                          "zero the padded tokens and divide by the number of real tokens"),
    "divided_by_full_length": ("the padded tokens were zeroed, but the sum was divided by the full length L",
                               "divide by the number of real tokens per example: (~padding).sum(1, keepdim=True)"),
    "inverted_mask": ("the mask was inverted: the padded tokens were averaged and the real ones dropped",
                      "True in padding means 'ignore': keep = ~padding"),
    "sum_not_mean": ("the real tokens were summed but not divided by their count",
                     "divide the masked sum by the number of real tokens"),
    "divided_by_padding_count": ("the sum was divided by the number of padded tokens",
                                 "count the real tokens: (~padding).sum(1)"),
    "max_not_mean": ("a masked maximum was returned instead of the mean", "sum and divide, do not take amax"),
    "counts_broadcast_wrong": ("the counts had shape (B,), so example b's sum was divided by the counts "
                               "of other examples (broadcast along the feature axis)",
                               "keep the counts as (B, 1): .sum(1, keepdim=True) or counts[:, None]"),
}

MASKED_MEAN_HINTS = [
    (r"size of tensor a .* must match the size of tensor b",
     "shapes do not line up: the mask needs a feature axis, padding[:, :, None] (B, L, 1), and the counts "
     "need shape (B, 1)"),
]


def _check_masked_mean_once(function, x, padding):
    expected = reference_pooling.masked_mean(x.double(), padding)
    b, length, d = x.shape
    inputs = [x.clone(), padding.clone()]
    result = _call(function, *inputs, hints=MASKED_MEAN_HINTS)
    _check_unchanged([x, padding], inputs, ["x", "padding"])
    result = _require_tensor(result, "the result", (b, d), "result")
    shape = tuple(result.shape)
    wrong_shapes = {
        (b, 1, d): ("kept_dimension", "the result kept the token axis: (B, 1, D) instead of (B, D)",
                    "use keepdim only for the counts, or squeeze the token axis"),
        (b, length): ("averaged_over_features", "the average ran over the feature axis instead of the tokens",
                      "average over dim=1 (tokens), keep dim=2 (features)"),
        (length, d): ("averaged_over_batch", "the average ran over the batch axis instead of the tokens",
                      "average over dim=1 (tokens), one vector per example"),
        (d,): ("pooled_whole_batch", "all examples were pooled into one vector (x[~padding] flattens the batch)",
               "one mean per example: sum over dim=1, divide by each example's own count"),
        (): ("pooled_whole_batch", "all examples were pooled into one number",
             "one mean per example: sum over dim=1, divide by each example's own count"),
    }
    if shape != (b, d):
        other = ("result_shape", "the result has the wrong shape", "x (B, L, D) -> (B, D)")
        code, mistake, advice = wrong_shapes.get(shape, other)
        fail(code, mistake, f"shape ({b}, {d}) = (B, D)", f"shape {_shape(result)}", advice)
    if _close(result, expected):
        return
    expected_text, received_text = _compare_rows("result", result, expected)
    for code, variant in _masked_mean_variants(x, padding).items():
        if _close(result, variant):
            mistake, advice = MASKED_MEAN_MISTAKES[code]
            fail(code, mistake[0].upper() + mistake[1:], expected_text, received_text, advice)
    if not torch.isfinite(result).all():
        fail("result_not_finite", "the result contains NaN or inf (0/0 somewhere?)", expected_text, received_text,
             "divide by the number of real tokens, which is at least 1 in every example")
    fail("result_differs", "the result is not the mean of the real (unpadded) tokens", expected_text, received_text,
         "sum x * keep over dim=1 and divide by keep.sum(1), with keep = (~padding)[:, :, None]")


def check_masked_mean(function: Callable) -> CheckResult:
    """Check ``masked_mean(x, padding) -> (B, D)`` against the package's version."""

    def body():
        _check_masked_mean_once(function, *masked_mean_probe())
        _check_masked_mean_once(function, *masked_mean_probe(batch=4, length=6, width=2, seed=31))
        x = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(32))
        _check_masked_mean_once(function, x, torch.zeros(2, 3, dtype=torch.bool))  # no padding at all
        _check_gradient(function, [*masked_mean_probe(seed=33)], ["x"], lambda result: result)

    return _run("masked_mean", "Exercise 3", body)


# ---------------------------------------------------------------------------------------------
# Exercise 4: accuracy
# ---------------------------------------------------------------------------------------------

# Chosen so that every typical mistake gives a different number (the tests assert this).
ACCURACY_LOGITS = torch.tensor([2.0, 0.3, -0.2, -1.5, 0.7, 0.1, -0.4, 1.2, -3.0, 0.4, 0.2, -0.7])
ACCURACY_LABELS = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0])


def accuracy_variants(logits: torch.Tensor, labels: torch.Tensor) -> dict[str, float]:
    """What typical mistakes return on ``logits``/``labels`` (the correct value is 'correct')."""
    labels = labels.double()
    correct = ((logits > 0).double() == labels).double()
    return {
        "correct": correct.mean().item(),
        "threshold_logits_at_half": ((logits > 0.5).double() == labels).double().mean().item(),
        "all_positive": labels.mean().item(),
        "all_negative": 1 - labels.mean().item(),
        "error_rate": 1 - correct.mean().item(),
        "percentage": 100 * correct.mean().item(),
        "count_correct": correct.sum().item(),
    }


ACCURACY_MISTAKES = {
    "threshold_logits_at_half": ("the logits were thresholded at 0.5; a logit of 0 is probability 0.5",
                                 "predict positive when logit > 0 (or sigmoid(logit) > 0.5)"),
    "all_positive": ("every example was predicted positive: the sigmoid was compared with 0, or applied twice "
                     "(sigmoid(sigmoid(x)) > 0.5 always holds)",
                     "threshold the logits at 0, or the probabilities (one sigmoid) at 0.5"),
    "all_negative": ("every example was predicted negative", "predict positive when logit > 0"),
    "error_rate": ("the error rate (1 − accuracy) came back: the comparison or the predictions are inverted",
                   "count predictions that equal the labels"),
    "percentage": ("a percentage came back instead of a fraction between 0 and 1", "drop the * 100"),
    "count_correct": ("the number of correct predictions came back, not the fraction", "divide by len(labels), or use .mean()"),
}


def _check_accuracy_once(function, logits, labels):
    expected = reference_metrics.accuracy(logits, labels)
    inputs = [logits.clone(), labels.clone()]
    result = _call(function, *inputs)
    _check_unchanged([logits, labels], inputs, ["logits", "labels"])
    if result is None:
        fail("returned_none", "the function returned None: it has no `return`", f"{expected:.4f} (a Python float)",
             "None", "end with `return ...`")
    if isinstance(result, torch.Tensor):
        value = f"{result.item():.4f}" if result.numel() == 1 else f"a tensor of shape {_shape(result)}"
        fail("returned_tensor", "a tensor came back instead of a Python float",
             f"{expected:.4f} (type float)", f"{value} (type torch.Tensor)", "end with .item() or float(...)")
    if type(result).__module__ == "numpy" and not isinstance(result, float):  # numpy.float64 is a float
        fail("returned_numpy", f"a numpy {type(result).__name__} came back instead of a Python float",
             f"{expected:.4f} (type float)", f"{float(result):.4f} (type numpy.{type(result).__name__})",
             "wrap it in float(...)")
    if not isinstance(result, float):
        if isinstance(result, numbers.Real):
            match = [c for c, v in accuracy_variants(logits, labels).items() if abs(float(result) - v) < 1e-6]
            if match == ["count_correct"]:
                mistake, advice = ACCURACY_MISTAKES["count_correct"]
                fail("count_correct", mistake[0].upper() + mistake[1:], f"{expected:.4f}",
                     f"{result} (type {type(result).__name__})", advice)
        fail("not_a_float", f"a {type(result).__name__} came back instead of a Python float",
             f"{expected:.4f} (type float)", f"{result!r}", "return a float between 0 and 1, e.g. with .item()")
    if abs(result - expected) < 1e-6:
        return
    for code, value in accuracy_variants(logits, labels).items():
        if code != "correct" and abs(result - value) < 1e-6:
            mistake, advice = ACCURACY_MISTAKES[code]
            fail(code, mistake[0].upper() + mistake[1:], f"{expected:.4f}", f"{result:.4f}", advice)
    fail("accuracy_differs", "the accuracy differs from the share of (logit > 0) == label",
         f"{expected:.4f}", f"{result:.4f}", "predictions = logits > 0; compare with labels; take the mean")


def check_accuracy(function: Callable) -> CheckResult:
    """Check ``accuracy(logits, labels) -> float`` against the package's version."""

    def body():
        _check_accuracy_once(function, ACCURACY_LOGITS, ACCURACY_LABELS)
        g = torch.Generator().manual_seed(40)
        logits = torch.randn(64, generator=g) * 2
        logits = logits[logits.abs() > 1e-3]  # never exactly on the threshold
        labels = (torch.rand(len(logits), generator=g) < 0.6).float()
        _check_accuracy_once(function, logits, labels)
        _check_accuracy_once(function, logits, labels.long())  # integer labels work too

    return _run("accuracy", "Exercise 4", body)


# ---------------------------------------------------------------------------------------------
# Exercise 6: training a BPE tokenizer
# ---------------------------------------------------------------------------------------------

TOKENIZER_SIZES = (80, 40)  # both reachable on the tiny corpus, so the size must follow the argument
OTHER_CORPUS = ("zebras quietly jump over lazy foxes", "quiet zebras jump", "lazy foxes never jump")
UNSEEN_SENTENCE = "the transformer decoder generates text"
# 'é' and the emoji never occur in TINY_CORPUS: the reference encodes each of them as [UNK].
UNSEEN_CHARACTERS = "the cat café serves tea 🙂"


@contextlib.contextmanager
def _silenced_progress_bars():
    """Hide what the Rust trainer writes straight to the terminal (its progress bars, which the
    exercise's BpeTrainer shows by default), so that the report stays readable."""
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


def _train_student_tokenizer(function: Callable, corpus, vocab_size: int):
    with _silenced_progress_bars():
        return _call(function, corpus, vocab_size)


def _tokenizer_module():
    from transformer_lab import tokenizer  # imported here: it loads the Rust library

    return tokenizer


def _require_tokenizer(result, what: str) -> None:
    from tokenizers import Tokenizer, models, trainers

    if isinstance(result, Tokenizer):
        return
    advice = "build tokenizer = Tokenizer(models.BPE(unk_token=\"[UNK]\")), train it, and `return tokenizer`"
    if result is None:
        fail("returned_none", f"{what} is None: the function has no `return`", "a trained tokenizers.Tokenizer", "None", advice)
    if isinstance(result, trainers.Trainer):
        fail("returned_trainer", f"{what} is the trainer, not the tokenizer", "a trained tokenizers.Tokenizer",
             type(result).__name__, advice)
    if isinstance(result, models.Model):
        fail("returned_model", f"{what} is the bare BPE model, not a Tokenizer wrapping it", "a trained tokenizers.Tokenizer",
             type(result).__name__, advice)
    fail("not_a_tokenizer", f"{what} is not a tokenizers.Tokenizer", "a trained tokenizers.Tokenizer",
         type(result).__name__, advice)


def _pieces(pre_tokenizer, text: str) -> list[str]:
    return [piece for piece, _ in pre_tokenizer.pre_tokenize_str(text)] if pre_tokenizer is not None else [text]


def _check_bpe_structure(student, reference) -> None:
    """Special tokens and pre-tokenizer, compared with the reference tokenizer."""
    ref = _tokenizer_module()
    missing = [token for token in ref.SPECIAL_TOKENS if student.token_to_id(token) is None]
    if missing:
        fail("missing_special_tokens", f"the special token(s) {', '.join(missing)} are not in the vocabulary",
             ", ".join(f"{t} (id {reference.token_to_id(t)})" for t in ref.SPECIAL_TOKENS), f"{', '.join(missing)} missing",
             f"BpeTrainer(vocab_size=vocab_size, special_tokens={list(ref.SPECIAL_TOKENS)})")
    ids = {token: student.token_to_id(token) for token in ref.SPECIAL_TOKENS}
    expected_ids = {token: reference.token_to_id(token) for token in ref.SPECIAL_TOKENS}
    if ids != expected_ids:
        fail("special_token_ids", "the special tokens have other ids (list them in this order so they come first)",
             ", ".join(f"{t}={i}" for t, i in expected_ids.items()), ", ".join(f"{t}={i}" for t, i in ids.items()),
             f"special_tokens={list(ref.SPECIAL_TOKENS)}")
    example = "self-attention, again"
    expected_pieces = _pieces(reference.pre_tokenizer, example)
    if student.pre_tokenizer is None:
        spanning = sorted(token for token in student.get_vocab() if " " in token)[:4]
        fail("missing_pre_tokenizer", "there is no pre-tokenizer, so BPE merges across spaces",
             f"Whitespace pre-tokenizer: {example!r} -> {expected_pieces}",
             f"no pre-tokenizer: tokens with spaces in them, such as {spanning}",
             "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace() before training")
    received_pieces = _pieces(student.pre_tokenizer, example)
    if received_pieces != expected_pieces:
        fail("wrong_pre_tokenizer", f"the pre-tokenizer is {type(student.pre_tokenizer).__name__}, not Whitespace",
             f"Whitespace: {example!r} -> {expected_pieces}",
             f"{type(student.pre_tokenizer).__name__}: {example!r} -> {received_pieces}",
             "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()")


def _vocab_difference(student, reference) -> tuple[str, str]:
    expected, received = set(reference.get_vocab()), set(student.get_vocab())
    missing, extra = sorted(expected - received)[:6], sorted(received - expected)[:6]
    return (f"{len(expected)} tokens, including {missing}" if missing else f"{len(expected)} tokens",
            f"{len(received)} tokens" + (f", including {extra}" if extra else "") + (f", without {missing}" if missing else ""))


def _check_unknown_characters(student, reference) -> None:
    """Characters the corpus never contained must become [UNK], not vanish from the encoding."""
    ref = _tokenizer_module()
    expected = reference.encode(UNSEEN_CHARACTERS).tokens
    received = student.encode(UNSEEN_CHARACTERS).tokens
    if received == expected:
        return
    advice = f'Tokenizer(models.BPE(unk_token="{ref.UNKNOWN_TOKEN}")): the model needs to know its unknown token'
    unk_token = getattr(student.model, "unk_token", None)
    if received == [token for token in expected if token != ref.UNKNOWN_TOKEN]:
        fail("missing_unk_token", f"the BPE model has no unk_token: characters the corpus never contained "
             f"(é, 🙂) vanish from the encoding instead of becoming {ref.UNKNOWN_TOKEN}",
             f"{UNSEEN_CHARACTERS!r} -> {expected}", f"-> {received}", advice)
    if unk_token is not None and unk_token != ref.UNKNOWN_TOKEN:
        fail("wrong_unk_token", f"the BPE model's unk_token is {unk_token!r}, not {ref.UNKNOWN_TOKEN!r}",
             f"{UNSEEN_CHARACTERS!r} -> {expected}", f"-> {received}", advice)


def check_train_bpe_tokenizer(function: Callable) -> CheckResult:
    """Check ``train_bpe_tokenizer(corpus, vocab_size)`` against the package's version."""

    def body():
        ref = _tokenizer_module()
        corpus = list(ref.TINY_CORPUS)
        sizes = {}
        for size in TOKENIZER_SIZES:
            student = _train_student_tokenizer(function, list(corpus), size)
            _require_tokenizer(student, "the returned value")
            sizes[size] = (student, ref.train_bpe_tokenizer(corpus, size))
        student, reference = sizes[TOKENIZER_SIZES[0]]
        if student.get_vocab_size() <= len(ref.SPECIAL_TOKENS):
            fail("untrained", "the tokenizer was never trained (its vocabulary is empty)",
                 f"{reference.get_vocab_size()} tokens after training", f"{student.get_vocab_size()} tokens",
                 "tokenizer.train_from_iterator(corpus, trainer)")
        got = {size: pair[0].get_vocab_size() for size, pair in sizes.items()}
        want = {size: pair[1].get_vocab_size() for size, pair in sizes.items()}
        if got != want:
            same = len(set(got.values())) == 1
            fail("ignores_vocab_size" if same else "vocab_size_differs",
                 "the vocabulary size does not follow the vocab_size argument" if same
                 else "the vocabulary size differs from what vocab_size asks for",
                 ", ".join(f"vocab_size={s} -> {n} tokens" for s, n in want.items()),
                 ", ".join(f"vocab_size={s} -> {n} tokens" for s, n in got.items()),
                 "pass the argument on: BpeTrainer(vocab_size=vocab_size, ...)")
        _check_bpe_structure(student, reference)
        other = _train_student_tokenizer(function, list(OTHER_CORPUS), TOKENIZER_SIZES[1])
        _require_tokenizer(other, "the returned value")
        other_reference = ref.train_bpe_tokenizer(list(OTHER_CORPUS), TOKENIZER_SIZES[1])
        same_as_before = other.get_vocab() == sizes[TOKENIZER_SIZES[1]][0].get_vocab()
        if other.get_vocab() != other_reference.get_vocab() and same_as_before:
            expected, received = _vocab_difference(other, other_reference)
            fail("ignores_corpus", "the tokenizer learned the same vocabulary from a different corpus: it does not "
                 "train on the corpus argument (a global corpus?)", expected, received,
                 "tokenizer.train_from_iterator(corpus, trainer) with the function's own corpus argument")
        for size, (student, reference) in sizes.items():
            if student.get_vocab() != reference.get_vocab():
                expected, received = _vocab_difference(student, reference)
                fail("vocabulary_differs", f"with vocab_size={size} the learned vocabulary differs from the reference",
                     expected, received,
                     "BPE(unk_token=\"[UNK]\") model, Whitespace pre-tokenizer, BpeTrainer with vocab_size and "
                     "the two special tokens; no other options")
        _check_unknown_characters(student, reference)
        tokens = student.encode(UNSEEN_SENTENCE).tokens
        expected_tokens = reference.encode(UNSEEN_SENTENCE).tokens
        if tokens != expected_tokens:
            fail("encoding_differs", "the vocabulary matches but encoding gives other tokens",
                 f"{UNSEEN_SENTENCE!r} -> {expected_tokens}", f"-> {tokens}",
                 "do not add a normalizer, post-processor or dropout")

    return _run("train_bpe_tokenizer", "Exercise 6", body)


# ---------------------------------------------------------------------------------------------
# Exercise 8: tokens per word
# ---------------------------------------------------------------------------------------------

WORDS = ("cat", "dog", "attention", "tokenizer", "self-attention", "encodings")


def tokens_per_word_variants(tokenizer, words) -> dict[str, object]:
    """What typical mistakes return for ``words`` (the correct answer is not included)."""
    ref = _tokenizer_module()
    everything = len(tokenizer.encode(" ".join(words)).ids)
    return {
        "counted_characters": {w: len(w) for w in words},
        "counted_words": {w: 1 for w in words},
        "counted_pieces": {w: len(ref.pre_tokenize(w)) for w in words},
        "counted_whole_list": {w: everything for w in words},
    }


TOKENS_PER_WORD_MISTAKES = {
    "counted_characters": ("characters were counted instead of tokens (len(word))",
                           "encode the word and count its tokens: len(tokenizer.encode(word).tokens)"),
    "counted_words": ("every word got 1: words were counted, not the tokens BPE splits them into",
                      "len(tokenizer.encode(word).tokens) for each word on its own"),
    "counted_pieces": ("the pre-tokenizer's pieces were counted, not the BPE tokens",
                       "len(tokenizer.encode(word).tokens)"),
    "counted_whole_list": ("every word got the token count of the whole list encoded at once",
                           "encode each word on its own inside the loop"),
}


def _check_tokens_per_word_once(function, tokenizer, words) -> None:
    ref = _tokenizer_module()
    expected = ref.tokens_per_word(tokenizer, words)
    given = list(words)
    result = _call(function, tokenizer, given)
    if given != list(words):
        fail("changed_input", "the function changed the list of words it was given", list(words), given,
             "build a new dict; do not modify `words`")
    if result is None:
        fail("returned_none", "the function returned None: it has no `return`", expected, "None", "return the dict")
    if isinstance(result, (list, tuple)):
        same = list(result) == list(expected.values())
        fail("returned_list", "a list came back instead of a dict {word: number of tokens}" +
             (" (the numbers are right)" if same else ""), expected, list(result),
             "return {word: count for ...}, a dict keyed by the words")
    if not isinstance(result, dict):
        fail("not_a_dict", f"a {type(result).__name__} came back instead of a dict", expected, repr(result)[:120],
             "return {word: count for ...}")
    if set(result) != set(words):
        fail("wrong_keys", "the dict's keys are not the words that were passed in", sorted(expected),
             sorted(map(str, result))[:10], "use each word itself as the key")
    bad = {w: v for w, v in result.items() if isinstance(v, bool) or not isinstance(v, numbers.Integral)}
    if bad:
        word, value = next(iter(bad.items()))
        fail("values_not_counts", f"the values are not whole numbers (e.g. {word!r}: {type(value).__name__})",
             f"{word!r}: {expected[word]}", f"{word!r}: {value!r}"[:120],
             "store len(...) of the tokens, not the tokens themselves" if isinstance(value, (list, tuple)) else "store an int")
    result = {w: int(v) for w, v in result.items()}
    if result == expected:
        return
    for code, variant in tokens_per_word_variants(tokenizer, words).items():
        if result == variant and variant != expected:
            mistake, advice = TOKENS_PER_WORD_MISTAKES[code]
            fail(code, mistake[0].upper() + mistake[1:], expected, result, advice)
    fail("counts_differ", "some counts differ from encoding each word on its own", expected, result,
         "len(tokenizer.encode(word).tokens) for each word, with the tokenizer passed in")


def check_tokens_per_word(function: Callable) -> CheckResult:
    """Check ``tokens_per_word(tokenizer, words) -> {word: count}`` with two reference tokenizers."""

    def body():
        ref = _tokenizer_module()
        corpus = list(ref.TINY_CORPUS)
        small, large = (ref.train_bpe_tokenizer(corpus, size) for size in (40, 80))
        _check_tokens_per_word_once(function, large, list(WORDS))
        expected_small = ref.tokens_per_word(small, list(WORDS))
        result = _call(function, small, list(WORDS))
        if isinstance(result, dict) and result == ref.tokens_per_word(large, list(WORDS)) != expected_small:
            fail("ignores_tokenizer", "the counts do not change with the tokenizer passed in (a global tokenizer?)",
                 f"with a vocabulary of 40: {expected_small}", result,
                 "use the function's `tokenizer` argument")
        _check_tokens_per_word_once(function, small, list(WORDS))

    return _run("tokens_per_word", "Exercise 8", body)


# ---------------------------------------------------------------------------------------------
# Exercise 9: embedding parameters
# ---------------------------------------------------------------------------------------------


def check_embedding_parameters(function: Callable) -> CheckResult:
    """Check ``embedding_parameters(vocab_size, d) -> int`` against the package's version."""

    def body():
        ref = _tokenizer_module()
        for vocab_size, d in [(80, 128), (50_000, 768), (7, 3)]:
            expected = ref.embedding_parameters(vocab_size, d)
            result = _call(function, vocab_size, d)
            if isinstance(result, bool) or not isinstance(result, numbers.Real):
                fail("not_a_number", "the function should return a number", f"{expected:,}", repr(result)[:80],
                     "return vocab_size * d")
            if result == expected:
                continue
            guesses = {
                "added_not_multiplied": (vocab_size + d, "the sizes were added; a (vocab_size, d) table holds vocab_size × d numbers"),
                "counted_a_bias": (vocab_size * d + d, "a bias was counted; an embedding is a lookup table with no bias"),
                "width_squared": (d * d, "d × d was computed; the table has one row per token: vocab_size × d"),
                "in_millions": (vocab_size * d / 1e6, "the count came back in millions; return the plain number of parameters"),
            }
            for code, (value, mistake) in guesses.items():
                if math.isclose(float(result), value):
                    fail(code, mistake[0].upper() + mistake[1:], f"{expected:,} for vocab_size={vocab_size}, d={d}",
                         f"{result:,}", "an embedding is a table of shape (vocab_size, d)")
            fail("parameters_differ", "the count differs from vocab_size × d",
                 f"{expected:,} for vocab_size={vocab_size}, d={d}", f"{result:,}",
                 "sum(p.numel() for p in nn.Embedding(vocab_size, d).parameters())")

    return _run("embedding_parameters", "Exercise 9", body)


# ---------------------------------------------------------------------------------------------
# Running a student's file
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    name: str
    exercise: str
    signature: str
    run: Callable[[Callable], CheckResult]


CHECKS: list[Check] = [
    Check("attention", "Exercise 1", "attention(q, k, v, padding)", check_attention),
    Check("masked_mean", "Exercise 3", "masked_mean(x, padding)", check_masked_mean),
    Check("accuracy", "Exercise 4", "accuracy(logits, labels)", check_accuracy),
    Check("train_bpe_tokenizer", "Exercise 6", "train_bpe_tokenizer(corpus, vocab_size)", check_train_bpe_tokenizer),
    Check("tokens_per_word", "Exercise 8", "tokens_per_word(tokenizer, words)", check_tokens_per_word),
    Check("embedding_parameters", "Exercise 9", "embedding_parameters(vocab_size, d)", check_embedding_parameters),
]


@dataclass
class Report:
    path: str
    results: list[CheckResult] = field(default_factory=list)
    load_error: str | None = None
    seconds: float = 0.0

    @property
    def all_passed(self) -> bool:
        return self.load_error is None and all(r.status == PASSED for r in self.results)


def find_homework_starter(start: Path | str | None = None) -> Path:
    """The homework starter (``exercises/homework/starter.py``) in ``start`` (default: the working
    directory) or one of its parents, else next to the package; ``FileNotFoundError`` if absent."""
    origins = [Path(start or Path.cwd()).resolve(), Path(__file__).resolve().parent]
    for origin in origins:
        for folder in (origin, *origin.parents):
            if (folder / DEFAULT_PATH).is_file():
                return folder / DEFAULT_PATH
    raise FileNotFoundError(f"no {DEFAULT_PATH} above {origins[0]} or above the package at {origins[1]}")


def load_module(path: Path) -> types.ModuleType:
    """Import a Python file by path (without running its ``if __name__ == "__main__"`` block)."""
    spec = importlib.util.spec_from_file_location("student_homework", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_module(module: types.ModuleType, only: Sequence[str] = ()) -> list[CheckResult]:
    """Run every (or every selected) check on the functions of ``module``."""
    results = []
    for check in CHECKS:
        if only and check.name not in only:
            continue
        function = getattr(module, check.name, None)
        if not callable(function):
            results.append(CheckResult(check.name, check.exercise, MISSING,
                                       f"no function `{check.name}` in the file: define {check.signature}"))
            continue
        origin = getattr(function, "__module__", "") or ""
        if origin.split(".")[0] == "transformer_lab":
            finding = Finding("imported_answer", f"`{check.name}` is the book's own function, imported from {origin}",
                              f"your own {check.signature}", f"{origin}.{check.name}",
                              "write the function yourself; the self-check compares it with the book's")
            results.append(CheckResult(check.name, check.exercise, FAILED, finding.mistake, finding))
            continue
        results.append(check.run(function))
    return results


def check_file(path: str | Path, only: Sequence[str] = (), display: str | None = None) -> Report:
    """Load ``path`` and run the checks; a file that cannot be imported gives a one-line error.

    ``display`` is the name the report prints for the file (default: ``path`` as given).
    """
    start = time.perf_counter()
    report = Report(display or str(path))
    try:
        module = load_module(Path(path))
    except (Exception, SystemExit) as error:  # noqa: BLE001 - a broken file is reported, not raised
        report.load_error = summarise_exception(error, str(path))
    else:
        report.results = check_module(module, only)
    report.seconds = time.perf_counter() - start
    return report


def format_report(report: Report) -> str:
    """The text the command prints."""
    lines = [f"Self-check of {report.path}", ""]
    if report.load_error is not None:
        lines += [f"Could not load the file: {report.load_error}", "Fix this first; no check ran."]
        return "\n".join(lines)
    signature = {check.name: check.signature for check in CHECKS}
    for result in report.results:
        lines.append(f"[{result.status}] {result.exercise}: {signature.get(result.name, result.name)}")
        if result.status == PASSED:
            continue
        if result.finding is None:
            lines.append(f"    {result.summary}")
            continue
        finding = result.finding
        lines.append(f"    Likely mistake: {finding.mistake}")
        lines.append(f"    expected: {finding.expected}")
        lines.append(f"    received: {finding.received}")
        if finding.advice:
            lines.append(f"    Try: {finding.advice}")
    statuses = (PASSED, FAILED, RAISED, NOT_DONE, MISSING)
    counts = {status: sum(r.status == status for r in report.results) for status in statuses}
    parts = [f"{n} {status.lower()}" for status, n in counts.items() if n]
    total = len(report.results)
    checks = f"{total} check{'s' if total != 1 else ''}"
    lines += ["", f"{', '.join(parts)} (of {checks}), in {format_wall_time(report.seconds)}."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m transformer_lab.selfcheck", description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=None,
                        help=f"file to check (default: {DEFAULT_PATH}, looked up from the working directory)")
    parser.add_argument("--only", nargs="+", default=(), choices=[c.name for c in CHECKS], metavar="NAME",
                        help="run only these checks: " + ", ".join(c.name for c in CHECKS))
    args = parser.parse_args(argv)
    if args.path is None:
        try:
            found = find_homework_starter()
        except FileNotFoundError as error:
            print(f"{error}. Pass the path of your file.")
            return 2
        args.path = str(DEFAULT_PATH) if found.resolve() == (Path.cwd() / DEFAULT_PATH).resolve() else str(found)
    if not Path(args.path).is_file():
        print(f"No such file: {args.path}. Run from the repository root, or pass the path of your file.")
        return 2
    report = check_file(args.path, args.only)
    print(format_report(report))
    if report.load_error is not None:
        return 2
    return 0 if report.all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
