"""transformer_lab.set_task: the padded-set generator and the handcrafted largest-key rule."""

import pytest
import torch

from transformer_lab.metrics import accuracy
from transformer_lab.set_task import (
    largest_key_index,
    largest_key_rule,
    largest_key_value,
    make_sets,
)


def brute_force_label(tokens):
    """Label of one set given its real (key, value) pairs as Python floats."""
    key, value = max(tokens, key=lambda pair: pair[0])
    return 1.0 if value > 0 else 0.0


def test_shapes_and_dtypes():
    x, padding, y = make_sets(50, seed=3, max_tokens=6)
    assert x.shape == (50, 6, 2) and x.dtype == torch.float32
    assert padding.shape == (50, 6) and padding.dtype == torch.bool
    assert y.shape == (50,) and y.dtype == torch.float32
    assert set(y.tolist()) <= {0.0, 1.0}


def test_padding_is_a_suffix_of_zeros_and_sets_have_3_to_max_tokens():
    x, padding, _ = make_sets(500, seed=4, max_tokens=8)
    lengths = (~padding).sum(dim=1)
    assert lengths.min() == 3 and lengths.max() == 8
    assert torch.equal(padding, torch.arange(8)[None, :] >= lengths[:, None])
    assert (x[padding] == 0).all()
    assert (x[~padding] != 0).all()


@pytest.mark.parametrize("seed", [0, 11, 12])
def test_labels_match_a_brute_force_rule(seed):
    x, padding, y = make_sets(300, seed=seed)
    for i in range(len(y)):
        tokens = [tuple(x[i, j].tolist()) for j in range(x.shape[1]) if not padding[i, j]]
        assert y[i].item() == brute_force_label(tokens), f"set {i}: {tokens}"


def test_same_seed_same_sets_other_seed_other_sets():
    first, second, other = make_sets(64, 7), make_sets(64, 7), make_sets(64, 8)
    for a, b in zip(first, second):
        assert torch.equal(a, b)
    assert not torch.equal(first[0], other[0])


def test_labels_are_balanced():
    _, _, y = make_sets(20_000, seed=0)
    assert abs(y.mean().item() - 0.5) < 0.02


def test_rule_ignores_padding_even_with_a_huge_padded_key():
    x = torch.tensor([[[0.5, -1.0], [0.1, 2.0], [9.0, 3.0]]])
    padding = torch.tensor([[False, False, True]])
    assert largest_key_index(x, padding).tolist() == [0]
    assert largest_key_rule(x, padding).tolist() == [0.0]
    assert largest_key_rule(x, torch.zeros(1, 3, dtype=torch.bool)).tolist() == [1.0]


def test_rule_is_perfect_and_the_value_is_a_logit():
    x, padding, y = make_sets(1000, seed=5)
    assert torch.equal(largest_key_rule(x, padding), y)
    assert accuracy(largest_key_value(x, padding), y) == 1.0


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="n must be an int of at least 1, got 0"):
        make_sets(0, seed=1)
    with pytest.raises(ValueError, match="max_tokens must be an int of at least 3, got 2"):
        make_sets(5, seed=1, max_tokens=2)
    with pytest.raises(
        ValueError, match=r"x has shape \(1, 2, 3\) but its dimension 2 should be 2"
    ):
        largest_key_rule(torch.zeros(1, 2, 3), torch.zeros(1, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match="example 1 is all padding"):
        largest_key_rule(torch.ones(2, 2, 2), torch.tensor([[False, True], [True, True]]))
    with pytest.raises(TypeError, match="boolean"):
        largest_key_rule(torch.ones(1, 2, 2), torch.zeros(1, 2))
