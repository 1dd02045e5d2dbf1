"""Week 20, Task 6 (stretch): ``encode_with_bpe(tokenizer, texts, length) -> (N, length)``, the
ids a byte-level BPE tokenizer gives each comment, cut and padded for chapter 4's model.

The right and the mistaken ids come from ``answers.py`` (keyed by the comments and the length:
the tokenizer is always :func:`probe_tokenizer`, whose [PAD] is not id 0)."""

from __future__ import annotations

import functools
import json
import random

import torch

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import (
    Evidence,
    checker,
    require_shape,
    smallest_failure,
)
from transformer_lab.selfcheck.core import Mistake, fail
from transformer_lab.selfcheck.execution import StudentFunction, type_name

NAME = "encode_with_bpe"
TEXTS = [
    "great fix",
    "not great at all, support was slow",
    "fast",
    "the fix was fast but the docs were not",
]


@functools.cache
def probe_tokenizer():
    """A small byte-level BPE tokenizer trained on the check's own sentences, with its [PAD] moved
    from id 0 (where chapter 5's tokenizer keeps it) to the last id, so that a hard-coded 0 shows;
    every other token moves down by one."""
    from tokenizers import Tokenizer

    from transformer_lab.tokenizer import train_byte_level_bpe_tokenizer

    trained = train_byte_level_bpe_tokenizer(TEXTS * 3, vocab_size=300)
    data = json.loads(trained.to_str())
    vocab = data["model"]["vocab"]
    pad, last = vocab["[PAD]"], len(vocab) - 1
    data["model"]["vocab"] = {
        token: last if token == "[PAD]" else index - (index > pad)
        for token, index in vocab.items()
    }
    for added in data["added_tokens"]:
        if added["content"] == "[PAD]":
            added["id"] = last
    return Tokenizer.from_str(json.dumps(data))


_bpe = functools.partial(answers.mistake, NAME)
MISTAKES: list[Mistake] = [
    _bpe(
        "left_padding",
        "the padding was put in front of the ids (left padding); chapter 4's model and its "
        "position table expect the ids first, then the padding",
        "the ids first, then the padding up to `length`",
    ),
    _bpe(
        "kept_the_end",
        "a long comment kept its last ids instead of its first",
        "keep the first `length` ids: the model reads the beginning of each comment",
    ),
    _bpe(
        "pad_id_hard_coded",
        "the padding is a hard-coded id 0, where chapter 5's tokenizer happens to keep [PAD]; "
        "this tokenizer keeps it elsewhere, so the model would read the padding as text",
        "ask the tokenizer for its [PAD] id instead of writing a number",
    ),
    _bpe(
        "padded_with_another_id",
        "the padding is not the tokenizer's [PAD] id, so the model reads it as text",
        'pad with tokenizer.token_to_id("[PAD]")',
    ),
    _bpe(
        "cut_characters_not_ids",
        "the text was cut to `length` characters before it was encoded: `length` counts "
        "tokens, and a token holds several characters, so the comments lose words they have "
        "room for",
        "encode the whole comment first, then cut its list of ids",
    ),
    _bpe(
        "cut_one_short",
        "each comment keeps one id fewer than `length` (an off-by-one in the cut): the last "
        "place is always padding",
        "ids[:length] keeps exactly `length` ids",
    ),
]

PROBES = [(TEXTS[:1], 3), (TEXTS[:1], 6), (TEXTS[:2], 6), (TEXTS, 10)]


def probes() -> list[tuple[list[str], int]]:
    """The public probes, or, in the hidden checks, the same sizes with the comments drawn in
    another order and other lengths."""
    if answers.mode() != answers.HIDDEN:
        return [(list(texts), length) for texts, length in PROBES]
    draw = random.Random(answers.fresh_seed(0))
    shuffled = draw.sample(TEXTS, len(TEXTS))
    return [
        (shuffled[:1], draw.randint(2, 4)),
        (shuffled[:1], draw.randint(5, 8)),
        (shuffled[:2], draw.randint(5, 8)),
        (shuffled, draw.randint(9, 14)),
    ]


def _explain(tokenizer, texts, length, ids, expected) -> None:
    """Name what differs in the first comment whose ids differ: the ids themselves, or where
    and with what the row was padded."""
    pad = tokenizer.token_to_id("[PAD]")
    n = next(n for n in range(len(texts)) if ids[n].tolist() != expected[n].tolist())
    got, want = ids[n].tolist(), expected[n].tolist()
    real_got = [i for i in got if i != pad]
    real_want = [i for i in want if i != pad]
    shown = Evidence(f"comment {n}: ids {want}", f"comment {n}: ids {got}")
    if real_got == real_want:
        shown.fail(
            "padding_misplaced",
            f"comment {n} has the right ids but its padding sits elsewhere: the ids come "
            "first, then [PAD] up to `length`",
            "each row: the comment's ids first, then [PAD] up to `length`",
        )
    if real_got and real_got == real_want[: len(real_got)]:
        shown.fail(
            "cut_too_short",
            f"comment {n} keeps {len(real_got)} ids where it has room for "
            f"{len(real_want)}: cut at `length` ids, no earlier",
            "ids[:length]",
        )
    shown.fail(
        "not_the_tokenizers_ids",
        f"comment {n}'s ids are not the tokenizer's: tokenizer.encode(text).ids of the "
        "comment as it is (no lower-casing, no extra tokens, no other tokenizer)",
        "tokenizer.encode(text).ids, then cut and pad",
    )


IDS_SHAPE = Mistake(
    "ids_shape",
    "the ids are not one row of `length` per comment: cut long comments, pad short ones",
    "the first `length` ids, then [PAD] until the row holds `length`",
)


@checker("Task 6", "encode_with_bpe(tokenizer, texts, length)", optional=True)
def check_encode_with_bpe(student: StudentFunction) -> None:
    """Task 6: the student's ids against the tokenizer's, cut and right-padded with [PAD]."""
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
        require_shape(result, (n, length), f"shape ({n}, {length})", IDS_SHAPE)
        if result.dtype != torch.long:
            fail(
                "ids_not_long",
                f"the ids are {result.dtype}, not integers: an embedding looks up long ids",
                "dtype torch.int64",
                str(result.dtype),
                "dtype=torch.long",
            )
        return result

    failure = smallest_failure(probes(), call, answers.reference(NAME), torch.equal)
    if failure is None:
        return
    (texts, length), ids, expected = failure
    shown = Evidence(
        f"ids {expected.tolist()}",
        f"ids {ids.tolist()}",
        f" (on the smallest input that fails: {len(texts)} comment(s), length {length})",
    )
    shown.diagnose(ids, MISTAKES, (texts, length), torch.equal)
    _explain(tokenizer, texts, length, ids, expected)
    shown.fail(
        "ids_differ",
        "the ids differ from the tokenizer's, cut to `length` and padded with [PAD]",
        "tokenizer.encode(text).ids for each comment, then cut and pad on the right",
    )
