"""The list of checks: which function, which exercise, its signature, and the check that runs it.

Exercise labels live here and nowhere else; the starter's ``NotImplementedError`` messages begin
with the same label (``tests/selfcheck/test_registry.py`` keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from transformer_lab.selfcheck import (
    attention,
    embedding,
    masks,
    metrics,
    multihead,
    pooling,
    tokenizer,
)
from transformer_lab.selfcheck.core import CheckResult


@dataclass(frozen=True)
class Check:
    name: str
    exercise: str
    signature: str
    run: Callable[[object], CheckResult]
    optional: bool = (
        False  # a stretch exercise: leaving it alone is "not attempted", not a failure
    )


# In the homework's order, so the report reads Exercise 1, 2, 3, 7, 8, 9.
CHECKS: list[Check] = [
    Check(
        metrics.NAME, metrics.EXERCISE, "accuracy(logits, labels)", metrics.check_accuracy
    ),
    Check(
        pooling.NAME, pooling.EXERCISE, "masked_mean(x, padding)", pooling.check_masked_mean
    ),
    Check(
        attention.NAME,
        attention.EXERCISE,
        "attention(q, k, v, padding)",
        attention.check_attention,
    ),
    Check(
        embedding.NAME,
        embedding.EXERCISE,
        "embedding_parameters(vocab_size, d)",
        embedding.check_embedding_parameters,
    ),
    Check(
        tokenizer.TRAIN_NAME,
        tokenizer.TRAIN_EXERCISE,
        "train_bpe_tokenizer(corpus, vocab_size)",
        tokenizer.check_train_bpe_tokenizer,
    ),
    Check(
        tokenizer.COUNT_NAME,
        tokenizer.COUNT_EXERCISE,
        "tokens_per_word(tokenizer, words)",
        tokenizer.check_tokens_per_word,
    ),
]

STRETCH_CHECKS: list[Check] = [
    Check(
        masks.NAME,
        masks.EXERCISE,
        "causal_padding_mask(padding)",
        masks.check_causal_padding_mask,
        optional=True,
    ),
    Check(
        multihead.NAME,
        multihead.EXERCISE,
        "multi_head_attention(x, padding, mha)",
        multihead.check_multi_head_attention,
        optional=True,
    ),
]

ALL_CHECKS: list[Check] = CHECKS + STRETCH_CHECKS
BY_NAME: dict[str, Check] = {check.name: check for check in ALL_CHECKS}
