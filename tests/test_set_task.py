"""transformer_lab.set_task: the padded-set generator and the handcrafted largest-key rule."""

import pytest
import torch

from transformer_lab.metrics import accuracy
from transformer_lab.set_task import (
    TEST_SEED,
    TEST_SETS,
    TRAIN_SEED,
    TRAIN_SETS,
    VALIDATION_SEED,
    VALIDATION_SETS,
    largest_key_gap,
    largest_key_index,
    largest_key_rule,
    largest_key_value,
    make_sets,
    make_split,
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


def test_the_split_is_the_named_seeds_and_sizes_and_shares_no_set():
    train, validation, test = make_split()
    for part, (n, seed) in zip(
        (train, validation, test),
        [
            (TRAIN_SETS, TRAIN_SEED),
            (VALIDATION_SETS, VALIDATION_SEED),
            (TEST_SETS, TEST_SEED),
        ],
    ):
        for a, b in zip(part, make_sets(n, seed)):
            assert torch.equal(a, b)
    assert len({TRAIN_SEED, VALIDATION_SEED, TEST_SEED}) == 3
    # no (key, value) token of one split appears in another
    tokens = [
        set(map(tuple, x[~padding].tolist())) for x, padding, _ in (train, validation, test)
    ]
    assert not (tokens[0] & tokens[1] or tokens[0] & tokens[2] or tokens[1] & tokens[2])


def test_another_split_draws_other_sets():
    first, other = make_split(0), make_split(1)
    for a, b in zip(first, other):
        assert not torch.equal(a[0], b[0])
        assert len(a[2]) == len(b[2])
    with pytest.raises(ValueError, match="split must be an int of at least 0"):
        make_split(-1)


def test_largest_key_gap_is_the_distance_to_the_runner_up():
    x = torch.tensor(
        [[[0.5, 1.0], [0.1, 2.0], [9.0, 3.0]], [[2.0, 0.0], [-1.0, 0.0], [1.5, 0.0]]]
    )
    padding = torch.tensor([[False, False, True], [False, False, False]])
    assert largest_key_gap(x, padding).tolist() == pytest.approx([0.4, 0.5])
    gaps = largest_key_gap(*make_sets(200, seed=6)[:2])
    assert (gaps >= 0).all()
    with pytest.raises(ValueError, match="at least 2 real tokens"):
        largest_key_gap(x, torch.tensor([[False, True, True], [False, False, False]]))


def test_a_nan_key_is_refused_not_silently_never_the_largest():
    from transformer_lab.set_task import largest_key_rule

    x, padding, _ = make_sets(4, seed=5)
    x[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"x holds NaN or infinite values, first at"):
        largest_key_rule(x, padding)
