import pytest
import torch

from transformer_lab.pooling import masked_mean


def test_matches_a_manual_loop():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 7, 3, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, 8, (6,), generator=g)
    padding = torch.arange(7)[None, :] >= lengths[:, None]
    expected = torch.stack([x[i, : lengths[i]].mean(0) for i in range(6)])
    torch.testing.assert_close(masked_mean(x, padding), expected)


def test_padding_values_do_not_leak():
    x = torch.tensor([[[2.0, 4.0], [4.0, 8.0], [900.0, 900.0]]])
    torch.testing.assert_close(
        masked_mean(x, torch.tensor([[False, False, True]])), torch.tensor([[3.0, 6.0]])
    )


def test_bad_input_is_explained():
    with pytest.raises(ValueError, match="example 1 is all padding"):
        masked_mean(torch.zeros(2, 2, 1), torch.tensor([[False, True], [True, True]]))
    with pytest.raises(ValueError, match=r"padding should have shape \(2, 2\)"):
        masked_mean(torch.zeros(2, 2, 1), torch.zeros(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"x should have shape \(B, L, D\)"):
        masked_mean(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.bool))


@pytest.mark.parametrize("poison", [float("nan"), float("inf"), -float("inf")])
def test_nan_or_inf_at_padding_cannot_reach_the_mean(poison):
    x = torch.tensor([[[2.0, 4.0], [4.0, 8.0], [poison, poison]]])
    torch.testing.assert_close(
        masked_mean(x, torch.tensor([[False, False, True]])), torch.tensor([[3.0, 6.0]])
    )


def test_integer_input_is_refused_with_its_dtype():
    with pytest.raises(
        TypeError, match="x must hold floating-point numbers, got dtype torch.int64"
    ):
        masked_mean(
            torch.zeros(1, 2, 3, dtype=torch.long), torch.zeros(1, 2, dtype=torch.bool)
        )


def test_a_nan_at_a_real_token_is_refused_but_one_in_padding_is_ignored():
    x = torch.zeros(2, 3, 4)
    padding = torch.tensor([[False, False, True], [False, True, True]])
    x[0, 2, 1] = float("nan")  # padding: never read
    assert torch.isfinite(masked_mean(x, padding)).all()
    x[1, 0, 3] = float("nan")  # a real token
    with pytest.raises(ValueError, match=r"x holds NaN or infinite values, first at"):
        masked_mean(x, padding)
