"""Stretch exercise: ``multi_head_attention(x, padding, mha) -> (output, weights)`` from the
weights of an ``nn.MultiheadAttention``: the output (B, L, D) and every head's attention weights
(B, H, L, L), checked against the layer itself in evaluation mode (``mha(x, x, x,
key_padding_mask=padding, average_attn_weights=False)``).

Chapter 3's ``set_classifier.multi_head_self_attention`` computes the output alone, so a copy of
it is not an answer. The right output and weights and each mistake's output come from
``answers.py`` (stored for the public inputs, the instructor's code in the hidden checks)."""

from __future__ import annotations

import copy
import functools

import torch
from torch import nn

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.attention import call_by_hand
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    check_gradient,
    check_unchanged,
    checker,
    close,
    compare_rows,
    draw_parameters,
    exact_normal,
    require_shape,
    require_tensor,
    shape_text,
)
from transformer_lab.selfcheck.core import Mistake, article, combine, fail
from transformer_lab.selfcheck.execution import StudentFunction, type_name

NAME = "multi_head_attention"
TOLERANCE = 1e-5
WHAT = "the multi-head stretch exercise (your own attention from Exercise 3 is welcome)"


@functools.cache
def _layer_of(width: int, heads: int) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention(width, heads, batch_first=True)`` in evaluation mode, built once
    per process (its own start draws from the global generator; copies are refilled)."""
    return nn.MultiheadAttention(width, heads, batch_first=True).eval()


def mha_probe(
    seed: int = 50,
    batch: int = 2,
    length: int = 5,
    width: int = 12,
    heads: int = 3,
    padding: list[list[bool]] | None = None,
):
    """x (B, L, D), padding (B, L) and a seeded ``nn.MultiheadAttention(D, H, batch_first=True)`` in
    evaluation mode whose biases are random (PyTorch starts them at zero, which would hide a
    forgotten bias). B, L, D, H and D/H all differ, so a wrong axis or size gives other numbers.
    Every number comes from the probe's own generator and is the same on every CPU
    (:func:`~transformer_lab.selfcheck.checks.tensors.exact_normal`)."""
    g = torch.Generator().manual_seed(seed)
    mha = draw_parameters(copy.deepcopy(_layer_of(width, heads)), g)
    with torch.no_grad():
        mha.in_proj_bias.copy_(exact_normal(g, 3 * width))
        mha.out_proj.bias.copy_(exact_normal(g, width))
    x = exact_normal(g, batch, length, width)
    if padding is None:
        padding = [[False] * (length - 2) + [True] * 2] + [[False] * length] * (batch - 1)
    return x, torch.tensor(padding), mha


reference = answers.reference(NAME)


def expected_output(x, padding, mha, key: str = answers.REFERENCE) -> torch.Tensor:
    """What the exercise must reproduce, ``mha(x, x, x, key_padding_mask=padding)[0]`` (``key``
    "weights": every head's weights (B, H, L, L), ``mha(..., average_attn_weights=False)[1]``),
    from the private reference in float64 (the tests check the two agree; calling the layer
    itself would add a second of PyTorch's lazy imports to the self-check)."""
    with torch.no_grad():
        return answers.answer(NAME, key)(x.double(), padding, copy.deepcopy(mha).double())


expected_weights = functools.partial(expected_output, key="weights")


_mistake = functools.partial(answers.mistake, NAME)


def _several_ways(code: str, message: str, advice: str, ways) -> list[Mistake]:
    """One mistake made in several ``ways``, each with its own wrong answer (key code + way)."""
    return [_mistake(code, message, advice, key=code + way) for way in ways]


MISTAKES: list[Mistake] = [
    _mistake(
        "no_output_projection",
        "the heads were concatenated but the output projection (mha.out_proj) was not "
        "applied",
        "finish with concat @ mha.out_proj.weight.T + mha.out_proj.bias",
    ),
    _mistake(
        "heads_split_without_transpose",
        "the heads were split with a reshape to (B, H, L, D/H) and no "
        "transpose, which mixes the positions and features of different tokens",
        "reshape to (B, L, H, D/H), then transpose(1, 2) to (B, H, L, D/H)",
    ),
    _mistake(
        "heads_merged_without_transpose",
        "the heads were merged with a reshape from (B, H, L, D/H) and no "
        "transpose, which mixes the heads of different tokens",
        "transpose(1, 2) back to (B, L, H, D/H), then reshape to (B, L, D)",
    ),
    _mistake(
        "scaled_by_model_width",
        "the scores were divided by √D (the model width) instead of √(D/H), the width "
        "of one head",
        "head_width = D // mha.num_heads; divide by math.sqrt(head_width)",
    ),
    _mistake(
        "no_scaling",
        "the scores were not divided by √(D/H)",
        "divide each head's scores by math.sqrt(D // mha.num_heads)",
    ),
    _mistake(
        "single_head",
        "the attention ran as one head over the full width: the heads were never split",
        "split q, k, v into mha.num_heads heads of width D/H, attend per head, then merge",
    ),
    _mistake(
        "mask_ignored",
        "the key padding mask had no effect",
        "scores.masked_fill(padding[:, None, None, :], "
        "float('-inf')) for scores of shape (B, H, L, L)",
    ),
    _mistake(
        "inverted_mask",
        "the mask was inverted: the real keys were hidden and the padded ones kept",
        "True means ignore: fill where padding is True",
    ),
    _mistake(
        "padding_tiled_by_example",
        "the padding mask was tiled for the heads with padding.repeat(H, 1), which lines the "
        "rows up as example 0, 1, 0, 1, ... while the heads were folded example by example "
        "(b·H + h): heads read another example's mask",
        "padding.repeat_interleave(H, dim=0) gives each example's row H times in a row, in the "
        "order of a (B, H, ...) -> (B·H, ...) reshape",
    ),
    _mistake(
        "mask_after_softmax",
        "padded keys were zeroed after the softmax instead of set to −∞ before it",
        "masked_fill with float('-inf') on the scores, then softmax",
    ),
    _mistake(
        "mask_on_queries",
        "the padding was applied to the queries instead of the keys",
        "padding[:, None, None, :] lines up with the key axis of (B, H, Lq, Lk)",
    ),
    # each with a fill of −∞ and a finite one (a column of -1e9 spreads evenly, −∞ gives NaN)
    *_several_ways(
        "softmax_over_queries",
        "the softmax ran over the queries instead of the keys (dim=-1)",
        "torch.softmax(scores, dim=-1)",
        ("", ":finite"),
    ),
    *_several_ways(
        "softmax_over_heads",
        "the softmax ran over the heads (dim=1 of (B, H, L, L)) instead of the keys",
        "torch.softmax(scores, dim=-1): each query's weights over the keys sum to 1",
        ("", ":finite"),
    ),
    *_several_ways(  # every other order of the three chunks
        "qkv_order",
        "the three chunks of the input projection were taken in another order than q, "
        "k, v (mha.in_proj_weight stacks W_q, W_k, W_v in that order)",
        "q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1)",
        (":kqv", ":qvk", ":vkq", ":kvq", ":vqk"),
    ),
    _mistake(
        "out_proj_not_transposed",
        "the output projection used mha.out_proj.weight without .T: a Linear computes "
        "x @ W.T + b, and W (D, D) is square, so the shapes hid it",
        "concat @ mha.out_proj.weight.T + mha.out_proj.bias (or F.linear(concat, W, b))",
    ),
    _mistake(
        "in_proj_bias_ignored",
        "the input projection's bias (mha.in_proj_bias) was left out",
        "q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1)",
    ),
    _mistake(
        "out_proj_bias_ignored",
        "the output projection's bias (mha.out_proj.bias) was left out",
        "concat @ mha.out_proj.weight.T + mha.out_proj.bias",
    ),
    _mistake(
        "biases_ignored",
        "both biases (mha.in_proj_bias and mha.out_proj.bias) were left out",
        "add mha.in_proj_bias after the input projection and mha.out_proj.bias after the output projection",
    ),
    _mistake(
        "residual_inside_attention",
        "the input x was added to the attention's output (a residual connection): the "
        "encoder layer adds that residual itself, after the attention; multi-head attention "
        "alone returns the output projection",
        "return merged @ mha.out_proj.weight.T + mha.out_proj.bias, without + x",
    ),
]
# Two slips at once that go together: a model-width scale when the heads were never split is
# already named by single_head; a forgotten bias with a forgotten projection is worth naming.
_BY_CODE = {mistake.code: mistake for mistake in MISTAKES}
MISTAKES.append(
    combine(
        _BY_CODE["no_output_projection"],
        _BY_CODE["in_proj_bias_ignored"],
        variant=answers.answer(NAME, "no_output_projection+in_proj_bias_ignored"),
    )
)


RESULT_SHAPE = Mistake(
    "result_shape",
    "the result has the wrong shape",
    "the output has the shape of x: (B, L, D)",
)
HEADS_NOT_MERGED = Mistake(
    "heads_not_merged",
    "the heads were not merged back: (B, H, L, D/H) instead of (B, L, D)",
    "transpose(1, 2) to (B, L, H, D/H), reshape to (B, L, D), then the output projection",
)
WEIGHTS_SHAPE = Mistake(
    "weights_shape",
    "the weights have the wrong shape",
    "(B, H, L, L): for every example and head, one row per query, one column per key",
)
WEIGHTS_AVERAGED = Mistake(
    "weights_averaged",
    "the weights were averaged over the heads (what nn.MultiheadAttention returns "
    "by default): the exercise asks for each head's own table",
    "keep the head axis (as average_attn_weights=False does)",
)
WEIGHTS_HEADS_FOLDED = Mistake(
    "weights_heads_folded",
    "the weights still have the heads folded into the batch, (B·H, L, L): the "
    "output was unfolded back to (B, L, D), the weights were not",
    "unfold them as the output: example b's heads are rows b·H to b·H + H − 1",
)


def _check_once(student: StudentFunction, x, padding, mha) -> None:
    b, length, width = x.shape
    heads = mha.num_heads
    expected = expected_output(x, padding, mha)
    state = {key: value.clone() for key, value in mha.state_dict().items()}
    returned = call_by_hand(student, WHAT, x.clone(), padding.clone(), mha)
    check_unchanged([x, padding], returned.args[:2], ["x", "padding"])
    # the layer, or its state when it came back from a worker
    after = returned.args[2].state_dict()
    changed = [
        k for k, v in after.items() if k not in state or not torch.equal(v, state[k])
    ]
    if changed:
        fail(
            "changed_input",
            f"the function changed the layer's weights ({', '.join(changed)})",
            "mha unchanged after the call",
            f"{', '.join(changed)} modified",
            "read the weights; do not assign to them or call in-place methods on them",
        )
    result, weights = _output_and_weights(returned.result)
    result = require_tensor(result, "the result", (b, length, width), "result")
    wanted = f"shape ({b}, {length}, {width}) = (B, L, D)"
    known = {(b, heads, length, width // heads): HEADS_NOT_MERGED}
    require_shape(result, (b, length, width), wanted, RESULT_SHAPE, known)
    if close(result, expected, atol=TOLERANCE, rtol=TOLERANCE):
        _check_weights(weights, x, padding, mha)
        return
    shown = Evidence(*compare_rows("output", result, expected))
    shown.diagnose(result, MISTAKES, (x, padding, mha))
    if not torch.isfinite(result).all():
        shown.fail(
            "result_not_finite",
            "the result contains NaN or inf",
            "mask only the keys, with −∞ before the softmax; every example has a real key",
        )
    locate_step(student, x, padding, mha)
    shown.fail(
        "output_differs",
        f"the output differs from mha(x, x, x, key_padding_mask=padding) by more than "
        f"{TOLERANCE:g}",
        "check each step's shape: project, split into heads, scale by √(D/H), mask, softmax, mix, merge, project",
    )


def _output_and_weights(result: object) -> tuple[object, object]:
    """(output, weights) of what the function returned; weights ``None`` when it returned no
    pair (the output alone: its own mistakes are named first, the missing weights after)."""
    if not isinstance(result, (tuple, list)):
        return result, None
    if len(result) == 2:
        return result[0], result[1]
    kind = type_name(result)
    fail(
        "result_not_a_pair",
        f"{article(kind)} of {len(result)} things came back; the exercise asks for two: the "
        "output and the weights",
        "a pair (output (B, L, D), weights (B, H, L, L))",
        f"{kind} of length {len(result)}",
        "end with `return output, weights`",
    )


def _check_weights(weights: object, x, padding, mha) -> None:
    """The weights of every head, (B, H, L, L), once the output is right."""
    b, length, _ = x.shape
    heads = mha.num_heads
    shape = (b, heads, length, length)
    wanted = f"weights of shape {shape} = (B, H, L, L), one table per head"
    if weights is None:
        fail(
            "weights_missing",
            "the output is right, but only the output came back: the exercise also asks for "
            "the attention weights of every head",
            f"a pair: the output and {wanted}",
            "one tensor (the output alone)",
            "keep the weights each head's softmax gives and return them with the output",
        )
    weights = require_tensor(weights, "the weights (the second result)", shape, "weights")
    known = {
        (b, length, length): WEIGHTS_AVERAGED,
        (b * heads, length, length): WEIGHTS_HEADS_FOLDED,
    }
    require_shape(weights, shape, wanted, WEIGHTS_SHAPE, known)
    expected = expected_weights(x, padding, mha)
    if not close(weights, expected, atol=TOLERANCE, rtol=TOLERANCE):
        Evidence(*compare_rows("weights", weights, expected)).fail(
            "returned_weights_differ",
            "the output is right, but the weights differ from each head's softmax of its "
            "scaled, masked scores",
            "return the weights the softmax gave, the ones that mixed the values",
        )


def _layer(mha: nn.MultiheadAttention, heads: int | None = None, **zero: bool):
    """A copy of ``mha`` (optionally with another number of heads, the same weights) with parts
    made trivial: ``identity_out`` (output projection = identity, no bias), ``uniform`` (query
    and key projections zero: every real key gets the same weight)."""
    width = mha.embed_dim
    layer = copy.deepcopy(_layer_of(width, heads or mha.num_heads))
    with torch.no_grad():
        layer.load_state_dict(mha.state_dict())
        if zero.get("identity_out"):
            layer.out_proj.weight.copy_(torch.eye(width))
            layer.out_proj.bias.zero_()
        if zero.get("uniform"):
            layer.in_proj_weight[: 2 * width] = 0.0
            layer.in_proj_bias[: 2 * width] = 0.0
    return layer


# Steps of the computation, each probed on an input where every later (or earlier) step is
# trivial, from the first step to the last: the first probe that fails names the step.
STEPS = [
    (
        "wrong_step_projection",
        "the input projection",
        "one token, one head and an identity output projection, so the output is the value "
        "projection x @ W_v.T + b_v",
        "q, k, v = (x @ mha.in_proj_weight.T + mha.in_proj_bias).chunk(3, dim=-1): q first, "
        "then k, then v",
    ),
    (
        "wrong_step_output_projection",
        "the output projection",
        "one token and one head, so attention is trivial and only the two projections matter",
        "finish with merged @ mha.out_proj.weight.T + mha.out_proj.bias",
    ),
    (
        "wrong_step_attention",
        "the attention of one head (scores, scale, mask, softmax, mix)",
        "a one-head copy of the layer with the same weights",
        "scores = q @ k.transpose(-2, -1) / math.sqrt(head_width); mask the padded keys with "
        "-inf; softmax over the keys; weights @ v",
    ),
    (
        "wrong_step_heads",
        "splitting into heads or merging them back",
        "query and key projections set to zero, so every head weights its real keys equally "
        "and only the bookkeeping of the heads matters",
        "(B, L, D) -> reshape (B, L, H, D/H) -> transpose(1, 2); merge with the reverse",
    ),
    (
        "wrong_step_per_head",
        "the attention inside each head (its features, its √(D/H) scale, its mask)",
        "the full layer: every step before this one passed its own probe",
        "each head attends with its own D/H features, divides by math.sqrt(D // H) and masks "
        "padding[:, None, None, :]",
    ),
]


def step_probes(x, padding, mha) -> list[tuple]:
    """The probes of ``STEPS``, in order, made from a main probe (x, padding, mha)."""
    one = x[:1, :1].clone(), torch.zeros(1, 1, dtype=torch.bool)
    return [
        (*one, _layer(mha, heads=1, identity_out=True)),
        (*one, _layer(mha, heads=1)),
        (x, padding, _layer(mha, heads=1)),
        (x, padding, _layer(mha, uniform=True)),
        (x, padding, mha),
    ]


def locate_step(student: StudentFunction, x, padding, mha) -> None:
    """Fail naming the first step whose probe goes wrong (see ``STEPS``); return if none does."""
    for (code, step, probe_text, advice), (px, ppad, layer) in zip(
        STEPS, step_probes(x, padding, mha)
    ):
        expected = expected_output(px, ppad, layer)
        result = student.call(px.clone(), ppad.clone(), layer).result
        if isinstance(result, (tuple, list)) and len(result) == 2:
            result = result[0]
        if isinstance(result, torch.Tensor) and close(
            result, expected, atol=TOLERANCE, rtol=TOLERANCE
        ):
            continue
        if not isinstance(result, torch.Tensor) or result.shape != expected.shape:
            return  # the shape checks on the main probe say more
        expected_text, received_text = compare_rows("output", result, expected)
        fail(
            code,
            f"{step} goes wrong: it is the first step whose own probe fails (on x of shape "
            f"{shape_text(px)}, {layer.num_heads} head(s): {probe_text})",
            expected_text,
            received_text,
            advice,
        )


def main_probes() -> list[tuple]:
    """The two probes every answer is compared on (public seeds 50 and 51, or fresh ones)."""
    return [
        mha_probe(seed=answers.fresh_seed(50)),
        mha_probe(
            seed=answers.fresh_seed(51),
            batch=3,
            length=6,
            width=8,
            heads=4,
            padding=[[False] * 6, [False] * 3 + [True] * 3, [False, True] * 3],
        ),
    ]


def gradient_probe() -> tuple:
    """The probe of the gradient check (public seed 52, or a fresh one)."""
    return mha_probe(seed=answers.fresh_seed(52))


@checker("Exercise 12", "multi_head_attention(x, padding, mha)", optional=True)
def check_multi_head_attention(student: StudentFunction) -> None:
    """Check ``multi_head_attention(x, padding, mha) -> (output, weights)`` against
    ``nn.MultiheadAttention``: the output (B, L, D) first, then every head's weights."""
    for probe in main_probes():
        _check_once(student, *probe)
    check_gradient(student, list(gradient_probe()), ["x"], "first", reference)
