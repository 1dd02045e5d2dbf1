import pytest
import torch

from transformer_lab.shapes import describe, require_padding, require_rank, require_size, require_tensor


def test_describe_formats_names_and_sizes():
    assert describe(("B", "L", "D")) == "(B, L, D)"
    assert describe(torch.zeros(2, 3).shape) == "(2, 3)"


def test_rank_message_names_dimensions():
    with pytest.raises(ValueError, match=r"x should have shape \(B, L, D\) \(3 dimensions\), got \(4, 5\) \(2 dimensions\)"):
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
