import pytest
import torch

from transformer_lab.metrics import accuracy, mcnemar_exact


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
    assert (
        accuracy(torch.tensor([-float("inf"), float("inf")]), torch.tensor([0.0, 1.0]))
        == 1.0
    )


def test_labels_may_be_int_or_bool():
    assert accuracy(torch.tensor([1.0, -1.0]), torch.tensor([1, 0])) == 1.0
    assert accuracy(torch.tensor([1.0, -1.0]), torch.tensor([True, False])) == 1.0
    with pytest.raises(TypeError, match="logits must hold floating-point numbers"):
        accuracy(torch.tensor([1, 0]), torch.tensor([1, 0]))


def test_mcnemar_exact_matches_the_binomial_by_hand():
    # 1 fix against 5 breaks: P(X <= 1) for Binomial(6, 1/2) = 7/64, doubled
    assert mcnemar_exact(1, 5) == pytest.approx(14 / 64)
    assert mcnemar_exact(5, 1) == mcnemar_exact(1, 5)
    # 0 of 10: 2 / 1024
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)


def test_mcnemar_exact_is_one_when_the_counts_balance_or_vanish():
    assert mcnemar_exact(4, 4) == 1.0
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_exact_agrees_with_scipy():
    from scipy.stats import binomtest

    for fixed, broken in [(30, 12), (7, 19), (100, 80)]:
        expected = binomtest(fixed, fixed + broken, 0.5).pvalue
        assert mcnemar_exact(fixed, broken) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "3"])
def test_mcnemar_exact_rejects_bad_counts(bad):
    with pytest.raises(ValueError, match="fixed must be a non-negative integer count"):
        mcnemar_exact(bad, 3)
