"""Week 20's checks: the toy attention table (Task 2), the character model without positions
(Task 1) and, as a stretch, the sinusoidal positions and the model that adds them (Task 5).

A forward is handed a :class:`~transformer_lab.selfcheck.checks.model_parts.ModelParts`
(chapter 4's parts, weights the check draws, no forward of its own), so a pass is the student's
forward. The right and the mistaken answers come from ``answers.py``. When no known mistake
explains a wrong forward, :func:`locate_stage` names the first stage whose own probe goes wrong.
"""

from __future__ import annotations

import copy
import functools
import math
import random
from collections.abc import Callable

import torch

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.attention import call_by_hand
from transformer_lab.selfcheck.checks.model_parts import ModelParts
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    checker,
    close,
    compare_rows,
    draw_parameters,
    exact_normal,
    require_shape,
    require_tensor,
    row_text,
    shape_text,
    smallest_failure,
)
from transformer_lab.selfcheck.core import Mistake, fail, first_match
from transformer_lab.selfcheck.execution import StudentFunction

TOY_NAME = "toy_weights"
NO_POS_NAME = "forward_without_positions"
TABLE_NAME = "sinusoidal_positions"
SINES_NAME = "forward_with_sinusoids"
TOLERANCE = 1e-5
# What a right Week-20 forward imports: the pooling. The model it is handed is a ModelParts (a
# worker module), so the book's models and their forwards stay tripwires in the worker.
MODEL_OPTIONS = {"book_modules": ("transformer_lab.pooling",), "library_attention": True}

# Errors of a forward that point at a cause (checked before the general hints; the `.T` hint of
# the worker comes after these, and only when a `.T` met a tensor that is not 2-D).
FORWARD_HINTS = [
    (
        "has no forward of its own|cannot import name 'broken_forward'|"
        "cannot import name 'sinusoidal_positions'",
        "the model has no forward of its own and the book's forward is not yours to call: "
        "write the steps from model.embed, model.pos, model.encoder and model.head",
    ),
    (
        r"key_padd(ing|ed)_mask.*(shape|size)|Expected .*key_padd(ing|ed)_mask",
        "the padding mask is (N, L), one row per comment, and src_key_padding_mask stays (N, L) "
        "even for a sequence-first layer: pass src_key_padding_mask=padding, no .T",
    ),
    (
        r"size of tensor a \((\d+)\) must match the size of tensor b \((?!\1\))(\d+)\)"
        r"[^\n]*dimension 1",
        "the positions have another length than the ids: make the table for this input, "
        "sinusoidal_positions(ids.shape[1], D), not for a fixed window",
    ),
    (
        "is all padding",
        "your mask calls every character of a full comment padding: is it inverted? "
        "True must mean padding (ids == PAD_ID)",
    ),
]


def _staged(check: str, stage: str) -> Callable[[str, str, str], Mistake]:
    """``mistake(code, message, advice)``: a mistake of ``check`` with ``stage`` named first."""
    return lambda code, message, advice: answers.mistake(
        check, code, f"{stage}: {message}", advice
    )


# --- Task 2: the toy table -------------------------------------------------------------------


def toy_probe(n_tokens: int, d_model: int, seed: int):
    """E (n, d), W_q, W_k (d, d): numbers spread like the toy's (N(0, 1)), drawn from the probe's
    own generator, the same on every CPU. Not the package's toy generator: a public probe is
    never the page's own table (login / failed / again), whose weights the student must compute."""
    g = torch.Generator().manual_seed(seed)
    return (
        exact_normal(g, n_tokens, d_model),
        exact_normal(g, d_model, d_model),
        exact_normal(g, d_model, d_model),
    )


_toy = functools.partial(answers.mistake, TOY_NAME)
TOY_MISTAKES: list[Mistake] = [
    _toy(
        "softmax_over_queries",
        "the softmax ran over the queries: each column sums to 1, not each row",
        "torch.softmax(scores, dim=-1): a row is one query's shares over the keys",
    ),
    _toy(
        "weights_transposed",
        "the table is transposed: row i holds what every token reads *from* token i, so the "
        "columns sum to 1 and the rows do not",
        "return the (queries, keys) table itself, without .T at the end",
    ),
    _toy(
        "queries_keys_swapped",
        "queries and keys swapped: (E W_k)(E W_q)ᵀ, so row i is read *from* token i",
        "q = embeddings @ w_q, k = embeddings @ w_k, scores = q @ k.T",
    ),
    _toy(
        "no_scaling",
        "the scores were not divided by √d",
        "divide q @ k.T by math.sqrt(embeddings.shape[1])",
    ),
    _toy(
        "divided_by_d",
        "the scores were divided by d instead of √d",
        "divide by math.sqrt(d), not d",
    ),
    _toy(
        "no_projections",
        "no projections: E against E, without w_q and w_k",
        "queries are embeddings @ w_q, keys embeddings @ w_k",
    ),
    _toy(
        "projections_transposed",
        "the projection matrices were transposed (E @ W_q.T, E @ W_k.T): in this book a row "
        "vector times W, E @ W_q, gives the queries",
        "q = embeddings @ w_q and k = embeddings @ w_k, no .T on the matrices",
    ),
    _toy(
        "keys_from_w_q",
        "the keys were made with w_q as well: every token's key equals its query",
        "k = embeddings @ w_k",
    ),
    _toy(
        "keys_not_transposed",
        "the scores are q @ k, not q @ k.T: with as many tokens as features the shapes "
        "allow it, but each score is no longer one query against one key",
        "scores = q @ k.T: (tokens, d) against (d, tokens)",
    ),
    _toy(
        "scaled_by_token_count",
        "the scores were divided by √n, the number of tokens, instead of √d, the width of a "
        "query (the toy has 3 tokens and d = 4, so the two are close but not equal)",
        "divide by math.sqrt(embeddings.shape[1]) (d), not embeddings.shape[0]",
    ),
    _toy(
        "log_softmax",
        "the table holds log-probabilities (log_softmax): the weights of a row are their "
        "exponentials, and those sum to 1",
        "torch.softmax(scores, dim=-1), not torch.log_softmax",
    ),
]


def toy_probes() -> list[tuple]:
    """From the smallest table to the page's size (public seeds, or fresh ones)."""
    return [
        toy_probe(2, 2, answers.fresh_seed(11)),
        toy_probe(3, 4, answers.fresh_seed(13)),
        toy_probe(5, 6, answers.fresh_seed(12)),
    ]


def _score_factor(table: torch.Tensor, expected: torch.Tensor) -> float | None:
    """c when ``table`` is softmax(c × the right scores) with c ≠ 1 (the scores divided by
    another number than √d), else ``None``. Read from the logarithms of the two tables."""
    if bool((table <= 0).any()) or not _finite(table):
        return None
    got, want = table.double().log(), expected.double().log()
    got, want = got - got.mean(-1, keepdim=True), want - want.mean(-1, keepdim=True)
    norm = float((want * want).sum())
    if norm < 1e-12:
        return None
    factor = float((got * want).sum()) / norm
    if factor <= 0 or abs(factor - 1) < 1e-3 or not close(got, factor * want, atol=1e-4):
        return None
    return factor


TOY_SHAPE = Mistake(
    "table_shape",
    "the table has the wrong shape: one row and one column per token",
    "scores = q @ k.T is (tokens, tokens)",
)


@checker("Task 2", "toy_weights(embeddings, w_q, w_k)")
def check_toy_weights(student: StudentFunction) -> None:
    """Check ``toy_weights(embeddings, w_q, w_k) -> (n, n)`` against the right table."""

    def call(probe):
        returned = call_by_hand(student, "Task 2", *[t.clone() for t in probe])
        n = probe[0].shape[0]
        table = require_tensor(returned.result, "the table", (n, n), "table")
        require_shape(table, (n, n), f"shape ({n}, {n}) for {n} tokens", TOY_SHAPE)
        return table

    same = functools.partial(close, atol=TOLERANCE, rtol=TOLERANCE)
    failure = smallest_failure(toy_probes(), call, answers.reference(TOY_NAME), same)
    if failure is None:
        return
    probe, table, expected = failure
    n, d = probe[0].shape
    shown = Evidence(
        *compare_rows("weights", table, expected),
        f" (on the smallest probe that fails: {n} tokens, d = {d})",
    )
    shown.diagnose(table, TOY_MISTAKES, probe)
    sums = table.double().sum(dim=-1)
    if not torch.allclose(sums, torch.ones_like(sums), atol=1e-4):
        fail(
            "rows_do_not_sum_to_one",
            "the rows do not sum to 1 (no softmax, or one over another axis)" + shown.note,
            f"row sums {[1.0] * len(sums)}",
            f"row sums {[round(float(s), 3) for s in sums]}",
            "torch.softmax(scores, dim=-1)",
        )
    factor = _score_factor(table, expected)
    if factor is not None:
        shown.fail(
            "scores_scaled_wrong",
            f"the scores were divided by {math.sqrt(d) / factor:.4g} instead of "
            f"√d = {math.sqrt(d):.4g}: the table is the right one made sharper or flatter",
            "divide q @ k.T by math.sqrt(d), d = embeddings.shape[1] (the width of a query)",
        )
    if bool((table < 0).any()):
        shown.fail(
            "negative_weights",
            "the rows sum to 1 but some weights are negative: dividing the scores by their "
            "sum is not a softmax, whose shares are all positive (exponentials first)",
            "torch.softmax(scores, dim=-1): exponentiate, then divide by the row's sum",
        )
    shown.fail(
        "weights_differ",
        "the rows sum to 1 but the weights differ from softmax((E W_q)(E W_k)ᵀ / √d)",
        "check each step on the smallest probe by hand: project, score, scale, softmax",
    )


# --- Task 1 and Task 5: the character model --------------------------------------------------


def as_parts(model) -> ModelParts:
    """The parts of a chapter-4 model (copies), under their names, without its forward."""
    names = ("embed", "pos", "encoder", "head")
    return ModelParts(*(copy.deepcopy(getattr(model, name)) for name in names)).eval()


@functools.cache
def _model_of(broken: bool):
    """A ``PraiseClassifier`` (``broken``: a ``BrokenPraiseClassifier``), built once per process:
    its own start draws from the global generator, so probes refill copies of its parts."""
    from transformer_lab.broken_transformer import BrokenPraiseClassifier
    from transformer_lab.char_transformer import PraiseClassifier

    return (BrokenPraiseClassifier if broken else PraiseClassifier)().eval()


def model_probe(seed: int = 0, *, broken: bool = False) -> ModelParts:
    """The parts of a ``PraiseClassifier`` drawn from ``seed`` (``broken``: of Task 4's
    ``BrokenPraiseClassifier``, whose encoder is sequence-first), with a head bias that is not
    near zero, so that a forgotten bias shows. The weights come from the probe's own generator
    and are the same on every CPU (:func:`~transformer_lab.selfcheck.checks.tensors.draw_parameters`)."""
    g = torch.Generator().manual_seed(seed)
    parts = draw_parameters(as_parts(_model_of(broken)), g)
    with torch.no_grad():
        parts.head.bias.fill_(0.5 + int(torch.randint(0, 1024, (), generator=g)) / 2048)
    return parts


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
    return [(small, small == PAD_ID), (pair, pair == PAD_ID), (ids, ids == PAD_ID)]


def stage_inputs() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The small inputs of :func:`locate_stage`: one character; two full comments of four
    characters; one comment of four characters followed by three padding positions."""
    from transformer_lab.char_transformer import PAD_ID

    full = ids_probes()[-1][0][:2, :4].clone()
    padded = torch.cat([full[:1], torch.full((1, 3), PAD_ID)], dim=1)
    return {
        "one": (full[:1, :1].clone(), torch.zeros(1, 1, dtype=torch.bool)),
        "pair": (full, torch.zeros_like(full, dtype=torch.bool)),
        "padded": (padded, padded == PAD_ID),
    }


HEAD_BIAS = 0.75  # the head probe's bias: every comment must score this
HEAD_CAUSES = {  # told apart by what a comment scores instead
    "wrong_stage_head": "something is done to the head's output after model.head: return it, "
    "squeezed",
    "returns_probabilities": "a sigmoid at the end: BCEWithLogitsLoss wants the logits",
    "head_bias_left_out": "the head's bias is left out",
}

EMBEDDING = "Stage 1 of 4, embedding and positions"
LAYOUT = "Stage 2 of 4, encoder layout (batch axis, mask meaning)"
POOLING = "Stage 3 of 4, pooling"
HEAD = "Stage 4 of 4, head and output"
STAGES = (EMBEDDING, LAYOUT, POOLING, HEAD)

# What each task adds to the embeddings, for the messages of stage 1.
ADDED = {
    "none": "model.embed(ids) alone: nothing added, nothing scaled",
    "learned": "model.embed(ids) + model.pos(torch.arange(L))[None]",
    "sines": "model.embed(ids) + sinusoidal_positions(L, D): your table, not model.pos",
}


def forward_mistakes(check: str, positions: str) -> list[Mistake]:
    """The known mistakes of a forward whose right answer adds ``positions`` (all but the
    position mistakes, which each task lists itself), each under its stage."""
    embedding, layout, pooling, head = (_staged(check, s) for s in STAGES)
    return [
        embedding(
            "embedding_scaled",
            "the embeddings were multiplied by √D (the original paper's habit); this "
            "model adds its embeddings unscaled",
            ADDED[positions],
        ),
        layout(
            "padding_not_masked",
            "the encoder reads the padding: no src_key_padding_mask was passed",
            "model.encoder(x, src_key_padding_mask=padding)",
        ),
        layout(
            "inverted_mask",
            "the mask is inverted: the real characters are hidden and the padding read",
            "True means padding: pass padding itself, not ~padding",
        ),
        layout(
            "batch_axis",
            "the encoder attends across the batch: it was handed the comments along "
            "its sequence axis, so each character reads the characters at the same "
            "place in the other comments",
            "a batch-first layer reads (N, L, D) as it is; a sequence-first one reads "
            "x.transpose(0, 1) and gives back (L, N, D)",
        ),
        layout(
            "encoder_skipped",
            "the encoder was skipped: the embeddings go straight to the pooling, so "
            "no character reads any other",
            "hand the embeddings to model.encoder, with the padding mask, and pool "
            "what it returns",
        ),
        layout(
            "causal_mask",
            "the encoder was given a causal mask: each character reads only the ones "
            "before it, while a classifier of whole comments may read every character",
            "model.encoder(x, src_key_padding_mask=padding), no mask=... for the future",
        ),
        pooling(
            "plain_mean",
            "the pooling averages the padding too (a plain .mean(dim=1))",
            "pool with masked_mean(x, padding) from transformer_lab.pooling",
        ),
        pooling(
            "max_pool",
            "the pooling takes the largest value of each feature over the characters "
            "(max), not their mean",
            "masked_mean(x, padding): the average of the real characters",
        ),
        pooling(
            "sum_pool",
            "the pooling sums the real characters instead of averaging them, so a "
            "longer comment gets a larger vector",
            "masked_mean(x, padding): divide by the number of real characters",
        ),
        pooling(
            "first_token_pooled",
            "only the first character's output is scored (x[:, 0], a [CLS] habit): "
            "this model has no [CLS] token and pools every real character",
            "masked_mean(x, padding) over all the real characters",
        ),
        head(
            "returns_probabilities",
            "the forward returns probabilities (a sigmoid at the end); training uses "
            "BCEWithLogitsLoss, which applies the sigmoid itself",
            "return the head's raw output, squeezed: model.head(...).squeeze(-1)",
        ),
        head(
            "head_bias_left_out",
            "the head's bias was left out (pooled @ model.head.weight...): a Linear "
            "layer adds its bias",
            "model.head(pooled).squeeze(-1), which adds model.head.bias",
        ),
    ]


def no_positions_mistakes() -> list[Mistake]:
    """Task 1's known mistakes (built when its check runs): a position table still added, then
    those of every forward."""
    own = _staged(NO_POS_NAME, EMBEDDING)
    return [
        own(
            "positions_still_added",
            "the learned position embedding (model.pos) is still added",
            "leave out the line that adds model.pos(...)",
        ),
        own(
            "position_zero_added",
            "every character gets position 0's learned vector (model.pos of index 0): "
            "setting the indices to 0 keeps a position embedding, one shared by all; "
            "Task 1 adds none",
            "leave model.pos out: x = model.embed(ids)",
        ),
        *forward_mistakes(NO_POS_NAME, "none"),
    ]


def sines_mistakes() -> list[Mistake]:
    """Task 5's known mistakes (built when its check runs): the positions added wrong, then
    those of every forward."""
    own = _staged(SINES_NAME, EMBEDDING)
    return [
        own(
            "learned_table_added",
            "the learned table model.pos is added, not the sinusoids",
            "add sinusoidal_positions(L, D) (your Task 5 table), not model.pos(...)",
        ),
        own(
            "no_positions",
            "no positions reach the model: this is Task 1's forward",
            "add sinusoidal_positions(ids.shape[1], D)[None] to model.embed(ids)",
        ),
        own(
            "learned_table_kept",
            "both tables are added: the sinusoids and the learned model.pos",
            "add sinusoidal_positions(L, D) in place of model.pos(...), not beside it",
        ),
        own(
            "same_position_everywhere",
            "every character gets the vector of position 0 (the table's first row, "
            "0, 1, 0, 1, ..., broadcast over the comment): the model sees no order, as "
            "in Task 1",
            "add the whole table, sinusoidal_positions(ids.shape[1], D), one row per position",
        ),
        own(
            "positions_scaled",
            "the sinusoids were scaled down (divided by √D) before they were added",
            "add sinusoidal_positions(L, D) as it is",
        ),
        *forward_mistakes(SINES_NAME, "sines"),
    ]


def forward_call(student, hints=FORWARD_HINTS):
    """``call(model, ids, padding) -> logits (N,)``: the student's forward on copies, with the
    shape checks every forward check shares."""

    def call(model, ids, padding):
        returned = student.call(
            copy.deepcopy(model), ids.clone(), padding.clone(), hints=hints
        )
        n = ids.shape[0]
        logits = require_tensor(returned.result, "the result", (n,), "result")
        wanted = f"shape ({n},): one logit per comment"
        require_shape(logits, (n,), wanted, LOGITS_SHAPE, {(n, 1): NOT_SQUEEZED})
        return logits

    return call


LOGITS_SHAPE = Mistake(
    "result_shape",
    "the output is not one logit per comment",
    "embed, encode, pool over the characters, score: (N, L) ids -> (N,) logits",
)
NOT_SQUEEZED = Mistake(
    "not_squeezed",
    "the output is (N, 1): the head's last axis was not squeezed",
    "model.head(pooled).squeeze(-1)",
)


def logit_text(tensor: torch.Tensor) -> str:
    """Logits to 6 decimals: two logits that differ must not look equal in the report."""
    return row_text(tensor, digits=6)


def fail_if_random(call, model, ids, padding, logits: torch.Tensor) -> None:
    """Fail when a second call on the same input gives other logits than ``logits``: something
    random runs in the forward (dropout, most often), and no stage can be blamed for numbers
    that change from call to call."""
    again = call(model, ids, padding)
    if torch.equal(again.isnan(), logits.isnan()) and close(again, logits, atol=0, rtol=0):
        return
    fail(
        "random_forward",
        "the forward gives other logits each time it is called on the same input: something "
        "random runs in it, most often dropout: F.dropout (torch.nn.functional.dropout) drops "
        "values unless it is given training=False, while the model's own dropout layers "
        "follow model.eval()",
        f"the same logits twice: {logit_text(logits)}",
        f"logits {logit_text(logits)}, then {logit_text(again)}",
        "leave dropout out of the forward: the model's layers already hold their own",
    )


def _finite(tensor: torch.Tensor) -> bool:
    return bool(torch.isfinite(tensor).all())


def locate_stage(call, model, check: str, positions: str) -> None:
    """Fail naming the first stage whose own small probe goes wrong; return if none does.

    Each probe makes the other stages trivial or irrelevant: a head with zero weights (every
    comment scores its bias, whatever comes before); two comments scored alone and together
    (no reference needed: a comment's score must not depend on its neighbours); one character
    (attention over one key, nothing to mask, nothing to pool); one comment with padding
    appended (its score must not move)."""
    inputs = stage_inputs()
    reference = answers.reference(check)

    # head and output
    ids, padding = inputs["pair"]
    flat = copy.deepcopy(model)
    with torch.no_grad():
        flat.head.weight.zero_()
        flat.head.bias.fill_(HEAD_BIAS)
    got = call(flat, ids[:1], padding[:1])
    if _finite(got) and not close(got, torch.tensor([HEAD_BIAS]), atol=1e-5):
        value = float(got[0].detach())
        code = "wrong_stage_head"
        if abs(value - 1 / (1 + math.exp(-HEAD_BIAS))) < 1e-4:
            code = "returns_probabilities"
        elif abs(value) < 1e-6:
            code = "head_bias_left_out"
        fail(
            code,
            f"{HEAD} goes wrong: with the head's weights set to zero and its bias to "
            f"{HEAD_BIAS}, every comment must score {HEAD_BIAS}, whatever the stages before "
            f"it do; likely cause: {HEAD_CAUSES[code]}",
            f"logits [{HEAD_BIAS:.4f}]",
            f"logits {logit_text(got)}",
            "return model.head(pooled).squeeze(-1): no sigmoid, the bias included",
        )

    # encoder layout: the batch axis
    alone = torch.cat([call(model, ids[i : i + 1], padding[i : i + 1]) for i in range(2)])
    together = call(model, ids, padding)
    if _finite(alone) and _finite(together) and not close(together, alone, atol=1e-5):
        fail(
            "batch_axis",
            f"{LAYOUT} goes wrong: a comment's score depends on the comment beside it (two "
            "full comments of four characters, scored alone and together): the encoder "
            "attends across the batch, reading the comments along its sequence axis",
            f"logits together {logit_text(alone)} (the same as alone)",
            f"logits together {logit_text(together)}, alone {logit_text(alone)}",
            "a batch-first layer reads (N, L, D) as it is; a sequence-first one (check "
            "model.encoder.layers[0].self_attn.batch_first) reads (L, N, D): transpose(0, 1) "
            "before it and after it",
        )

    # embedding and positions
    ids, padding = inputs["one"]
    got, wanted = call(model, ids, padding), reference(model, ids, padding)
    if _finite(got) and not close(got, wanted, atol=TOLERANCE, rtol=1e-4):
        fail(
            "wrong_stage_embedding",
            f"{EMBEDDING} goes wrong: on one comment of one character, where attention, "
            "masking and pooling have nothing to do, the logit differs, so the vectors that "
            "enter the encoder are not the model's",
            f"logits {logit_text(wanted)}",
            f"logits {logit_text(got)}",
            ADDED[positions],
        )

    # encoder layout (mask meaning) and pooling: padding must change nothing
    ids, padding = inputs["padded"]
    without = call(model, ids[:, :4], padding[:, :4])
    with_padding = call(model, ids, padding)
    if not close(with_padding, without, atol=1e-5):
        hidden = "" if _finite(with_padding) else " (NaN: every key was hidden)"
        fail(
            "padding_changes_the_score",
            f"{LAYOUT} or {POOLING.lower()} goes wrong: three padding positions appended to a "
            f"comment changed its score{hidden}; padding must be hidden from attention and "
            "left out of the mean",
            f"logits {logit_text(without)} (as without the padding)",
            f"logits {logit_text(with_padding)}",
            "model.encoder(x, src_key_padding_mask=padding) with True = padding, then "
            "masked_mean(x, padding)",
        )


def unexplained(model: str, stages: str, look_at: str, advice: str) -> Mistake:
    """The last word on a forward that no known mistake and no stage explains ({where}: the
    smallest input that fails)."""
    return Mistake(
        "logits_differ",
        f"the logits differ from {model}{{where}}; the stages that can be checked alone pass "
        f"({stages}, the batch axis, one character, padding), so look at what acts on several "
        f"real characters: {look_at}",
        advice,
    )


def check_forward(
    student, model, check: str, positions: str, mistakes, last: Mistake
) -> None:
    """The forward against ``check``'s on ``model``: a known mistake of ``mistakes`` is named,
    else the first stage that goes wrong (:func:`locate_stage`), else ``last``."""
    call = forward_call(student)
    reference = answers.reference(check)
    failure = smallest_failure(
        ids_probes(),
        lambda probe: call(model, *probe),
        lambda ids, padding: reference(model, ids, padding),
        functools.partial(close, atol=TOLERANCE),
    )
    if failure is None:
        return
    (ids, padding), logits, expected = failure
    fail_if_random(call, model, ids, padding, logits)
    where = (
        f" (on the smallest input that fails: ids of shape {shape_text(ids)}, "
        f"{int(padding.sum())} padding position(s))"
    )
    shown = Evidence(
        f"logits {logit_text(expected)}", f"logits {logit_text(logits)}", where
    )
    shown.diagnose(logits, mistakes, (model, ids, padding))
    locate_stage(call, model, check, positions)
    shown = Evidence(shown.expected, shown.received)  # the note sits inside the message
    shown.fail(last.code, last.message.format(where=where), last.advice)


def _learned_or_sines(sines: str) -> Mistake:
    return unexplained(
        "the model's with the same weights",
        "the head",
        "the positions beyond the first, the encoder call, the mean over the real characters",
        f"embed, {sines}encode with src_key_padding_mask=padding, masked_mean, head, squeeze(-1)",
    )


@checker("Task 1", "forward_without_positions(model, ids, padding)", **MODEL_OPTIONS)
def check_forward_without_positions(student: StudentFunction) -> None:
    """Task 1: ``forward_without_positions(model, ids, padding) -> (N,)`` against chapter 4's
    model without positions, on the parts of a model drawn afresh (public seed 3)."""
    model = model_probe(answers.fresh_seed(3))
    check_forward(
        student, model, NO_POS_NAME, "none", no_positions_mistakes(), _learned_or_sines("")
    )


@checker(
    "Task 5",
    "forward_with_sinusoids(model, ids, padding)",
    optional=True,
    requires=TABLE_NAME,
    **MODEL_OPTIONS,
)
def check_forward_with_sinusoids(student: StudentFunction) -> None:
    """Task 5: ``forward_with_sinusoids(model, ids, padding) -> (N,)`` against chapter 4's
    model with the sinusoids in place of its learned table (run after the table passes)."""
    model = model_probe(answers.fresh_seed(4))
    last = _learned_or_sines("add your sinusoids, ")
    check_forward(student, model, SINES_NAME, "sines", sines_mistakes(), last)


# --- Task 5: the sinusoid table -------------------------------------------------------------


_table = functools.partial(answers.mistake, TABLE_NAME)
TABLE_MISTAKES: list[Mistake] = [
    _table(
        "sines_cosines_swapped",
        "sines and cosines swapped: the sines belong in the even columns",
        "table[:, 0::2] = sin(angle); table[:, 1::2] = cos(angle)",
    ),
    _table(
        "blocks_not_interleaved",
        "all sines first, then all cosines: the columns must alternate sin, cos, sin, cos",
        "fill table[:, 0::2] with the sines and table[:, 1::2] with the cosines",
    ),
    _table(
        "same_position_everywhere",
        "every row is position 0's (0, 1, 0, 1, ...): the positions were not counted "
        "0, 1, 2, ... down the rows",
        "position = torch.arange(length)[:, None]",
    ),
    _table(
        "frequency_of_i",
        "the frequencies use i instead of 2i: 10000^(i / d_model)",
        "the exponent is the even column index over d_model: torch.arange(0, d_model, 2) / d_model",
    ),
    _table(
        "frequency_of_4i",
        "the frequencies use 2 × (2i): the even column index was doubled again",
        "torch.arange(0, d_model, 2) already holds 2i",
    ),
    _table(
        "frequency_over_length",
        "the exponent was divided by the length (the number of positions) instead of d_model: "
        "the speeds must depend on the column only, not on how long the comment is",
        "10000 ** (-torch.arange(0, d_model, 2) / d_model)",
    ),
    _table(
        "frequency_sign",
        "the angles are p × 10000^(2i/d) instead of p / 10000^(2i/d): the slow clocks run fast",
        "divide the position by 10000 ** (2i / d_model) (a negative exponent)",
    ),
    _table(
        "frequency_in_degrees",
        "the angles were converted from degrees to radians: torch.sin already takes radians, "
        "and p / 10000^(2i/d) is the angle itself",
        "torch.sin(angle) with the angle as it is, no deg2rad or π / 180",
    ),
    _table(
        "positions_from_one",
        "the positions start at 1: row 0 belongs to position 0, where every sine is 0 and "
        "every cosine 1",
        "torch.arange(length), which starts at 0",
    ),
]

TABLE_PROBES = [(1, 2), (3, 2), (2, 4), (7, 6), (32, 24)]


def table_probes() -> list[tuple[int, int]]:
    """The public sizes, or, in the hidden checks, the three small ones and two drawn afresh."""
    if answers.mode() != answers.HIDDEN:
        return list(TABLE_PROBES)
    draw = random.Random(answers.fresh_seed(0))
    return [
        *TABLE_PROBES[:3],
        (draw.randint(5, 11), 2 * draw.randint(3, 6)),
        (draw.randint(20, 40), 2 * draw.randint(8, 16)),
    ]


def _distance(mistake: Mistake, probes, tables) -> float:
    """The mean gap between the student's tables and the mistake's, summed over every size."""
    try:
        wrong = [mistake.variant(*probe) for probe in probes]
    except (ArithmeticError, LookupError, RuntimeError, TypeError, ValueError):
        return math.inf
    return sum(float((t.double() - w.double()).abs().mean()) for t, w in zip(tables, wrong))


TABLE_SHAPE = Mistake(
    "table_shape",
    "the table has the wrong shape",
    "one row per position, one column per model dimension",
)
TABLE_TRANSPOSED = Mistake(
    "table_transposed",
    "the table is (d_model, length): one row per position is (length, d_model)",
    "positions down the rows: torch.arange(length)[:, None]",
)


@checker("Task 5", "sinusoidal_positions(length, d_model)", optional=True)
def check_sinusoidal_positions(student: StudentFunction) -> None:
    """Task 5: ``sinusoidal_positions(length, d_model) -> (length, d_model)`` against the right
    table; a mistake is named only when it explains the table on every size checked."""

    def call(probe):
        length, width = probe
        table = require_tensor(
            student.call(length, width).result, "the table", probe, "table"
        )
        wanted = f"shape ({length}, {width})"
        require_shape(
            table, probe, wanted, TABLE_SHAPE, {(width, length): TABLE_TRANSPOSED}
        )
        return table

    probes = table_probes()
    same = functools.partial(close, atol=TOLERANCE)
    failure = smallest_failure(probes, call, answers.reference(TABLE_NAME), same)
    if failure is None:
        return
    (length, width), table, expected = failure
    shown = Evidence(
        *compare_rows("table", table, expected),
        f" (on the smallest table that fails: length {length}, d_model {width})",
    )
    # Two mistakes can agree on one size (length 2 = d_model / 2 hides an exponent over
    # the length): of those that explain the smallest failing table, the one closest to
    # the student's tables on every size is named.
    candidates = [m for m in TABLE_MISTAKES if first_match(table, [m], failure[0], close)]
    if candidates:
        tables = [call(probe) for probe in probes]
        shown.fail_with(min(candidates, key=lambda m: _distance(m, probes, tables)))
    shown.fail(
        "table_differs",
        "the table differs from sin/cos(p / 10000^(2i / d_model))",
        "row 0 must be 0, 1, 0, 1, ...; then check the frequencies column pair by column pair",
    )
