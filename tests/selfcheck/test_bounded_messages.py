"""Every message a check builds from a student's value is built from bounded pieces: a reply of
a few hundred megabytes' worth of ``repr`` (one 2 MB string named 200 times, which costs the
worker 2 MB) costs the checking process a few kilobytes. Before: ``repr(result)[:80]`` built the
whole 400 MB text first, then cut it."""

import tracemalloc

import pytest
import torch

from transformer_lab.selfcheck import FAILED
from transformer_lab.selfcheck.checks import embedding, masks, metrics, tokenizer

BIG = ["x" * 2_000_000] * 200  # 400 MB of repr, 2 MB of memory
LIMIT_BYTES = 20 * 2**20


def peak_while(check, function):
    tracemalloc.start()
    try:
        result = check(function)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "check",
    [
        embedding.check_embedding_parameters,
        metrics.check_accuracy,
        masks.check_causal_padding_mask,
        tokenizer.check_tokens_per_word,
    ],
    ids=lambda check: check.name,
)
def test_a_huge_returned_value_costs_a_check_little(check):
    result, peak = peak_while(check, lambda *args: BIG)
    assert result.status == FAILED
    assert len(result.finding.received) <= 2000 and len(result.summary) <= 2000
    assert peak < LIMIT_BYTES, f"{peak / 2**20:.0f} MB"


def test_a_huge_tensor_is_shown_by_its_first_values():
    from transformer_lab.selfcheck.checks.tensors import ROW_VALUES, row_text

    text = row_text(torch.zeros(10_000_000))
    assert text.endswith(", ...]") and text.count(",") == ROW_VALUES
