"""Week 20's answers, as code: each task's right answer and the wrong answer of each known
mistake, by the keys the task's check asks :mod:`transformer_lab.selfcheck.checks.answers` for.

The student package ships none of this: the public self-check reads these outputs, stored for its
public inputs; the hidden checks call these functions on inputs drawn afresh. Each function takes
the check's inputs and switches, one per mistake; with no switch it is the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import torch

# --------------------------------------------------------------------------- Task 2: toy_weights


def toy_table(
    embeddings,
    w_q,
    w_k,
    *,
    scale="sqrt",
    dim=-1,
    swap=False,
    project=True,
    transposed=False,
    key_matrix="w_k",
    log=False,
    keys_transposed=True,
    table_transposed=False,
):
    """softmax((E W_q)(E W_k)ᵀ / √d) over the keys (float64), each step switchable."""
    e = embeddings.double()
    w_q, w_k = w_q.double(), (w_q if key_matrix == "w_q" else w_k).double()
    if transposed:
        w_q, w_k = w_q.T, w_k.T
    q, k = (e @ w_q, e @ w_k) if project else (e, e)
    if swap:
        q, k = k, q
    width = e.shape[1]
    divisor = {
        "sqrt": math.sqrt(width),
        "none": 1.0,
        "d": float(width),
        "tokens": math.sqrt(e.shape[0]),
    }[scale]
    scores = (q @ k.T if keys_transposed else q @ k) / divisor
    table = (torch.log_softmax if log else torch.softmax)(scores, dim=dim)
    return table.T if table_transposed else table


TOY: dict[str, Callable[..., object]] = {
    "reference": toy_table,
    "softmax_over_queries": partial(toy_table, dim=0),
    "queries_keys_swapped": partial(toy_table, swap=True),
    "no_scaling": partial(toy_table, scale="none"),
    "divided_by_d": partial(toy_table, scale="d"),
    "no_projections": partial(toy_table, project=False),
    "projections_transposed": partial(toy_table, transposed=True),
    "keys_from_w_q": partial(toy_table, key_matrix="w_q"),
    "scaled_by_token_count": partial(toy_table, scale="tokens"),
    "log_softmax": partial(toy_table, log=True),
    "weights_transposed": partial(toy_table, table_transposed=True),
    "keys_not_transposed": partial(toy_table, keys_transposed=False),
}

# --------------------------------------------------------------------------- Task 5: the table


def sines_table(
    length,
    d_model,
    *,
    swap=False,
    blocks=False,
    exponent="2i",
    sign=-1.0,
    start=0,
    over="d_model",
    every_row_zero=False,
    degrees=False,
):
    """The sinusoid table (float64), each step switchable to a typical mistake."""
    position = torch.arange(start, start + length, dtype=torch.float64)[:, None]
    if every_row_zero:
        position = torch.zeros_like(position)
    even = torch.arange(0, d_model, 2, dtype=torch.float64)
    power = {"2i": even, "i": even / 2, "4i": 2 * even}[exponent]
    angle = position * 10000.0 ** (
        sign * power / (d_model if over == "d_model" else length)
    )
    if degrees:
        angle = torch.deg2rad(angle)
    first, second = (angle.cos(), angle.sin()) if swap else (angle.sin(), angle.cos())
    if blocks:
        return torch.cat([first, second], dim=1)
    return torch.stack([first, second], dim=-1).flatten(1)


TABLE: dict[str, Callable[..., object]] = {
    "reference": sines_table,
    "sines_cosines_swapped": partial(sines_table, swap=True),
    "blocks_not_interleaved": partial(sines_table, blocks=True),
    "frequency_of_i": partial(sines_table, exponent="i"),
    "frequency_of_4i": partial(sines_table, exponent="4i"),
    "frequency_over_length": partial(sines_table, over="length"),
    "frequency_sign": partial(sines_table, sign=1.0),
    "positions_from_one": partial(sines_table, start=1),
    "same_position_everywhere": partial(sines_table, every_row_zero=True),
    "frequency_in_degrees": partial(sines_table, degrees=True),
}

# --------------------------------------------------------------------------- Tasks 1, 4 and 5


def praise_forward(
    model,
    ids,
    padding,
    *,
    positions: str = "none",
    mask: str = "keys",
    pool: str = "masked",
    squeeze: bool = True,
    sigmoid: bool = False,
    causal: bool = False,
    embed_scale: bool = False,
    positions_scaled: bool = False,
    head_bias: bool = True,
    batch_axis: bool = False,
    encoder: bool = True,
) -> torch.Tensor:
    """The character model's forward from its parts, each step switchable to a typical mistake.

    ``positions``: "none", "learned" (model.pos), "sines", "both", or "sines_row_zero" (row 0 of
    the sinusoids at every position); ``mask``: "keys" (right), "none" or "inverted"; ``pool``:
    "masked" (right), "plain", "max", "sum" or "first"; ``encoder=False`` skips the encoder
    (the embeddings are pooled as they are). A sequence-first encoder (Task 4's) is
    read through a transpose, unless ``batch_axis`` leaves it out (with the mask transposed, as
    the broken model does; a batch-first encoder is then handed (L, N, D) and no mask). Run with
    gradients on, as the student's code is: PyTorch's inference fast path treats a row whose
    keys are all masked differently."""
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids)
    if embed_scale:
        x = x * math.sqrt(x.shape[-1])
    length, width = ids.shape[1], x.shape[-1]
    sines = sines_table(length, width).float()
    if positions_scaled:
        sines = sines / math.sqrt(width)
    added = {
        "none": 0.0,
        "learned": model.pos(torch.arange(length))[None],
        "sines": sines[None],
        "both": sines[None] + model.pos(torch.arange(length))[None],
        "sines_row_zero": sines[:1][None].expand(1, length, width),
        "learned_row_zero": model.pos(torch.zeros_like(ids)),
    }[positions]
    x = x + added
    key_mask = {"keys": padding, "none": None, "inverted": ~padding}[mask]
    future = torch.ones(length, length, dtype=torch.bool).triu(1) if causal else None
    first = model.encoder.layers[0].self_attn.batch_first
    if not encoder:  # the embeddings are pooled as they are
        pass
    elif batch_axis and first:
        x = model.encoder(x.transpose(0, 1), mask=None).transpose(0, 1)
    elif batch_axis:
        x = model.encoder(x, src_key_padding_mask=None if key_mask is None else key_mask.T)
    elif first:
        x = model.encoder(x, mask=future, src_key_padding_mask=key_mask)
    else:
        x = model.encoder(
            x.transpose(0, 1), mask=future, src_key_padding_mask=key_mask
        ).transpose(0, 1)
    real = (~padding)[..., None]
    pool_mask = ~padding if mask == "inverted" and not first else padding
    pooled = {
        "masked": lambda: masked_mean(x, pool_mask),
        "plain": lambda: x.mean(dim=1),
        "max": lambda: x.masked_fill(~real, float("-inf")).amax(dim=1),
        "sum": lambda: x.masked_fill(~real, 0.0).sum(dim=1),
        "first": lambda: x[:, 0],
    }[pool]()
    logits = model.head(pooled) if head_bias else pooled @ model.head.weight.T
    logits = logits.squeeze(-1) if squeeze else logits
    return (torch.sigmoid(logits) if sigmoid else logits).detach()


def _forward_mistakes(positions: str) -> dict[str, Callable[..., object]]:
    """The mistakes of a forward whose right answer adds ``positions``."""
    base = partial(praise_forward, positions=positions)
    return {
        "padding_not_masked": partial(base, mask="none"),
        "inverted_mask": partial(base, mask="inverted"),
        "plain_mean": partial(base, pool="plain"),
        "max_pool": partial(base, pool="max"),
        "sum_pool": partial(base, pool="sum"),
        "first_token_pooled": partial(base, pool="first"),
        "causal_mask": partial(base, causal=True),
        "returns_probabilities": partial(base, sigmoid=True),
        "embedding_scaled": partial(base, embed_scale=True),
        "head_bias_left_out": partial(base, head_bias=False),
        "batch_axis": partial(base, batch_axis=True),
        "encoder_skipped": partial(base, encoder=False),
    }


NO_POSITIONS: dict[str, Callable[..., object]] = {
    "reference": praise_forward,
    "positions_still_added": partial(praise_forward, positions="learned"),
    "position_zero_added": partial(praise_forward, positions="learned_row_zero"),
    **_forward_mistakes("none"),
}

SINES: dict[str, Callable[..., object]] = {
    "reference": partial(praise_forward, positions="sines"),
    "learned_table_added": partial(praise_forward, positions="learned"),
    "no_positions": praise_forward,
    "learned_table_kept": partial(praise_forward, positions="both"),
    "same_position_everywhere": partial(praise_forward, positions="sines_row_zero"),
    "positions_scaled": partial(praise_forward, positions="sines", positions_scaled=True),
    **_forward_mistakes("sines"),
}

# Task 4: the broken model's bugs (its sequence-first layer read as batch-first, the mask
# inverted, a sigmoid at the end), alone and together, and the half repairs students write.
_BUG_SWITCHES = {
    "inverted_mask": {"mask": "inverted"},
    "batch_axis": {"batch_axis": True},
    "double_sigmoid": {"sigmoid": True},
}


def _bugs(*names: str) -> Callable[..., object]:
    switches: dict = {"positions": "learned"}
    for name in names:
        switches.update(_BUG_SWITCHES[name])
    return partial(praise_forward, **switches)


def _encoder_mask_inverted(model, ids, padding):
    """The encoder's mask still inverted, the pooling's right."""
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]
    x = model.encoder(x.transpose(0, 1), src_key_padding_mask=~padding).transpose(0, 1)
    return model.head(masked_mean(x, padding)).squeeze(-1).detach()


REPAIRED: dict[str, Callable[..., object]] = {
    "reference": _bugs(),
    **{
        "+".join(names): _bugs(*names)
        for names in (
            ("inverted_mask",),
            ("batch_axis",),
            ("double_sigmoid",),
            ("inverted_mask", "batch_axis"),
            ("inverted_mask", "double_sigmoid"),
            ("batch_axis", "double_sigmoid"),
            ("inverted_mask", "batch_axis", "double_sigmoid"),
        )
    },
    "encoder_mask_inverted": _encoder_mask_inverted,
    "positions_left_out": praise_forward,
    **{
        code: partial(variant, positions="learned")
        for code, variant in _forward_mistakes("learned").items()
        if code
        not in (
            "inverted_mask",
            "batch_axis",
            "returns_probabilities",
            "padding_not_masked",
        )
    },
    "padding_not_masked": partial(praise_forward, positions="learned", mask="none"),
}

# --------------------------------------------------------------------------- Task 6


def encoded(texts, length, *, side="right", keep="start", pad=None, cut="ids", short=0):
    """The ids of each text (the check's probe tokenizer) cut to ``length`` and padded, each step
    switchable to a mistake."""
    from transformer_lab.selfcheck.checks.token_ids import probe_tokenizer

    tokenizer = probe_tokenizer()
    pad = tokenizer.token_to_id("[PAD]") if pad is None else pad
    rows = []
    for text in texts:
        ids = tokenizer.encode(text[:length] if cut == "characters" else text).ids
        keep_n = length - short
        ids = ids[:keep_n] if keep == "start" else ids[-keep_n:]
        filler = [pad] * (length - len(ids))
        rows.append(ids + filler if side == "right" else filler + ids)
    return torch.tensor(rows, dtype=torch.long).reshape(len(texts), length)


BPE: dict[str, Callable[..., object]] = {
    "reference": encoded,
    "left_padding": partial(encoded, side="left"),
    "kept_the_end": partial(encoded, keep="end"),
    "pad_id_hard_coded": partial(encoded, pad=0),
    "padded_with_another_id": partial(encoded, pad=1),
    "cut_characters_not_ids": partial(encoded, cut="characters"),
    "cut_one_short": partial(encoded, short=1),
}

ANSWERS: dict[str, dict[str, Callable[..., object]]] = {
    "toy_weights": TOY,
    "sinusoidal_positions": TABLE,
    "forward_without_positions": NO_POSITIONS,
    "forward_with_sinusoids": SINES,
    "repaired_forward": REPAIRED,
    "encode_with_bpe": BPE,
}
