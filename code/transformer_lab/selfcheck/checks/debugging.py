"""Week 20, Task 4: ``repaired_forward(model, ids, padding) -> (N,)`` for the broken transformer
(``transformer_lab.broken_transformer``); a bug left in is named, alone or with the others.

The student gets the parts of a ``BrokenPraiseClassifier`` (its sequence-first encoder
included) and no forward to call. The answers come from ``answers.py``; when no known bug
explains a wrong forward, the stage probes of Tasks 1 and 5 name where it goes wrong.
"""

from __future__ import annotations

from itertools import combinations

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.positions import (
    EMBEDDING,
    HEAD,
    LAYOUT,
    MODEL_OPTIONS,
    POOLING,
    check_forward,
    forward_mistakes,
    model_probe,
    unexplained,
)
from transformer_lab.selfcheck.checks.tensors import checker
from transformer_lab.selfcheck.core import Mistake
from transformer_lab.selfcheck.execution import StudentFunction

NAME = "repaired_forward"
BUGS = ("inverted_mask", "batch_axis", "double_sigmoid")

# Each bug's name and symptom; the advice points at where to look, never at the repaired line
# (the student edition ships this file, and Task 4 asks the student to find the fixes).
BUG_TEXT = {
    "inverted_mask": (
        f"{LAYOUT}: the padding mask is still inverted (True must mean padding)",
        "print the mask the encoder and the pooling receive for a comment without padding",
    ),
    "batch_axis": (
        f"{LAYOUT}: the encoder still attends across the batch: this layer is sequence-first "
        "and reads (L, N, D), so (N, L, D) makes the comments attend to each other",
        "compare the layout model.encoder.layers[0] was built for with the one it is handed",
    ),
    "encoder_mask_inverted": (
        f"{LAYOUT}: the encoder's padding mask is still inverted, while the pooling uses "
        "the right one: the encoder reads the padding and hides the characters",
        "the encoder's src_key_padding_mask means what the pooling's mask means",
    ),
    "double_sigmoid": (
        f"{HEAD}: the forward still returns probabilities: the training loss "
        "(BCEWithLogitsLoss) applies a sigmoid itself, so the model is squashed twice",
        "follow the forward's output into the training loss: what does that loss expect?",
    ),
}


def _bugs(bugs: tuple[str, ...]) -> Mistake:
    return Mistake(
        "+".join(bugs),
        "; and ".join(BUG_TEXT[bug][0] for bug in bugs),
        "; ".join(BUG_TEXT[bug][1] for bug in bugs),
        answers.answer(NAME, "+".join(bugs)),
    )


def mistakes() -> list[Mistake]:
    """Every non-empty set of the planted bugs left in (the single bugs first), the half repair
    of the mask, then the slips of a forward written afresh (Task 1's, and positions left out)."""
    return [
        *(_bugs(bugs) for size in (1, 2, 3) for bugs in combinations(BUGS, size)),
        _bugs(("encoder_mask_inverted",)),
        Mistake(
            "positions_left_out",
            f"{EMBEDDING}: the learned positions (model.pos) are missing: the broken forward "
            "adds them, and the repair keeps every step that was right",
            "x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]",
            answers.answer(NAME, "positions_left_out"),
        ),
        *(
            m
            for m in forward_mistakes(NAME, "learned")
            if m.code not in ("inverted_mask", "batch_axis", "returns_probabilities")
        ),
    ]


@checker("Task 4", "repaired_forward(model, ids, padding)", **MODEL_OPTIONS)
def check_repaired_forward(student: StudentFunction) -> None:
    """Task 4: the repaired forward against the broken one with every bug taken out."""
    model = model_probe(answers.fresh_seed(6), broken=True)
    last = unexplained(
        "the repaired model's",
        HEAD.lower(),
        f"the positions, the encoder call, {POOLING.lower()}",
        "keep the broken forward's steps (embed, add positions, encode, pool, head) and fix "
        "only what is wrong",
    )
    check_forward(student, model, NAME, "learned", mistakes(), last)
