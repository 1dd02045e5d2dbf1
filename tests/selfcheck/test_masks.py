"""transformer_lab.selfcheck.checks.masks and the private reference of the causal + padding mask."""

import torch
from transformer_lab_instructor.references import causal_padding_mask

from transformer_lab.selfcheck import PASSED, check_causal_padding_mask
from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.masks import MISTAKES, PROBE_PADDING, probe_paddings


def test_the_reference_blocks_the_future_and_the_padding():
    padding = PROBE_PADDING
    mask = causal_padding_mask(padding)
    assert mask.dtype == torch.bool and mask.shape == (3, 5, 5)
    for b in range(3):
        for i in range(5):
            for j in range(5):
                assert bool(mask[b, i, j]) == (j > i or bool(padding[b, j]))


def test_every_query_can_read_at_least_one_key():
    assert not causal_padding_mask(PROBE_PADDING).all(-1).any()


def test_every_mistake_gives_another_mask_on_the_probe():
    right = causal_padding_mask(PROBE_PADDING)
    masks = [(m.code, m.variant(PROBE_PADDING)) for m in MISTAKES]
    for i, (code, mask) in enumerate(masks):
        assert not torch.equal(mask, right), code
        assert all(not torch.equal(mask, other) for _, other in masks[i + 1 :]), code


def test_the_reference_passes_its_own_check():
    assert check_causal_padding_mask(causal_padding_mask).status == PASSED


def test_hidden_paddings_keep_what_the_mistakes_need():
    """Every hidden draw has a padded key in the middle (a real key after it) and a padded end,
    and a real first token in every example: by construction, not by luck."""
    draws = []
    for _ in range(200):  # one hidden run each: every run draws from its own seed
        with answers.using(answers.HIDDEN):
            draws.append(probe_paddings())
    assert len({str(paddings) for paddings in draws}) > 100
    for paddings in draws:
        for padding in paddings:
            assert not padding[:, 0].any()
            assert padding[:, -1].any()
            assert (padding[:, :-1] & ~padding[:, 1:]).any()  # padded, then a real key
