"""Week 20's checks: the toy attention table (Task 2), the character model without positions
(Task 1) and, as a stretch, the sinusoidal positions and the model that adds them (Task 5).

The model tasks are functions of a ``PraiseClassifier`` (``forward_without_positions(model, ids,
padding)``), so that the worker can run them on a model the check builds, with weights the check
knows; the expected logits come from the package's own model with the same weights.
"""

from __future__ import annotations

import copy
import math
from functools import partial

import torch

from transformer_lab.selfcheck.attention import fail_library
from transformer_lab.selfcheck.core import (
    CheckResult,
    Mistake,
    diagnose,
    fail,
    run_check,
)
from transformer_lab.selfcheck.execution import as_student
from transformer_lab.selfcheck.tensors import (
    close,
    compare_rows,
    require_tensor,
    row_text,
    shape_text,
    smallest_failure,
)

TOY_NAME, TOY_EXERCISE = "toy_weights", "Task 2"
NO_POS_NAME, NO_POS_EXERCISE = "forward_without_positions", "Task 1"
TABLE_NAME, TABLE_EXERCISE = "sinusoidal_positions", "Task 5"
SINES_NAME, SINES_EXERCISE = "forward_with_sinusoids", "Task 5"
TOLERANCE = 1e-5

# --- Task 2: the toy table -------------------------------------------------------------------


def toy_probe(n_tokens: int, d_model: int, seed: int):
    """E (n, d), W_q, W_k (d, d) from the package's toy generator."""
    from transformer_lab.attention import toy_inputs

    embeddings, w_q, w_k, _ = toy_inputs(n_tokens, d_model, seed)
    return embeddings, w_q, w_k


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
):
    """softmax((E W_q)(E W_k)ᵀ / √d) over the keys, each step switchable to a typical mistake."""
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
    return (torch.log_softmax if log else torch.softmax)(q @ k.T / divisor, dim=dim)


TOY_MISTAKES: list[Mistake] = [
    Mistake(
        "softmax_over_queries",
        "the softmax ran over the queries: each column sums to 1, not each row",
        "torch.softmax(scores, dim=-1): a row is one query's shares over the keys",
        partial(toy_table, dim=0),
    ),
    Mistake(
        "queries_keys_swapped",
        "queries and keys swapped: (E W_k)(E W_q)ᵀ, so row i is read *from* token i",
        "q = embeddings @ w_q, k = embeddings @ w_k, scores = q @ k.T",
        partial(toy_table, swap=True),
    ),
    Mistake(
        "no_scaling",
        "the scores were not divided by √d",
        "divide q @ k.T by math.sqrt(embeddings.shape[1])",
        partial(toy_table, scale="none"),
    ),
    Mistake(
        "divided_by_d",
        "the scores were divided by d instead of √d",
        "divide by math.sqrt(d), not d",
        partial(toy_table, scale="d"),
    ),
    Mistake(
        "no_projections",
        "no projections: E against E, without w_q and w_k",
        "queries are embeddings @ w_q, keys embeddings @ w_k",
        partial(toy_table, project=False),
    ),
    Mistake(
        "projections_transposed",
        "the projection matrices were transposed (E @ W_q.T, E @ W_k.T): in this book a row "
        "vector times W, E @ W_q, gives the queries",
        "q = embeddings @ w_q and k = embeddings @ w_k, no .T on the matrices",
        partial(toy_table, transposed=True),
    ),
    Mistake(
        "keys_from_w_q",
        "the keys were made with w_q as well: every token's key equals its query",
        "k = embeddings @ w_k",
        partial(toy_table, key_matrix="w_q"),
    ),
    Mistake(
        "scaled_by_token_count",
        "the scores were divided by √n, the number of tokens, instead of √d, the width of a "
        "query (the toy has 3 tokens and d = 4, so the two are close but not equal)",
        "divide by math.sqrt(embeddings.shape[1]) (d), not embeddings.shape[0]",
        partial(toy_table, scale="tokens"),
    ),
    Mistake(
        "log_softmax",
        "the table holds log-probabilities (log_softmax): the weights of a row are their "
        "exponentials, and those sum to 1",
        "torch.softmax(scores, dim=-1), not torch.log_softmax",
        partial(toy_table, log=True),
    ),
]

# From the smallest table to the page's size, so a failure is shown on the smallest one.
TOY_PROBES = [(2, 2, 11), (3, 4, 5), (5, 6, 12)]


def check_toy_weights(function) -> CheckResult:
    """Check ``toy_weights(embeddings, w_q, w_k) -> (n, n)`` against the package's attention."""
    student = as_student(function)

    def body():
        if student.library_names:
            fail_library(student.library_names, "Task 2")

        def call(probe):
            returned = student.call(*[t.clone() for t in probe], watch_library=True)
            if returned.library:
                fail_library(returned.library, "Task 2")
            n = probe[0].shape[0]
            table = require_tensor(returned.result, "the table", (n, n), "table")
            if tuple(table.shape) != (n, n):
                fail(
                    "table_shape",
                    "the table has the wrong shape: one row and one column per token",
                    f"shape ({n}, {n}) for {n} tokens",
                    f"shape {shape_text(table)}",
                    "scores = q @ k.T is (tokens, tokens)",
                )
            return table

        failure = smallest_failure(
            [toy_probe(*sizes) for sizes in TOY_PROBES],
            call,
            lambda e, w_q, w_k: toy_table(e, w_q, w_k),
            lambda a, b: close(a, b, atol=TOLERANCE, rtol=TOLERANCE),
        )
        if failure is None:
            return
        probe, table, expected = failure
        where = f" (on the smallest probe that fails: {probe[0].shape[0]} tokens, d = {probe[0].shape[1]})"
        expected_text, received_text = compare_rows("weights", table, expected)
        diagnose(
            table,
            TOY_MISTAKES,
            probe,
            lambda a, b: close(a, b, atol=1e-4, rtol=1e-4),
            expected_text,
            received_text,
            where,
        )
        sums = table.double().sum(dim=-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
            fail(
                "rows_do_not_sum_to_one",
                "the rows do not sum to 1 (no softmax, or one over another axis)" + where,
                f"row sums {[1.0] * len(sums)}",
                f"row sums {[round(float(s), 3) for s in sums]}",
                "torch.softmax(scores, dim=-1)",
            )
        fail(
            "weights_differ",
            "the rows sum to 1 but the weights differ from softmax((E W_q)(E W_k)ᵀ / √d)"
            + where,
            expected_text,
            received_text,
            "check each step on the smallest probe by hand: project, score, scale, softmax",
        )

    return run_check(TOY_NAME, TOY_EXERCISE, body)


# --- Task 1 and Task 5: the character model --------------------------------------------------


def model_probe(seed: int = 0, use_positions: bool = False, table: bool = False):
    """A ``PraiseClassifier`` drawn from ``seed`` (eval mode), its learned position table replaced
    by the sinusoids when ``table``."""
    from transformer_lab.char_transformer import PraiseClassifier
    from transformer_lab.char_transformer import sinusoidal_positions as book_table

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = PraiseClassifier(use_positions=use_positions).eval()
    if table:
        with torch.no_grad():
            model.pos.weight.copy_(book_table(*model.pos.weight.shape))
    return model


def ids_probes() -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(ids, padding) pairs from the smallest (one comment, four characters) to a padded batch."""
    from transformer_lab.char_transformer import PAD_ID, encode_texts

    texts = [
        "great support, fast fix",
        "not great, support was slow",
        "slow",
        "the fix was fast but not great",
    ]
    ids = encode_texts(texts)
    small = ids[:1, :4].clone()
    pair = ids[:2, :8].clone()
    pair[1, 5:] = PAD_ID
    return [
        (small, small == PAD_ID),
        (pair, pair == PAD_ID),
        (ids, ids == PAD_ID),
    ]


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
) -> torch.Tensor:
    """PraiseClassifier's forward with each step switchable to a typical mistake.

    ``positions``: "none", "learned" (model.pos), "sines" (the book's sinusoids) or "both";
    ``pool``: "masked" (right), "plain" (.mean), "max", "sum" or "first" (token 0). Run with
    gradients on, as the student's code is: PyTorch's inference fast path treats a row whose
    keys are all masked differently."""
    from transformer_lab.char_transformer import sinusoidal_positions as book_table
    from transformer_lab.pooling import masked_mean

    x = model.embed(ids)
    length, width = ids.shape[1], x.shape[-1]
    if positions == "learned":
        x = x + model.pos(torch.arange(length))[None]
    elif positions == "sines":
        x = x + book_table(length, width)[None]
    elif positions == "both":
        x = x + book_table(length, width)[None] + model.pos(torch.arange(length))[None]
    key_mask = {"keys": padding, "none": None, "inverted": ~padding}[mask]
    future = torch.ones(length, length, dtype=torch.bool).triu(1) if causal else None
    x = model.encoder(x, mask=future, src_key_padding_mask=key_mask)
    real = (~padding)[..., None]
    pooled = {
        "masked": lambda: masked_mean(x, padding),
        "plain": lambda: x.mean(dim=1),
        "max": lambda: x.masked_fill(~real, float("-inf")).amax(dim=1),
        "sum": lambda: x.masked_fill(~real, 0.0).sum(dim=1),
        "first": lambda: x[:, 0],
    }[pool]()
    logits = model.head(pooled)
    logits = logits.squeeze(-1) if squeeze else logits
    return (torch.sigmoid(logits) if sigmoid else logits).detach()


FORWARD_MISTAKES: list[Mistake] = [
    Mistake(
        "positions_still_added",
        "the learned position embedding (model.pos) is still added",
        "leave out the line that adds model.pos(...)",
        partial(praise_forward, positions="learned"),
    ),
    Mistake(
        "padding_not_masked",
        "the encoder reads the padding: no src_key_padding_mask was passed",
        "model.encoder(x, src_key_padding_mask=padding)",
        partial(praise_forward, mask="none"),
    ),
    Mistake(
        "inverted_mask",
        "the mask is inverted: the real characters are hidden and the padding read",
        "True means padding: pass padding itself, not ~padding",
        partial(praise_forward, mask="inverted"),
    ),
    Mistake(
        "plain_mean",
        "the pooling averages the padding too (a plain .mean(dim=1))",
        "pool with masked_mean(x, padding) from transformer_lab.pooling",
        partial(praise_forward, pool="plain"),
    ),
    Mistake(
        "max_pool",
        "the pooling takes the largest value of each feature over the characters (max), "
        "not their mean",
        "masked_mean(x, padding): the average of the real characters",
        partial(praise_forward, pool="max"),
    ),
    Mistake(
        "sum_pool",
        "the pooling sums the real characters instead of averaging them, so a longer "
        "comment gets a larger vector",
        "masked_mean(x, padding): divide by the number of real characters",
        partial(praise_forward, pool="sum"),
    ),
    Mistake(
        "first_token_pooled",
        "only the first character's output is scored (x[:, 0], a [CLS] habit): this model "
        "has no [CLS] token and pools every real character",
        "masked_mean(x, padding) over all the real characters",
        partial(praise_forward, pool="first"),
    ),
    Mistake(
        "causal_mask",
        "the encoder was given a causal mask: each character reads only the ones before "
        "it, while a classifier of whole comments may read every character",
        "model.encoder(x, src_key_padding_mask=padding), no mask=... for the future",
        partial(praise_forward, causal=True),
    ),
    Mistake(
        "returns_probabilities",
        "the forward returns probabilities (a sigmoid at the end); training uses "
        "BCEWithLogitsLoss, which applies the sigmoid itself",
        "return the head's raw output, squeezed: model.head(...).squeeze(-1)",
        partial(praise_forward, sigmoid=True),
    ),
]

SINES_MISTAKES: list[Mistake] = [
    Mistake(
        "learned_table_added",
        "the learned table model.pos is added, not the sinusoids",
        "add sinusoidal_positions(L, D) (your Task 5 table), not model.pos(...)",
        partial(praise_forward, positions="learned"),
    ),
    Mistake(
        "no_positions",
        "no positions reach the model: this is Task 1's forward",
        "add sinusoidal_positions(ids.shape[1], D)[None] to model.embed(ids)",
        partial(praise_forward, positions="none"),
    ),
    Mistake(
        "learned_table_kept",
        "both tables are added: the sinusoids and the learned model.pos",
        "add sinusoidal_positions(L, D) in place of model.pos(...), not beside it",
        partial(praise_forward, positions="both"),
    ),
    # every mistake of Task 1's forward but the learned table, made with the sinusoids added
    *[
        Mistake(
            m.code,
            m.message,
            m.advice,
            partial(praise_forward, **{**m.variant.keywords, "positions": "sines"}),
        )
        for m in FORWARD_MISTAKES
        if m.code != "positions_still_added"
    ],
]


def _check_forward(student, model, positions: str, mistakes: list[Mistake]) -> None:
    def call(probe):
        ids, padding = probe
        returned = student.call(copy.deepcopy(model), ids.clone(), padding.clone())
        n = ids.shape[0]
        logits = require_tensor(returned.result, "the result", (n,), "result")
        if tuple(logits.shape) == (n, 1):
            fail(
                "not_squeezed",
                "the output is (N, 1): the head's last axis was not squeezed",
                f"shape ({n},): one logit per comment",
                f"shape {shape_text(logits)}",
                "model.head(pooled).squeeze(-1)",
            )
        if tuple(logits.shape) != (n,):
            fail(
                "result_shape",
                "the output is not one logit per comment",
                f"shape ({n},)",
                f"shape {shape_text(logits)}",
                "embed, encode, pool over the characters, score: (N, L) ids -> (N,) logits",
            )
        return logits

    failure = smallest_failure(
        ids_probes(),
        call,
        lambda ids, padding: praise_forward(model, ids, padding, positions=positions),
        lambda a, b: close(a, b, atol=TOLERANCE, rtol=1e-4),
    )
    if failure is None:
        return
    (ids, padding), logits, expected = failure
    where = (
        f" (on the smallest input that fails: ids of shape {shape_text(ids)}, "
        f"{int(padding.sum())} padding position(s))"
    )
    expected_text, received_text = (
        f"logits {row_text(expected)}",
        f"logits {row_text(logits)}",
    )
    diagnose(
        logits,
        mistakes,
        (model, ids, padding),
        lambda a, b: close(a, b, atol=1e-4, rtol=1e-4),
        expected_text,
        received_text,
        where,
    )
    fail(
        "logits_differ",
        "the logits differ from the package's model with the same weights" + where,
        expected_text,
        received_text,
        "embed, "
        + ("add the sinusoids, " if positions == "sines" else "")
        + "encode with src_key_padding_mask=padding, masked_mean, head, squeeze(-1)",
    )


def check_forward_without_positions(function) -> CheckResult:
    """Task 1: ``forward_without_positions(model, ids, padding) -> (N,)`` against the package's
    ``PraiseClassifier(use_positions=False)`` with the same weights."""
    student = as_student(function)
    return run_check(
        NO_POS_NAME,
        NO_POS_EXERCISE,
        lambda: _check_forward(student, model_probe(3), "none", FORWARD_MISTAKES),
    )


def check_forward_with_sinusoids(function) -> CheckResult:
    """Task 5: ``forward_with_sinusoids(model, ids, padding) -> (N,)`` against the package's model
    with its learned table replaced by the book's sinusoids (run after the table passes)."""
    student = as_student(function)
    return run_check(
        SINES_NAME,
        SINES_EXERCISE,
        lambda: _check_forward(student, model_probe(4), "sines", SINES_MISTAKES),
    )


# --- Task 5: the sinusoid table -------------------------------------------------------------


def sines_table(
    length, d_model, *, swap=False, blocks=False, exponent="2i", sign=-1.0, start=0
):
    """The sinusoid table with each step switchable to a typical mistake (float64)."""
    position = torch.arange(start, start + length, dtype=torch.float64)[:, None]
    even = torch.arange(0, d_model, 2, dtype=torch.float64)
    power = {"2i": even, "i": even / 2, "4i": 2 * even}[exponent]
    angle = position * 10000.0 ** (sign * power / d_model)
    first, second = (angle.cos(), angle.sin()) if swap else (angle.sin(), angle.cos())
    if blocks:
        return torch.cat([first, second], dim=1)
    return torch.stack([first, second], dim=-1).flatten(1)


TABLE_MISTAKES: list[Mistake] = [
    Mistake(
        "sines_cosines_swapped",
        "sines and cosines swapped: the sines belong in the even columns",
        "table[:, 0::2] = sin(angle); table[:, 1::2] = cos(angle)",
        partial(sines_table, swap=True),
    ),
    Mistake(
        "blocks_not_interleaved",
        "all sines first, then all cosines: the columns must alternate sin, cos, sin, cos",
        "fill table[:, 0::2] with the sines and table[:, 1::2] with the cosines",
        partial(sines_table, blocks=True),
    ),
    Mistake(
        "frequency_of_i",
        "the frequencies use i instead of 2i: 10000^(i / d_model)",
        "the exponent is the even column index over d_model: torch.arange(0, d_model, 2) / d_model",
        partial(sines_table, exponent="i"),
    ),
    Mistake(
        "frequency_of_4i",
        "the frequencies use 2 × (2i): the even column index was doubled again",
        "torch.arange(0, d_model, 2) already holds 2i",
        partial(sines_table, exponent="4i"),
    ),
    Mistake(
        "frequency_sign",
        "the angles are p × 10000^(2i/d) instead of p / 10000^(2i/d): the slow clocks run fast",
        "divide the position by 10000 ** (2i / d_model) (a negative exponent)",
        partial(sines_table, sign=1.0),
    ),
    Mistake(
        "positions_from_one",
        "the positions start at 1: row 0 belongs to position 0, where every sine is 0 and "
        "every cosine 1",
        "torch.arange(length), which starts at 0",
        partial(sines_table, start=1),
    ),
]

TABLE_PROBES = [(1, 2), (3, 2), (2, 4), (7, 6), (32, 24)]


def check_sinusoidal_positions(function) -> CheckResult:
    """Task 5: ``sinusoidal_positions(length, d_model) -> (length, d_model)`` against the book's."""
    student = as_student(function)

    def body():
        def call(probe):
            length, width = probe
            table = require_tensor(
                student.call(length, width).result, "the table", probe, "table"
            )
            if tuple(table.shape) == (width, length) and length != width:
                fail(
                    "table_transposed",
                    "the table is (d_model, length): one row per position is (length, d_model)",
                    f"shape ({length}, {width})",
                    f"shape {shape_text(table)}",
                    "positions down the rows: torch.arange(length)[:, None]",
                )
            if tuple(table.shape) != probe:
                fail(
                    "table_shape",
                    "the table has the wrong shape",
                    f"shape ({length}, {width})",
                    f"shape {shape_text(table)}",
                    "one row per position, one column per model dimension",
                )
            return table

        failure = smallest_failure(
            TABLE_PROBES,
            call,
            lambda length, width: sines_table(length, width),
            lambda a, b: close(a, b, atol=TOLERANCE, rtol=1e-4),
        )
        if failure is None:
            return
        (length, width), table, expected = failure
        where = f" (on the smallest table that fails: length {length}, d_model {width})"
        expected_text, received_text = compare_rows("table", table, expected)
        diagnose(
            table,
            TABLE_MISTAKES,
            (length, width),
            lambda a, b: close(a, b, atol=1e-4, rtol=1e-4),
            expected_text,
            received_text,
            where,
        )
        fail(
            "table_differs",
            "the table differs from sin/cos(p / 10000^(2i / d_model))" + where,
            expected_text,
            received_text,
            "row 0 must be 0, 1, 0, 1, ...; then check the frequencies column pair by column pair",
        )

    return run_check(TABLE_NAME, TABLE_EXERCISE, body)
