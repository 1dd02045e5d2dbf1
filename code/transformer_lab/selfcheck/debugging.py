"""Week 20, Task 4: ``repaired_forward(model, ids, padding) -> (N,)`` for the broken transformer
(``transformer_lab.broken_transformer``); a bug left in is named, alone or with the others."""

from __future__ import annotations

import copy
from itertools import combinations

from transformer_lab.selfcheck.core import CheckResult, Mistake, diagnose, fail, run_check
from transformer_lab.selfcheck.execution import as_student
from transformer_lab.selfcheck.tensors import (
    close,
    require_tensor,
    row_text,
    shape_text,
    smallest_failure,
)

NAME, EXERCISE = "repaired_forward", "Task 4"
TOLERANCE = 1e-5

BUG_TEXT = {
    "inverted_mask": (
        "the padding mask is still inverted (True must mean padding: ids == PAD_ID)",
        "use the padding you are given, or ids == PAD_ID",
    ),
    "batch_axis": (
        "the encoder still attends across the batch: this layer is batch_first=False and reads "
        "(L, N, D), so (N, L, D) makes the comments attend to each other",
        "x.transpose(0, 1) before the encoder and back after it; the mask stays (N, L)",
    ),
    "encoder_mask_inverted": (
        "the encoder's padding mask is still inverted (~padding), while the pooling uses the "
        "right one: the encoder reads the padding and hides the characters",
        "src_key_padding_mask=padding: True must mean padding there too",
    ),
    "double_sigmoid": (
        "the forward still returns probabilities: the training loss (BCEWithLogitsLoss) "
        "applies a sigmoid itself, so the model is squashed twice",
        "return the head's output without torch.sigmoid",
    ),
}


# A bug that raises: the inverted mask makes every full comment "all padding" for masked_mean.
HINTS = [
    (
        "is all padding",
        "your mask calls every character of a full comment padding: is it inverted? "
        "True must mean padding (ids == PAD_ID)",
    )
]


def _mistake(bugs: tuple[str, ...]) -> Mistake:
    from transformer_lab.broken_transformer import broken_forward

    return Mistake(
        "+".join(bugs),
        "; and ".join(BUG_TEXT[bug][0] for bug in bugs),
        "; ".join(BUG_TEXT[bug][1] for bug in bugs),
        lambda model, ids, padding: broken_forward(model, ids, padding, bugs).detach(),
    )


def mistakes() -> list[Mistake]:
    """Every non-empty set of bugs left in, the single bugs first."""
    from transformer_lab.broken_transformer import BUGS

    return [
        *(_mistake(bugs) for size in (1, 2, 3) for bugs in combinations(BUGS, size)),
        _mistake(("encoder_mask_inverted",)),
    ]


def broken_probe(seed: int = 6):
    """A seeded ``BrokenPraiseClassifier`` in eval mode."""
    import torch

    from transformer_lab.broken_transformer import BrokenPraiseClassifier

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BrokenPraiseClassifier().eval()


def check_repaired_forward(function) -> CheckResult:
    """Task 4: the repaired forward against the broken one with every bug taken out."""
    from transformer_lab.broken_transformer import broken_forward
    from transformer_lab.selfcheck.positions import ids_probes

    student = as_student(function)
    model = broken_probe()

    def call(probe):
        ids, padding = probe
        returned = student.call(
            copy.deepcopy(model), ids.clone(), padding.clone(), hints=HINTS
        )
        n = ids.shape[0]
        logits = require_tensor(returned.result, "the result", (n,), "result")
        if tuple(logits.shape) != (n,):
            fail(
                "result_shape",
                "the output is not one logit per comment",
                f"shape ({n},)",
                f"shape {shape_text(logits)}",
                "ids (N, L) -> logits (N,): squeeze the head's last axis",
            )
        return logits

    def body():
        failure = smallest_failure(
            ids_probes(),
            call,
            lambda ids, padding: broken_forward(model, ids, padding, ()).detach(),
            lambda a, b: close(a, b, atol=TOLERANCE, rtol=1e-4),
        )
        if failure is None:
            return
        (ids, padding), logits, expected = failure
        where = f" (on the smallest input that fails: ids of shape {shape_text(ids)})"
        shown = f"logits {row_text(expected)}", f"logits {row_text(logits)}"
        diagnose(
            logits,
            mistakes(),
            (model, ids, padding),
            lambda a, b: close(a, b, atol=1e-4, rtol=1e-4),
            *shown,
            where,
        )
        fail(
            "logits_differ",
            "the logits differ from the repaired model's" + where,
            *shown,
            "keep the broken forward's steps (embed, add positions, encode, pool, head) and fix "
            "only what is wrong",
        )

    return run_check(NAME, EXERCISE, body)
