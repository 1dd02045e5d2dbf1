"""Exercise 3: ``attention(q, k, v, padding) -> (output, weights)``, written by hand.

The weights are built from three ingredients: a scale, a normalisation and a mask. Each has a
short table of typical mistakes; the diagnosis tries every combination (single mistakes first)
and names the one that reproduces the student's weights. Then the output is compared with the
weights it should have been mixed with.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from transformer_lab import attention as reference
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
    row_text,
    shape_text,
    smallest_input_note,
)
from transformer_lab.selfcheck.core import (
    Failed,
    Mistake,
    StudentRaised,
    combine,
    fail,
    fail_if_none,
    fail_with,
    first_match,
)
from transformer_lab.selfcheck.execution import StudentFunction, type_name
from transformer_lab.selfcheck.transport import bounded_repr

EXERCISE = "Exercise 3"

# Sizes are all different (and D differs from Dv), so a wrong axis or width gives other numbers.
ATT_B, ATT_LQ, ATT_LK, ATT_D, ATT_DV = 2, 3, 4, 5, 7

ATTENTION_HINTS = [
    (
        r"size of tensor a .* must match the size of tensor b",
        "the scores are (B, Lq, Lk): padding (B, Lk) needs a query axis to line up, padding[:, None, :]",
    )
]


def attention_probe(seed: int = 20, scale: float = 1.0):
    """q (2, 3, 5), k (2, 4, 5), v (2, 4, 7) and a padding mask with at least one real and one
    padded key per example (so even an inverted mask gives finite numbers to compare)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(ATT_B, ATT_LQ, ATT_D, generator=g) * scale
    k = torch.randn(ATT_B, ATT_LK, ATT_D, generator=g) * scale
    v = torch.randn(ATT_B, ATT_LK, ATT_DV, generator=g)
    padding = torch.tensor([[False, False, False, True], [False, True, True, True]])
    return q, k, v, padding


# --- the three ingredients of the weights, each with its mistakes ----------------------------
# A step's ``variant`` computes its part: a divisor from (q, k, v), normalised weights from
# scores, masked scores or weights. The first entry of each table is the correct step.

SCALES: list[Mistake] = [
    Mistake("", "", "", lambda q, k, v: math.sqrt(q.shape[-1])),
    Mistake(
        "no_scaling",
        "the scores were not divided by √d",
        "divide the scores by math.sqrt(q.shape[-1]) before the softmax",
        lambda q, k, v: 1.0,
    ),
    Mistake(
        "divided_by_d",
        "the scores were divided by d instead of √d",
        "the scale is the square root of the key width: / math.sqrt(d), not / d",
        lambda q, k, v: float(q.shape[-1]),
    ),
    Mistake(
        "multiplied_by_sqrt_d",
        "the scores were multiplied by √d instead of divided",
        "divide by √d: large scores saturate the softmax",
        lambda q, k, v: 1 / math.sqrt(q.shape[-1]),
    ),
    Mistake(
        "divided_by_2_sqrt_d",
        "the scores were divided by 2·√d instead of √d",
        "divide by math.sqrt(d) once, with no extra factor",
        lambda q, k, v: 2 * math.sqrt(q.shape[-1]),
    ),
    Mistake(
        "divided_by_half_d",
        "the scores were divided by d/2: `d ** 1/2` means (d ** 1) / 2, not √d",
        "write d ** 0.5 or math.sqrt(d); ** binds tighter than /",
        lambda q, k, v: q.shape[-1] / 2,
    ),
    Mistake(
        "divided_by_value_width",
        "the scores were divided by √(width of the values) instead of √(width of the keys)",
        "d is the width of q and k, q.shape[-1]; v may be wider or narrower",
        lambda q, k, v: math.sqrt(v.shape[-1]),
    ),
    *(
        Mistake(
            "wrong_width",
            f"the scores were divided by √{size}, {what} ({shape}), instead of √d",
            f"on batched tensors {shape} is {size}, not d; use d = q.shape[-1]",
            lambda q, k, v, _of=of, _axis=axis: math.sqrt((q, k)[_of].shape[_axis]),
        )
        for size, what, shape, of, axis in (  # of: 0 for q, 1 for k
            ("Lq", "the number of queries", "q.shape[1]", 0, 1),
            ("Lk", "the number of keys", "k.shape[1]", 1, 1),
            ("B", "the batch size", "q.shape[0]", 0, 0),
        )
    ),
]


NORMALISERS: list[Mistake] = [
    Mistake("", "", "", lambda s: torch.softmax(s, dim=-1)),
    Mistake(
        "softmax_over_queries",
        "the softmax ran over the queries (dim=1 or -2) instead of the keys (dim=-1)",
        "torch.softmax(scores, dim=-1): each query row spreads its weight over the keys",
        lambda s: torch.softmax(s, dim=-2),
    ),
    Mistake(
        "softmax_over_batch",
        "the softmax ran over the batch axis (dim=0) instead of the keys (dim=-1)",
        "torch.softmax(scores, dim=-1): the batch axis holds separate examples "
        "(F.softmax without dim picks dim=0 on a 3-D tensor)",
        lambda s: torch.softmax(s, dim=0),
    ),
    Mistake(
        "relu_normalised",
        "the weights are not a softmax: negative scores were cut to 0 (ReLU) and the rest "
        "divided by their sum",
        "use torch.softmax(scores, dim=-1): exp keeps every key in play, in proportion "
        "to exp(score)",
        lambda s: s.clamp(min=0) / s.clamp(min=0).sum(-1, keepdim=True),
    ),
    Mistake(
        "normalised_without_exp",
        "the scores were divided by their sum without exp: that is not a softmax, and "
        "the weights can be negative",
        "torch.softmax(scores, dim=-1) = exp(scores) / exp(scores).sum(-1)",
        lambda s: s / s.sum(-1, keepdim=True),
    ),
    Mistake(
        "sigmoid_not_softmax",
        "a sigmoid was applied to each score on its own, so the weights of a query do "
        "not sum to 1",
        "torch.softmax(scores, dim=-1) normalises over the keys",
        lambda s: torch.sigmoid(s),
    ),
    Mistake(
        "log_softmax",
        "the weights are log-probabilities (log_softmax): they are negative, and their "
        "exponentials, not they, sum to 1",
        "torch.softmax(scores, dim=-1), not torch.log_softmax",
        lambda s: torch.log_softmax(s, dim=-1),
    ),
]


def _fill(value: float, invert: bool = False) -> Callable:
    return lambda s, ignore: s.masked_fill(~ignore if invert else ignore, value)


def _keep(s, ignore):
    return s


@dataclass(frozen=True)
class MaskStep(Mistake):
    """A mask step (code "" when right): what it does to the scores before the normalisation
    and to the weights after it."""

    before: Callable = _keep
    after: Callable = _keep


MASKS: list[MaskStep] = [
    MaskStep("", "", "", before=_fill(float("-inf"))),
    # also right, but a large finite fill differs from −∞ once another step is wrong (a softmax
    # over the queries spreads a column of -1e9 evenly, where −∞ gives NaN)
    MaskStep("", "", "", before=_fill(-1e9)),
    MaskStep(
        "mask_after_softmax",
        "padded keys were zeroed after the softmax instead of set to −∞ before it, so "
        "the weights no longer sum to 1",
        "masked_fill(padding[:, None, :], float('-inf')) on the scores, then softmax",
        after=_fill(0.0),
    ),
    MaskStep(
        "mask_with_zero",
        "padded scores were set to 0 instead of −∞ before the softmax",
        "exp(0) = 1, so a 0 score still takes weight; fill with float('-inf')",
        before=_fill(0.0),
    ),
    MaskStep(
        "inverted_mask",
        "the mask was inverted: the real keys were hidden and the padded ones kept",
        "True means ignore: fill where padding is True, not where it is False",
        before=_fill(float("-inf"), invert=True),
    ),
    MaskStep(
        "mask_ignored",
        "the padding mask had no effect on the weights",
        "masked_fill returns a new tensor: scores = scores.masked_fill(...); and pass padding[:, None, :]",
    ),
    MaskStep(
        "inf_after_softmax",
        "−∞ was written into the weights after the softmax",
        "fill the scores with −∞ before the softmax; weights must be between 0 and 1",
        after=_fill(float("-inf")),
    ),
    MaskStep(
        "mask_times_inf",
        "the mask was multiplied by −∞ and added to the scores: 0 × −∞ is NaN, so every "
        "weight became NaN",
        "scores.masked_fill(padding[:, None, :], float('-inf')) sets only the padded "
        "scores",
        before=lambda s, ignore: s + ignore.double() * float("-inf"),
    ),
    # the same all-NaN weights as mask_times_inf where every example has padding;
    # _name_the_infinity tells the two apart on a probe without padding
    MaskStep(
        "mask_with_plus_inf",
        "padded scores were set to +∞ instead of −∞: the softmax of a row holding +∞ is "
        "NaN (∞ / ∞), so every query of an example with padding got NaN weights",
        "masked_fill(padding[:, None, :], float('-inf')): minus infinity, so exp gives 0",
        before=_fill(float("inf")),
    ),
]


def _weights(
    q, k, v, padding, scale: Mistake, normaliser: Mistake, mask: MaskStep
) -> torch.Tensor:
    raw = q.double() @ k.double().transpose(-2, -1)
    ignore = padding[:, None, :].expand_as(raw)
    scores = mask.before(raw / scale.variant(q, k, v), ignore)
    return mask.after(normaliser.variant(scores), ignore)


def weight_mistakes() -> list[Mistake]:
    """Every combination of scale, normalisation and mask with at least one mistake, fewest first,
    then a few mistakes of another kind. Each ``variant(q, k, v, padding)`` returns its weights."""
    combinations = []
    for scale, normaliser, mask in itertools.product(SCALES, NORMALISERS, MASKS):
        parts = [m for m in (scale, normaliser, mask) if m.code]
        if parts:
            variant = functools.partial(
                _weights, scale=scale, normaliser=normaliser, mask=mask
            )
            combinations.append((len(parts), combine(*parts, variant=variant)))
    # Stable: single mistakes in table order first.
    combinations.sort(key=lambda pair: pair[0])
    singles = [m for n, m in combinations if n == 1]
    return singles + OTHER_WEIGHT_MISTAKES + [m for n, m in combinations if n > 1]


def _scores(q, k, v, padding, scale: bool = True, mask: bool = True) -> torch.Tensor:
    """q kᵀ (divided by √d when ``scale``; padded keys −∞ when ``mask``), in float64."""
    scores = (
        q.double() @ k.double().transpose(-2, -1) / math.sqrt(q.shape[-1] if scale else 1)
    )
    return scores.masked_fill(padding[:, None, :], float("-inf")) if mask else scores


OTHER_WEIGHT_MISTAKES: list[Mistake] = [
    Mistake(
        "scaled_after_softmax",
        "the weights were divided by √d after the softmax (instead of the scores "
        "before it), so each row sums to 1/√d",
        "scale the scores, then softmax: softmax(q kᵀ / √d)",
        lambda q, k, v, padding: (
            torch.softmax(_scores(q, k, v, padding, scale=False), -1)
            / math.sqrt(q.shape[-1])
        ),
    )
]

# The output is right, but the weights returned next to it are not the ones that produced it.
RETURNED_WEIGHT_MISTAKES: list[Mistake] = [
    Mistake(
        "returned_unmasked_weights",
        "the output is right, but the returned weights are the ones before the mask "
        "(the padded keys still have weight)",
        "return the weights you mixed the values with: after masked_fill and softmax",
        lambda *probe: torch.softmax(_scores(*probe, mask=False), -1),
    ),
    Mistake(
        "returned_scores",
        "the output is right, but the scores (before the softmax) were returned instead of "
        "the weights",
        "return softmax(scores), the weights you mixed the values with",
        _scores,
    ),
    Mistake(
        "returned_scores",
        "the output is right, but the unmasked scores (before the softmax) were returned "
        "instead of the weights",
        "return softmax(scores), the weights you mixed the values with",
        functools.partial(_scores, mask=False),
    ),
]

LIBRARY_ADVICE = (
    "write the steps yourself: scores = q @ k.transpose(-2, -1) / math.sqrt(d), masked_fill, "
    "torch.softmax(..., dim=-1), weights @ v; compare with the library outside this function"
)


def call_by_hand(student: StudentFunction, what: str, *args, **options):
    """The student's call, rejected when a library attention function (named in the file, or
    called) did the work that ``what`` (the exercise) asks to write by hand."""
    if student.library_names:
        fail_library(student.library_names, what)
    returned = student.call(*args, watch_library=True, **options)
    if returned.library:
        fail_library(returned.library, what)
    return returned


def fail_library(names: list[str], what: str) -> None:
    """Reject a library attention call in a function the exercise wants written by hand."""
    fail(
        "library_attention",
        f"a library function ({names[0]}) computes the attention for you; {what} asks you to write it by hand, "
        "so the self-check cannot see whether your own steps are right",
        "your own scores, mask, softmax and mix (no library attention call)",
        f"a call to {names[0]}",
        LIBRARY_ADVICE,
    )


ONE_TENSOR = Mistake(
    "returned_one_tensor",
    "a single tensor was returned instead of the pair (output, weights)",
    "return output, weights",
)
ONLY_OUTPUT = Mistake(
    "returned_only_output",
    "only the output was returned, not (output, weights)",
    "return output, weights",
)


WEIGHTS_SHAPE = Mistake(
    "weights_shape",
    "the weights have the wrong shape",
    "one row per query and one column per key, for every example",
)
WEIGHTS_TRANSPOSED = Mistake(
    "weights_transposed",
    "the weights have keys and queries swapped (did you compute k @ qᵀ?)",
    "scores = q @ k.transpose(-2, -1): one row per query, one column per key",
)
OUTPUT_SHAPE = Mistake(
    "output_shape",
    "the output has the wrong shape",
    "output = weights @ v: (B, Lq, Lk) @ (B, Lk, Dv) -> (B, Lq, Dv)",
)
MIXED_KEYS = Mistake(
    "mixed_keys",
    "the output has the width of the keys: the weights mixed k instead of v",
    "output = weights @ v",
)


def unpack_pair(result, q, k, v):
    """Check the return value is (output (B, Lq, Dv), weights (B, Lq, Lk)) and return the two
    tensors."""
    (b, lq, d), lk = q.shape, k.shape[1]
    out_shape, w_shape = (b, lq, v.shape[2]), (b, lq, lk)
    pair = f"(output {out_shape}, weights {w_shape})"
    fail_if_none(result, pair, "end with `return output, weights`")
    expected = f"a pair: output {out_shape} and weights {w_shape}"
    if isinstance(result, torch.Tensor):
        received = f"one tensor of shape {shape_text(result)}"
        alone = ONLY_OUTPUT if tuple(result.shape) == out_shape else ONE_TENSOR
        fail_with(alone, expected, received)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        got = type_name(result)
        if isinstance(result, (tuple, list)):
            got += f" of length {len(result)}"
        fail(
            "wrong_return_count",
            "the function should return exactly two things: (output, weights)",
            expected,
            got,
            "return output, weights",
        )
    output, weights = result
    if isinstance(output, torch.Tensor) and isinstance(weights, torch.Tensor):
        if tuple(output.shape) == w_shape and tuple(weights.shape) == out_shape:
            fail(
                "swapped_outputs",
                "the pair came back in the wrong order: (weights, output)",
                pair,
                f"({shape_text(output)}, {shape_text(weights)})",
                "return output, weights — output first",
            )
    output = require_tensor(output, "the returned output", out_shape, "output")
    weights = require_tensor(weights, "the returned weights", w_shape, "weights")
    wanted = f"weights of shape {w_shape} = (B, Lq, Lk)"
    require_shape(
        weights, w_shape, wanted, WEIGHTS_SHAPE, {(b, lk, lq): WEIGHTS_TRANSPOSED}
    )
    wanted = f"output of shape {out_shape} = (B, Lq, Dv)"
    require_shape(output, out_shape, wanted, OUTPUT_SHAPE, {(b, lq, d): MIXED_KEYS})
    return output, weights


def _diagnose_weights(student, output, weights, probe, expected_output, expected_weights):
    """The weights differ from the reference: name the mistake, or describe the difference
    (on the smallest input that goes wrong)."""
    v = probe[2]
    shown = Evidence(*compare_rows("weights", weights, expected_weights))
    if close(output, expected_output) and not close(output, weights.double() @ v.double()):
        shown.diagnose(weights, RETURNED_WEIGHT_MISTAKES, probe)
        shown.fail(
            "returned_weights_differ",
            "the output is right, but the returned weights are not the ones that "
            "produced it" + _smallest_attention_note(student, SMALL_PROBES),
            "return the weights you mixed the values with",
        )
    shown.diagnose(weights, weight_mistakes(), probe)
    if not torch.isfinite(weights).all():
        shown.fail(
            "weights_not_finite",
            "the weights contain NaN or ±inf",
            "every row needs at least one finite score; fill padded scores with −∞ before softmax only",
        )
    sums = weights.detach().double().sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        fail(
            "rows_do_not_sum_to_one",
            "the rows of the weights do not sum to 1",
            "every row sums to 1.000",
            f"row sums {row_text(sums.reshape(-1))}",
            "apply torch.softmax over the keys (dim=-1) as the last step of the weights",
        )
    shown.fail(
        "weights_differ",
        "the weights differ from softmax(q kᵀ / √d) with padded keys masked"
        + _smallest_attention_note(student, SMALL_PROBES),
        "compare your scores with q @ k.transpose(-2, -1) / math.sqrt(d) step by step",
    )


def _diagnose_output(student, output, probe, expected_output):
    """The weights are right but the output is not: which weights (or values) was it mixed from?"""
    shown = Evidence(*compare_rows("output", output, expected_output))
    mixed = [
        Mistake(
            m.code, m.message, m.advice, lambda *p, _m=m: _m.variant(*p) @ p[2].double()
        )
        for m in weight_mistakes()
    ]
    match = first_match(output, mixed, probe, close)
    if match is not None:
        shown.fail(
            "output_from_other_weights",
            f"the weights are right but the output was mixed with other weights, ones where {match.message}",
            "compute output = weights @ v with the weights you return",
        )
    shown.fail(
        "output_differs",
        "the weights are right but the output is not weights @ v"
        + _smallest_attention_note(student, SMALL_PROBES),
        "output = weights @ v",
    )


def _check_probe(student: StudentFunction, q, k, v, padding):
    """One probe: structure, shapes, weights (against every typical mistake), then output."""
    probe = (q, k, v, padding)
    clones = [t.clone() for t in probe]
    returned = call_by_hand(student, EXERCISE, *clones, hints=ATTENTION_HINTS)
    check_unchanged([q, k, v, padding], returned.args, ["q", "k", "v", "padding"])
    output, weights = unpack_pair(returned.result, q, k, v)
    expected_output, expected_weights = reference.attention(
        q.double(), k.double(), v.double(), padding
    )
    if not close(weights, expected_weights):
        _diagnose_weights(
            student, output, weights, probe, expected_output, expected_weights
        )
    if not close(output, expected_output):
        _diagnose_output(student, output, probe, expected_output)


def _smallest_attention_note(student: StudentFunction, probes: list[tuple]) -> str:
    """``smallest_input_note`` for attention: the first of ``probes`` (q, k, v, padding), listed
    from the smallest, on which the output or the weights differ from the book's."""
    return smallest_input_note(
        student,
        lambda *probe: reference.attention(*[t.double() for t in probe[:3]], probe[3]),
        probes,
        lambda got, want: (
            isinstance(got, (tuple, list))
            and len(got) == 2
            and close(got[0], want[0])
            and close(got[1], want[1])
        ),
        lambda q, k, v, padding: (
            f"q {q.tolist()}, k {k.tolist()}, v {v.tolist()}, padding {padding.tolist()}"
        ),
        lambda pair: (
            f"(output {row_text(pair[0])}, weights {row_text(pair[1])})"
            if isinstance(pair, (tuple, list)) and len(pair) == 2
            else bounded_repr(pair, 60)
        ),
    )


def _one(q: list, k: list, v: list, padding: list) -> tuple:
    """A probe of one example from nested lists: q (Lq, D), k (Lk, D), v (Lk, Dv), padding (Lk,)."""
    return (*(torch.tensor([x]) for x in (q, k, v)), torch.tensor([padding]))


# The smallest inputs first (one query; one, then two keys; then padding and two features), for
# a "differs" message that names the smallest input on which the answer goes wrong.
SMALL_PROBES = [
    _one([[1.0]], [[1.0]], [[2.0]], [False]),
    _one([[1.0]], [[1.0], [0.0]], [[2.0], [4.0]], [False, False]),
    _one([[1.0]], [[1.0], [0.0], [2.0]], [[2.0], [4.0], [8.0]], [False, False, True]),
    _one(
        [[1.0, 0.0], [0.0, 1.0]],
        [[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]],
        [[2.0], [4.0], [8.0]],
        [False, False, True],
    ),
]

# Large scores, the smallest inputs first: one query and two keys whose scores are 400 and 380
# (the first key should take almost all the weight), then the same beside a padded key.
LARGE_PROBES = [
    _one([[20.0]], [[20.0], [19.0]], [[2.0], [4.0]], [False, False]),
    _one([[20.0]], [[20.0], [19.0], [0.0]], [[2.0], [4.0], [8.0]], [False, False, True]),
]


def _check_large_scores(student: StudentFunction):
    """exp(400) overflows float32, so a softmax written as exp(s) / sum(exp(s)) returns
    inf / inf = NaN on ``LARGE_PROBES``, where torch.softmax (which subtracts the row maximum)
    puts almost all weight on the first key; capping the scores before exp keeps the numbers
    finite but weights the two keys alike."""
    for probe in LARGE_PROBES:
        q, k, v, padding = (t.clone() for t in probe)
        returned = student.call(q, k, v, padding, hints=ATTENTION_HINTS)
        output, weights = unpack_pair(returned.result, q, k, v)
        real = weights[~padding[:, None, :].expand_as(weights)]
        if not (torch.isfinite(real).all() and torch.isfinite(output).all()):
            fail(
                "softmax_overflow",
                "with large scores the weights become NaN: a hand-written softmax overflowed",
                "finite weights for scores in the hundreds",
                f"{int((~torch.isfinite(weights)).sum())} non-finite weights",
                "use torch.softmax, or subtract each row's maximum before exp",
            )
    note = _smallest_attention_note(student, LARGE_PROBES)
    if note:
        fail(
            "large_scores_differ",
            "with large scores (in the hundreds) the output goes wrong" + note,
            "almost all weight on the key with the largest score",
            "see above",
            "use torch.softmax and fill padded scores with float('-inf') or a value below -1e4",
        )


def _name_the_infinity(student: StudentFunction, failure: Failed) -> None:
    """mask_times_inf and mask_with_plus_inf both turn every weight of a padded example into
    NaN; only the first also does so where nothing is padded. Re-raise with the right name."""
    if failure.finding.code != "mask_times_inf":
        raise failure
    g = torch.Generator().manual_seed(24)
    x = torch.randn(1, 2, ATT_D, generator=g)
    padding = torch.zeros(1, 2, dtype=torch.bool)
    try:
        result = student.call(x, x, torch.randn(1, 2, ATT_DV, generator=g), padding).result
    except StudentRaised:
        raise failure from None
    weights = result[1] if isinstance(result, (tuple, list)) and len(result) == 2 else None
    if isinstance(weights, torch.Tensor) and torch.isfinite(weights).all():
        plus = next(m for m in MASKS if m.code == "mask_with_plus_inf")
        fail_with(plus, failure.finding.expected, failure.finding.received)
    raise failure


@checker(EXERCISE, "attention(q, k, v, padding)")
def check_attention(student: StudentFunction) -> None:
    """Check ``attention(q, k, v, padding) -> (output, weights)`` against the package's version."""
    try:
        _check_probe(student, *attention_probe(seed=answers.fresh_seed(20)))
    except Failed as failure:
        _name_the_infinity(student, failure)
    # no padding at all, and a self-attention shape with Lq == Lk
    g = torch.Generator().manual_seed(answers.fresh_seed(21))
    x = torch.randn(3, 4, ATT_D, generator=g)
    v = torch.randn(3, 4, ATT_DV, generator=g)
    _check_probe(student, x, x, v, torch.zeros(3, 4, dtype=torch.bool))
    _check_large_scores(student)
    probe = list(attention_probe(seed=answers.fresh_seed(22)))
    check_gradient(student, probe, ["q", "k", "v"], "first", reference.attention)
