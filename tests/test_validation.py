"""transformer_lab.validation: every require_* helper names the argument, what was expected and what came."""

import math

import numpy as np
import pytest
import torch

from transformer_lab.validation import (
    describe,
    is_int,
    require_binary_labels,
    require_bool,
    require_counts,
    require_finite,
    require_float_tensor,
    require_int,
    require_logits_and_labels,
    require_mask,
    require_nonzero_size,
    require_number,
    require_padding,
    require_rank,
    require_size,
    require_some_key,
    require_tensor,
    require_texts,
)


def test_describe_formats_names_and_sizes():
    assert describe(("B", "L", "D")) == "(B, L, D)"
    assert describe(torch.zeros(2, 3).shape) == "(2, 3)"


def test_rank_message_names_dimensions():
    with pytest.raises(
        ValueError,
        match=r"x should have shape \(B, L, D\) \(3 dimensions\), got \(4, 5\) \(2 dimensions\)",
    ):
        require_rank("x", torch.zeros(4, 5), ("B", "L", "D"))


def test_size_message_gives_the_reason():
    with pytest.raises(ValueError, match=r"dimension 1 should be 7 \(because\)"):
        require_size("x", torch.zeros(2, 3), 1, 7, "because")


def test_padding_checks():
    require_padding(torch.zeros(2, 3, dtype=torch.bool), 2, 3)
    with pytest.raises(TypeError, match="True = ignore"):
        require_padding(torch.zeros(2, 3, dtype=torch.int64), 2, 3)
    with pytest.raises(ValueError, match=r"mask should have shape \(2, 3\)"):
        require_padding(torch.zeros(3, 3, dtype=torch.bool), 2, 3, name="mask")
    with pytest.raises(TypeError, match="list"):
        require_tensor("x", [1, 2])


def test_is_int_excludes_bools_and_floats():
    assert is_int(3) and is_int(np.int64(3))
    assert not any(is_int(value) for value in (True, 3.0, "3", None))


def test_require_int_takes_whole_numbers_only():
    assert require_int("n", 3, minimum=1) == 3
    assert type(require_int("n", np.int64(4))) is int
    for bad, kind in [
        (True, "bool True"),
        (2.0, "float 2.0"),
        ("3", "str '3'"),
        (None, "NoneType None"),
    ]:
        with pytest.raises(TypeError, match=f"n must be an int, got {kind}"):
            require_int("n", bad)
    with pytest.raises(ValueError, match="n must be an int of at least 1, got 0"):
        require_int("n", 0, minimum=1)


def test_require_bool_refuses_look_alikes():
    assert require_bool("causal", False) is False
    for bad in ["False", 1, None]:
        with pytest.raises(TypeError, match="causal must be True or False"):
            require_bool("causal", bad)


def test_require_number_is_finite_and_within_bounds():
    assert require_number("lr", 3e-3, above=0) == 3e-3
    for bad in ["0.1", None, True]:
        with pytest.raises(TypeError, match="lr must be a number"):
            require_number("lr", bad, above=0)
    for bad in [math.nan, math.inf, -math.inf]:
        with pytest.raises(ValueError, match="lr must be a finite number"):
            require_number("lr", bad, above=0)
    with pytest.raises(ValueError, match="lr must be positive, got 0"):
        require_number("lr", 0, above=0)
    with pytest.raises(ValueError, match="share must be strictly between 0 and 1, got 1"):
        require_number("share", 1, above=0, below=1)


def test_require_texts_refuses_a_single_string():
    assert require_texts("texts", ("a", "b")) == ["a", "b"]
    assert require_texts("texts", [], allow_empty=True) == []
    with pytest.raises(TypeError, match="texts must be a list of strings .*not a str"):
        require_texts("texts", "hello")
    with pytest.raises(ValueError, match="texts is empty"):
        require_texts("texts", [])
    with pytest.raises(TypeError, match=r"texts\[1\] must be a str, got int 3"):
        require_texts("texts", ["a", 3])


def test_require_counts_refuses_negative_and_non_integer_counts():
    assert require_counts("words", {"cat": 0, "dog": 2}) == {"cat": 0, "dog": 2}
    with pytest.raises(
        ValueError, match=r"words\['cat'\] must be an int of at least 0, got -1"
    ):
        require_counts("words", {"cat": -1})
    with pytest.raises(TypeError, match="map each word to its count"):
        require_counts("words", ["cat"])
    with pytest.raises(TypeError, match="str keys"):
        require_counts("words", {3: 1})


def test_require_float_tensor_names_the_dtype():
    with pytest.raises(
        TypeError,
        match=r"x must hold floating-point numbers, got dtype torch.int64; convert it with .float\(\)",
    ):
        require_float_tensor("x", torch.zeros(2, dtype=torch.long))
    with pytest.raises(
        TypeError,
        match=r"v must have dtype torch.float32 \(the dtype of q\), got torch.float64",
    ):
        require_float_tensor(
            "v", torch.zeros(2, dtype=torch.float64), torch.float32, "the dtype of q"
        )


def test_require_finite_gives_the_first_bad_position_and_skips_padding():
    x = torch.zeros(2, 3)
    x[1, 2] = math.nan
    with pytest.raises(
        ValueError, match=r"x holds NaN or infinite values, first at position \(1, 2\)"
    ):
        require_finite("x", x)
    require_finite("x", x, skip=torch.tensor([[False, False, False], [False, False, True]]))
    require_finite("x", torch.tensor([math.inf]), allow_inf=True)
    with pytest.raises(ValueError, match="holds NaN, first"):
        require_finite("x", torch.tensor([math.nan]), allow_inf=True)


@pytest.mark.parametrize("labels", [[0.0, 2.0], [-1.0, 1.0], [0.0, 0.7], [0.0, math.nan]])
def test_require_binary_labels_refuses_other_classes(labels):
    with pytest.raises(ValueError, match="y must hold only the classes 0 and 1, got"):
        require_binary_labels("y", torch.tensor(labels))


def test_require_binary_labels_accepts_any_dtype():
    for labels in (
        torch.tensor([0.0, 1.0]),
        torch.tensor([0, 1]),
        torch.tensor([False, True]),
    ):
        require_binary_labels("y", labels)


def test_all_masked_rows_are_named_for_both_mask_shapes():
    with pytest.raises(ValueError, match="example 1 is all padding"):
        require_some_key(torch.tensor([[False, True], [True, True]]))
    with pytest.raises(ValueError, match="example 0, query 1: every key is masked"):
        require_some_key(torch.tensor([[[False, True], [True, True]]]))
    with pytest.raises(ValueError, match=r"k has shape \(1, 0, 4\): it has no keys"):
        require_nonzero_size("k", torch.zeros(1, 0, 4), 1, "keys")


def test_require_mask_is_boolean_and_broadcasts():
    require_mask("ignore", torch.zeros(1, 1, 5, dtype=torch.bool), (2, 3, 5), "the scores")
    with pytest.raises(TypeError, match="ignore must be a boolean tensor"):
        require_mask("ignore", torch.zeros(2, 3, 5), (2, 3, 5), "the scores")
    with pytest.raises(
        ValueError,
        match=r"ignore has shape \(2, 4\), which does not broadcast to the scores \(2, 3, 5\)",
    ):
        require_mask("ignore", torch.zeros(2, 4, dtype=torch.bool), (2, 3, 5), "the scores")
    require_mask("ignore", torch.zeros(5, dtype=torch.bool), (2, 3, 5), "the scores")
    # a mask may not add an axis, nor widen one of size 1: the result would not be the scores' shape
    for shape in [(1, 2, 1, 5), (2, 3, 5)]:
        with pytest.raises(ValueError, match="does not broadcast to the scores"):
            require_mask(
                "ignore", torch.zeros(shape, dtype=torch.bool), (2, 1, 5), "the scores"
            )


def test_logits_and_labels_are_checked_in_one_call():
    logits, labels = torch.tensor([0.5, -1.0]), torch.tensor([1, 0])
    assert require_logits_and_labels(logits, labels) is None
    assert (
        require_logits_and_labels(torch.tensor([float("inf")]), torch.tensor([1])) is None
    )
    for bad_logits, bad_labels, message in (
        (torch.tensor([0.5]), torch.tensor([1, 0]), "shape"),
        (torch.tensor([]), torch.tensor([]), "empty"),
        (torch.tensor([float("nan")]), torch.tensor([1]), "NaN"),
        (torch.tensor([0.5]), torch.tensor([-1]), "0 and 1"),
    ):
        with pytest.raises(ValueError, match=message):
            require_logits_and_labels(bad_logits, bad_labels)
    with pytest.raises(TypeError, match="logits"):
        require_logits_and_labels([0.5], labels)
