"""Week 20, Task 6 (stretch): ``encode_with_bpe(tokenizer, texts, length) -> (N, length)``, the
ids a byte-level BPE tokenizer gives each comment, cut and padded for chapter 4's model."""

from __future__ import annotations

import functools

import torch

from transformer_lab.selfcheck.core import CheckResult, Mistake, diagnose, fail, run_check
from transformer_lab.selfcheck.execution import as_student, type_name
from transformer_lab.selfcheck.tensors import shape_text, smallest_failure

NAME, EXERCISE = "encode_with_bpe", "Task 6"
TEXTS = [
    "great fix",
    "not great at all, support was slow",
    "fast",
    "the fix was fast but the docs were not",
]


@functools.cache
def probe_tokenizer():
    """A small byte-level BPE tokenizer ([PAD] = id 0) trained on the check's own sentences."""
    from transformer_lab.tokenizer import train_byte_level_bpe_tokenizer

    return train_byte_level_bpe_tokenizer(TEXTS * 3, vocab_size=300)


def encoded(
    tokenizer, texts, length, *, side="right", keep="start", pad=None
) -> torch.Tensor:
    """The ids of each text cut to ``length`` and padded, each step switchable to a mistake."""
    pad = tokenizer.token_to_id("[PAD]") if pad is None else pad
    rows = []
    for text in texts:
        ids = tokenizer.encode(text).ids
        ids = ids[:length] if keep == "start" else ids[-length:]
        filler = [pad] * (length - len(ids))
        rows.append(ids + filler if side == "right" else filler + ids)
    return torch.tensor(rows, dtype=torch.long).reshape(len(texts), length)


MISTAKES: list[Mistake] = [
    Mistake(
        "left_padding",
        "the padding was put in front of the ids (left padding); chapter 4's model and its "
        "position table expect the ids first, then the padding",
        "ids + [pad] * (length - len(ids))",
        functools.partial(encoded, side="left"),
    ),
    Mistake(
        "kept_the_end",
        "a long comment kept its last ids instead of its first",
        "cut with ids[:length]: the model reads the beginning of each comment",
        functools.partial(encoded, keep="end"),
    ),
    Mistake(
        "padded_with_another_id",
        "the padding is not the tokenizer's [PAD] id, so the model reads it as text",
        'pad with tokenizer.token_to_id("[PAD]")',
        functools.partial(encoded, pad=1),
    ),
]

PROBES = [(TEXTS[:1], 3), (TEXTS[:1], 6), (TEXTS[:2], 6), (TEXTS, 10)]


def check_encode_with_bpe(function) -> CheckResult:
    """Task 6: the student's ids against the tokenizer's, cut and right-padded with [PAD]."""
    student = as_student(function)
    tokenizer = probe_tokenizer()

    def call(probe):
        texts, length = probe
        result = student.call(tokenizer, list(texts), length).result
        n = len(texts)
        if not isinstance(result, torch.Tensor):
            fail(
                "ids_not_a_tensor",
                f"{type_name(result)} came back, not a torch.Tensor of ids",
                f"a long tensor of shape ({n}, {length})",
                type_name(result),
                "torch.tensor(rows, dtype=torch.long)",
            )
        if tuple(result.shape) != (n, length):
            fail(
                "ids_shape",
                "the ids are not one row of `length` per comment: cut long comments, pad short ones",
                f"shape ({n}, {length})",
                f"shape {shape_text(result)}",
                "ids[:length] + [pad] * (length - len(ids[:length]))",
            )
        if result.dtype != torch.long:
            fail(
                "ids_not_long",
                f"the ids are {result.dtype}, not integers: an embedding looks up long ids",
                "dtype torch.int64",
                str(result.dtype),
                "dtype=torch.long",
            )
        return result

    def body():
        failure = smallest_failure(
            PROBES,
            call,
            lambda texts, length: encoded(tokenizer, texts, length),
            lambda a, b: torch.equal(a, b),
        )
        if failure is None:
            return
        (texts, length), ids, expected = failure
        where = (
            f" (on the smallest input that fails: {len(texts)} comment(s), length {length})"
        )
        shown = f"ids {expected.tolist()}", f"ids {ids.tolist()}"
        diagnose(ids, MISTAKES, (tokenizer, texts, length), torch.equal, *shown, where)
        fail(
            "ids_differ",
            "the ids differ from the tokenizer's, cut to `length` and padded with [PAD]"
            + where,
            *shown,
            "tokenizer.encode(text).ids for each comment, then cut and pad on the right",
        )

    return run_check(NAME, EXERCISE, body)
