import pytest
import torch

from transformer_lab.metrics import accuracy


def test_threshold_is_logit_zero():
    assert accuracy(torch.tensor([-1.0, 1.0]), torch.tensor([0.0, 1.0])) == 1.0
    assert accuracy(torch.tensor([1.0, -1.0]), torch.tensor([0.0, 1.0])) == 0.0
    # a logit of 0.3 is a probability above 0.5: predicted positive
    assert accuracy(torch.tensor([0.3, 0.3]), torch.tensor([1.0, 0.0])) == 0.5


def test_returns_a_python_float():
    assert type(accuracy(torch.tensor([1.0]), torch.tensor([1.0]))) is float


def test_shape_mismatch_is_explained():
    with pytest.raises(ValueError, match=r"got \(3,\) and \(2,\)|got \(3\) and \(2\)"):
        accuracy(torch.zeros(3), torch.zeros(2))
