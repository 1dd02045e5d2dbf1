"""The list of checks: which function, which exercise, its signature, and the check that runs it.

Two exercise pages share one grader: ``PAGES`` maps each page ("homework", "week-20") to its
checks. Exercise labels live here and nowhere else; the starters' ``NotImplementedError``
messages begin with the same label (``tests/selfcheck/test_registry.py`` keeps them in step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from transformer_lab.selfcheck.checks import (
    attention,
    debugging,
    embedding,
    masks,
    metrics,
    multihead,
    pooling,
    positions,
    token_ids,
    tokenizer,
)
from transformer_lab.selfcheck.core import CheckResult


@dataclass(frozen=True)
class Check:
    name: str
    exercise: str
    signature: str
    run: Callable[[object], CheckResult]
    # A stretch exercise: leaving it alone is "not attempted", not a failure.
    optional: bool = False
    requires: str | None = None  # a check whose function this one calls: it must pass first
    # Book modules the student's code builds on (the model it is handed, a helper it imports):
    # only these load for real in the worker; every other book module is a tripwire there.
    book_modules: tuple[str, ...] = ()
    # True when PyTorch's attention may run in the worker (inside the book's own encoder layer).
    library_attention: bool = False


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

ALL_CHECKS: list[Check] = CHECKS + STRETCH_CHECKS  # the homework's

# What a right Week-20 forward imports: the pooling. The model it is handed is a ModelParts (a
# worker module), so the book's models and their forwards stay tripwires in the worker.
MODEL_MODULES = ("transformer_lab.pooling",)

# Week 20, in the page's order (Task 3 is prose); Tasks 5 and 6 are stretch tasks.
WEEK20_CHECKS: list[Check] = [
    Check(
        positions.NO_POS_NAME,
        positions.NO_POS_EXERCISE,
        "forward_without_positions(model, ids, padding)",
        positions.check_forward_without_positions,
        book_modules=MODEL_MODULES,
        library_attention=True,
    ),
    Check(
        positions.TOY_NAME,
        positions.TOY_EXERCISE,
        "toy_weights(embeddings, w_q, w_k)",
        positions.check_toy_weights,
    ),
    Check(
        debugging.NAME,
        debugging.EXERCISE,
        "repaired_forward(model, ids, padding)",
        debugging.check_repaired_forward,
        book_modules=MODEL_MODULES,
        library_attention=True,
    ),
    Check(
        positions.TABLE_NAME,
        positions.TABLE_EXERCISE,
        "sinusoidal_positions(length, d_model)",
        positions.check_sinusoidal_positions,
        optional=True,
    ),
    Check(
        positions.SINES_NAME,
        positions.SINES_EXERCISE,
        "forward_with_sinusoids(model, ids, padding)",
        positions.check_forward_with_sinusoids,
        book_modules=MODEL_MODULES,
        library_attention=True,
        optional=True,
        requires=positions.TABLE_NAME,
    ),
    Check(
        token_ids.NAME,
        token_ids.EXERCISE,
        "encode_with_bpe(tokenizer, texts, length)",
        token_ids.check_encode_with_bpe,
        optional=True,
    ),
]

HOMEWORK, WEEK20 = "homework", "week-20"
PAGES: dict[str, list[Check]] = {HOMEWORK: ALL_CHECKS, WEEK20: WEEK20_CHECKS}
EVERY_CHECK: list[Check] = [check for checks in PAGES.values() for check in checks]
BY_NAME: dict[str, Check] = {check.name: check for check in EVERY_CHECK}
