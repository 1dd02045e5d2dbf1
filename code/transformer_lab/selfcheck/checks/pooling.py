"""Exercise 2: ``masked_mean(x, padding) -> (B, D)``, the mean of each example's real tokens."""

from __future__ import annotations

import torch

from transformer_lab import pooling as reference
from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    check_gradient,
    check_unchanged,
    checker,
    close,
    compare_rows,
    require_shape,
    require_tensor,
    smallest_input_note,
)
from transformer_lab.selfcheck.core import Mistake
from transformer_lab.selfcheck.execution import StudentFunction

MASKED_MEAN_HINTS = [
    (
        r"size of tensor a .* must match the size of tensor b",
        "shapes do not line up: the mask needs a feature axis, padding[:, :, None] (B, L, 1), and the counts "
        "need shape (B, 1)",
    )
]


def masked_mean_probe(batch: int = 3, length: int = 5, width: int = 3, seed: int = 30):
    """x (B, L, D) whose padded rows hold large values, and a mask with real and padded tokens in
    every example; the longest example is shorter than L. With B == D, dividing by counts of
    shape (B,) broadcasts silently, so the default probe uses B == D to catch that too."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, width, generator=g)
    lengths = torch.tensor([2, 4, 3, 1, 3][:batch])
    padding = torch.arange(length)[None, :] >= lengths[:, None]
    x = torch.where(
        padding[:, :, None], 50.0 + 10 * torch.rand(batch, length, width, generator=g), x
    )
    return x, padding


def _parts(x, padding):
    """(x, masked sum, real counts (B, 1), padded counts (B, 1)) in float64."""
    keep = (~padding)[:, :, None].double()
    x = x.double()
    return x, (x * keep).sum(1), keep.sum(1), (1 - keep).sum(1)


def _counts_without_keepdim(x, padding):
    if x.shape[0] != x.shape[2]:
        raise ValueError("only broadcasts when B == D")
    _, total, count, _ = _parts(x, padding)
    return total / count[:, 0]


MISTAKES: list[Mistake] = [
    Mistake(
        "mean_over_padding",
        "the mean included the padded tokens",
        "zero the padded tokens and divide by the number of real tokens",
        lambda x, padding: x.double().mean(1),
    ),
    Mistake(
        "padded_not_zeroed",
        "the padded tokens were left in the sum (only the count left them out)",
        "multiply x by keep = (~padding)[:, :, None] before summing",
        lambda x, padding: x.double().sum(1) / _parts(x, padding)[2],
    ),
    Mistake(
        "divided_by_full_length",
        "the padded tokens were zeroed, but the sum was divided by the full length L",
        "divide by the number of real tokens per example: (~padding).sum(1, keepdim=True)",
        lambda x, padding: _parts(x, padding)[1] / x.shape[1],
    ),
    Mistake(
        "divided_by_longest",
        "every sum was divided by the length of the longest example, not by each "
        "example's own number of real tokens",
        "one count per example: (~padding).sum(1, keepdim=True)",
        lambda x, padding: _parts(x, padding)[1] / _parts(x, padding)[2].max(),
    ),
    Mistake(
        "divided_by_batch_count",
        "every sum was divided by the number of real tokens in the whole batch",
        "count per example: (~padding).sum(dim=1, keepdim=True), not (~padding).sum()",
        lambda x, padding: _parts(x, padding)[1] / _parts(x, padding)[2].sum(),
    ),
    Mistake(
        "integer_division",
        "the mean was rounded down: // (floor division) instead of /",
        "divide with /: total / counts",
        lambda x, padding: torch.div(
            _parts(x, padding)[1], _parts(x, padding)[2], rounding_mode="floor"
        ),
    ),
    Mistake(
        "integer_division",
        "the mean was cut to a whole number (integer division, rounding toward zero) "
        "instead of divided with /",
        "divide with /: total / counts",
        lambda x, padding: torch.div(
            _parts(x, padding)[1], _parts(x, padding)[2], rounding_mode="trunc"
        ),
    ),
    Mistake(
        "inverted_mask",
        "the mask was inverted: the padded tokens were averaged and the real ones dropped",
        "True in padding means 'ignore': keep = ~padding",
        lambda x, padding: (
            (_parts(x, padding)[0] * padding[:, :, None]).sum(1) / _parts(x, padding)[3]
        ),
    ),
    Mistake(
        "sum_not_mean",
        "the real tokens were summed but not divided by their count",
        "divide the masked sum by the number of real tokens",
        lambda x, padding: _parts(x, padding)[1],
    ),
    Mistake(
        "divided_by_padding_count",
        "the sum was divided by the number of padded tokens",
        "count the real tokens: (~padding).sum(1)",
        lambda x, padding: _parts(x, padding)[1] / _parts(x, padding)[3],
    ),
    Mistake(
        "max_not_mean",
        "a masked maximum was returned instead of the mean",
        "sum and divide, do not take amax",
        lambda x, padding: (
            x.double().masked_fill(padding[:, :, None], float("-inf")).amax(1)
        ),
    ),
    Mistake(
        "count_plus_one",
        "the sum was divided by the number of real tokens plus 1 (to avoid dividing by "
        "zero?): every example has a real token, so the count is never 0",
        "divide by (~padding).sum(1, keepdim=True) itself; .clamp(min=1) if you must guard",
        lambda x, padding: _parts(x, padding)[1] / (_parts(x, padding)[2] + 1),
    ),
    Mistake(
        "first_token",
        "only the first token was returned (x[:, 0], a [CLS] habit): the pooling is the "
        "mean of every real token",
        "sum the real tokens over dim=1 and divide by their count",
        lambda x, padding: x.double()[:, 0],
    ),
    Mistake(
        "counts_broadcast_wrong",
        "the counts had shape (B,), so example b's sum was divided by the counts of "
        "other examples (broadcast along the feature axis)",
        "keep the counts as (B, 1): .sum(1, keepdim=True) or counts[:, None]",
        _counts_without_keepdim,
    ),
]


def _wrong_shapes(b: int, length: int, d: int) -> dict[tuple, Mistake]:
    every = "one mean per example: sum over dim=1, divide by each example's own count"
    return {
        (b, 1, d): Mistake(
            "kept_dimension",
            "the result kept the token axis: (B, 1, D) instead of (B, D)",
            "use keepdim only for the counts, or squeeze the token axis",
        ),
        (b, length): Mistake(
            "averaged_over_features",
            "the average ran over the feature axis instead of the tokens",
            "average over dim=1 (tokens), keep dim=2 (features)",
        ),
        (length, d): Mistake(
            "averaged_over_batch",
            "the average ran over the batch axis instead of the tokens",
            "average over dim=1 (tokens), one vector per example",
        ),
        (d,): Mistake(
            "pooled_whole_batch",
            "all examples were pooled into one vector (x[~padding] flattens the batch)",
            every,
        ),
        (): Mistake(
            "pooled_whole_batch", "all examples were pooled into one number", every
        ),
    }


# The smallest inputs first, for a "differs" message that names where the answer goes wrong.
SMALL_PROBES = [
    tuple(map(torch.tensor, probe))
    for probe in [
        ([[[2.0]]], [[False]]),
        ([[[2.0], [4.0]]], [[False, False]]),
        ([[[2.0], [4.0]]], [[False, True]]),
        ([[[2.0, 1.0], [4.0, 3.0], [6.0, 5.0]]], [[False, False, True]]),
        ([[[2.0], [4.0]], [[1.0], [3.0]]], [[False, True], [False, False]]),
    ]
]
RESULT_SHAPE = Mistake(
    "result_shape", "the result has the wrong shape", "x (B, L, D) -> (B, D)"
)


def _check_once(student: StudentFunction, x, padding):
    expected = reference.masked_mean(x.double(), padding)
    b, length, d = x.shape
    returned = student.call(x.clone(), padding.clone(), hints=MASKED_MEAN_HINTS)
    check_unchanged([x, padding], returned.args, ["x", "padding"])
    result = require_tensor(returned.result, "the result", (b, d), "result")
    wanted = f"shape ({b}, {d}) = (B, D)"
    require_shape(result, (b, d), wanted, RESULT_SHAPE, _wrong_shapes(b, length, d))
    if close(result, expected):
        return
    shown = Evidence(*compare_rows("result", result, expected))
    shown.diagnose(result, MISTAKES, (x, padding))
    if not torch.isfinite(result).all():
        shown.fail(
            "result_not_finite",
            "the result contains NaN or inf (0/0 somewhere?)",
            "divide by the number of real tokens, which is at least 1 in every example",
        )
    shown.fail(
        "result_differs",
        "the result is not the mean of the real (unpadded) tokens"
        + smallest_input_note(
            student,
            lambda x, padding: reference.masked_mean(x.double(), padding),
            SMALL_PROBES,
            close,
            lambda x, padding: f"x = {x.tolist()}, padding = {padding.tolist()}",
        ),
        "sum x * keep over dim=1 and divide by keep.sum(1), with keep = (~padding)[:, :, None]",
    )


@checker("Exercise 2", "masked_mean(x, padding)")
def check_masked_mean(student: StudentFunction) -> None:
    """Check ``masked_mean(x, padding) -> (B, D)`` against the package's version."""
    _check_once(student, *masked_mean_probe(seed=answers.fresh_seed(30)))
    seed = answers.fresh_seed(31)
    _check_once(student, *masked_mean_probe(batch=4, length=6, width=2, seed=seed))
    g = torch.Generator().manual_seed(answers.fresh_seed(32))
    x = torch.randn(2, 3, 4, generator=g)
    _check_once(student, x, torch.zeros(2, 3, dtype=torch.bool))  # no padding at all
    probe = list(masked_mean_probe(seed=answers.fresh_seed(33)))
    check_gradient(student, probe, ["x"], "self", reference.masked_mean)
