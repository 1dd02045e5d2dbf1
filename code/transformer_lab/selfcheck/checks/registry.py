"""The list of checks, in each page's order (each module's ``@checker`` gives a check its
function, exercise and signature).

Two exercise pages share one grader: ``PAGES`` maps each page ("homework", "week-20") to its
checks. The starters' ``NotImplementedError`` messages begin with each check's exercise label
(``tests/selfcheck/test_registry.py`` keeps them in step).
"""

from __future__ import annotations

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
from transformer_lab.selfcheck.checks.tensors import Check

# In the homework's order, so the report reads Exercise 1, 2, 3, 7, 8, 9.
CHECKS: list[Check] = [
    metrics.check_accuracy,
    pooling.check_masked_mean,
    attention.check_attention,
    embedding.check_embedding_parameters,
    tokenizer.check_train_bpe_tokenizer,
    tokenizer.check_tokens_per_word,
]
STRETCH_CHECKS: list[Check] = [
    masks.check_causal_padding_mask,
    multihead.check_multi_head_attention,
]
ALL_CHECKS: list[Check] = CHECKS + STRETCH_CHECKS  # the homework's

# Week 20, in the page's order (Task 3 is prose); Tasks 5 and 6 are stretch tasks.
WEEK20_CHECKS: list[Check] = [
    positions.check_forward_without_positions,
    positions.check_toy_weights,
    debugging.check_repaired_forward,
    positions.check_sinusoidal_positions,
    positions.check_forward_with_sinusoids,
    token_ids.check_encode_with_bpe,
]

HOMEWORK, WEEK20 = "homework", "week-20"
PAGES: dict[str, list[Check]] = {HOMEWORK: ALL_CHECKS, WEEK20: WEEK20_CHECKS}
EVERY_CHECK: list[Check] = [check for checks in PAGES.values() for check in checks]
BY_NAME: dict[str, Check] = {check.name: check for check in EVERY_CHECK}
