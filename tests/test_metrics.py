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


def test_empty_input_is_refused():
    with pytest.raises(ValueError, match="logits and labels are empty"):
        accuracy(torch.zeros(0), torch.zeros(0))


@pytest.mark.parametrize("labels", [[0.0, 2.0], [-1.0, 1.0], [0.2, 0.9]])
def test_labels_other_than_0_and_1_are_refused(labels):
    with pytest.raises(ValueError, match="labels must hold only the classes 0 and 1"):
        accuracy(torch.tensor([1.0, -1.0]), torch.tensor(labels))


def test_a_nan_logit_is_refused_and_infinite_logits_are_predictions():
    with pytest.raises(ValueError, match=r"logits holds NaN, first at position \(0\)"):
        accuracy(torch.tensor([float("nan"), 1.0]), torch.tensor([0.0, 1.0]))
    assert accuracy(torch.tensor([-float("inf"), float("inf")]), torch.tensor([0.0, 1.0])) == 1.0


def test_labels_may_be_int_or_bool():
    assert accuracy(torch.tensor([1.0, -1.0]), torch.tensor([1, 0])) == 1.0
    assert accuracy(torch.tensor([1.0, -1.0]), torch.tensor([True, False])) == 1.0
    with pytest.raises(TypeError, match="logits must hold floating-point numbers"):
        accuracy(torch.tensor([1, 0]), torch.tensor([1, 0]))
