"""transformer_lab.attention against PyTorch's own scaled_dot_product_attention."""

import math

import pytest
import torch
import torch.nn.functional as F

from transformer_lab.attention import (
    attention,
    causal_mask,
    max_weight_by_width,
    mix_values,
    soft_join,
    toy_inputs,
    toy_self_attention,
)


def random_inputs(seed, batch, lq, lk, d, dv, with_padding):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, lq, d, generator=g, dtype=torch.float64)
    k = torch.randn(batch, lk, d, generator=g, dtype=torch.float64)
    v = torch.randn(batch, lk, dv, generator=g, dtype=torch.float64)
    padding = None
    if with_padding:
        lengths = torch.randint(1, lk + 1, (batch,), generator=g)
        padding = torch.arange(lk)[None, :] >= lengths[:, None]
    return q, k, v, padding


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("with_padding", [False, True])
def test_matches_scaled_dot_product_attention(seed, with_padding):
    g = torch.Generator().manual_seed(1000 + seed)
    batch, lq, lk, d, dv = (int(n) for n in torch.randint(1, 7, (5,), generator=g))
    q, k, v, padding = random_inputs(seed, batch, lq, lk, d, dv, with_padding)
    output, weights = attention(q, k, v, padding)
    # SDPA's boolean mask means the opposite: True = may attend.
    allowed = None if padding is None else ~padding[:, None, :]
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(output, expected)
    assert weights.shape == (batch, lq, lk)
    torch.testing.assert_close(weights.sum(-1), torch.ones(batch, lq, dtype=torch.float64))
    if padding is not None:
        assert (weights.masked_select(padding[:, None, :].expand_as(weights)) == 0).all()


def test_causal_matches_sdpa():
    q, k, v, _ = random_inputs(3, 2, 5, 5, 4, 3, False)
    output, weights = attention(q, k, v, causal=True)
    torch.testing.assert_close(
        output, F.scaled_dot_product_attention(q, k, v, is_causal=True)
    )
    assert torch.equal(weights[0] > 0, ~causal_mask(5))


def test_gradients_reach_queries_keys_and_values():
    q, k, v, padding = random_inputs(4, 3, 4, 6, 5, 2, True)
    for tensor in (q, k, v):
        tensor.requires_grad_(True)
    output, _ = attention(q, k, v, padding)
    output.sum().backward()
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        assert tensor.grad is not None and torch.isfinite(tensor.grad).all(), name
        assert tensor.grad.abs().sum() > 0, name
    # padded keys and values receive no gradient: nothing reads them
    assert (v.grad.masked_select(padding[:, :, None].expand_as(v)) == 0).all()


def test_every_key_masked_is_a_clear_error():
    q, k, v, _ = random_inputs(0, 2, 2, 3, 4, 4, False)
    padding = torch.tensor([[False, True, True], [True, True, True]])
    with pytest.raises(ValueError, match="example 1, query 0: every key is masked"):
        attention(q, k, v, padding)


@pytest.mark.parametrize(
    "shapes, message",
    [
        (
            ((2, 3, 4), (2, 5, 4), (2, 5)),
            r"v should have shape \(B, Lk, Dv\).*got \(2, 5\)",
        ),
        (((3, 4), (2, 5, 4), (2, 5, 6)), r"q should have shape \(B, Lq, D\).*got \(3, 4\)"),
        (
            ((2, 3, 4), (1, 5, 4), (2, 5, 6)),
            r"k has shape \(1, 5, 4\) but its dimension 0 should be 2",
        ),
        (
            ((2, 3, 4), (2, 5, 3), (2, 5, 6)),
            r"k has shape \(2, 5, 3\) but its dimension 2 should be 4",
        ),
        (
            ((2, 3, 4), (2, 5, 4), (2, 4, 6)),
            r"v has shape \(2, 4, 6\) but its dimension 1 should be 5",
        ),
    ],
)
def test_wrong_shapes_name_expected_and_received(shapes, message):
    q, k, v = (torch.zeros(shape) for shape in shapes)
    with pytest.raises(ValueError, match=message):
        attention(q, k, v)


def test_padding_mask_shape_and_dtype_are_checked():
    q = k = v = torch.zeros(2, 3, 4)
    with pytest.raises(
        ValueError, match=r"padding should have shape \(2, 3\).*got \(3, 2\)"
    ):
        attention(q, k, v, torch.zeros(3, 2, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        attention(q, k, v, torch.zeros(2, 3))
    with pytest.raises(TypeError, match="q must be a torch.Tensor"):
        attention([[1.0]], k, v)


def test_soft_join_becomes_a_lookup_as_temperature_falls():
    keys = F.normalize(
        torch.randn(5, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64),
        dim=1,
    )
    values = torch.arange(10, dtype=torch.float64).reshape(5, 2)
    order = torch.tensor([3, 0, 4, 4, 1])
    warm, warm_weights = soft_join(keys[order], keys, values, temperature=1.0)
    cold, cold_weights = soft_join(keys[order], keys, values, temperature=0.005)
    torch.testing.assert_close(cold, values[order])
    assert (warm - values[order]).abs().max() > 0.5
    assert torch.equal(cold_weights.argmax(1), order)
    with pytest.raises(ValueError, match="temperature must be positive"):
        soft_join(keys, keys, values, temperature=0)


def test_scaling_keeps_softmax_from_saturating():
    result = max_weight_by_width([4, 64, 1024], n_keys=16, trials=100, seed=1)
    assert result["unscaled"][0] < result["unscaled"][1] < result["unscaled"][2]
    assert result["unscaled"][2] > 0.9
    assert max(result["scaled"]) - min(result["scaled"]) < 0.05
    expected_std = [math.sqrt(w) for w in result["width"]]
    for measured, expected in zip(result["score_std"], expected_std):
        assert measured == pytest.approx(expected, rel=0.15)


def test_toy_matches_the_exercise_recipe():
    """The exercise page rebuilds the toy with the global RNG; both must print the same table."""
    tokens = ["login", "failed", "again"]
    _, weights = toy_self_attention(tokens, d_model=4, seed=0)
    torch.manual_seed(0)
    embeddings = torch.randn(3, 4)
    w_q, w_k, _ = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
    expected = torch.softmax((embeddings @ w_q) @ (embeddings @ w_k).T / 2, dim=-1)
    torch.testing.assert_close(weights, expected)


POISON = [float("nan"), float("inf"), -float("inf"), 1e30]


@pytest.mark.parametrize("poison", POISON)
def test_nothing_at_a_padded_key_reaches_the_output(poison):
    q, k, v, _ = random_inputs(7, 2, 3, 5, 4, 6, False)
    padding = torch.tensor(
        [[False, False, False, True, True], [False, True, True, True, True]]
    )
    clean = attention(q, k, v, padding)
    hidden = padding[:, :, None]
    poisoned = attention(
        q, k.masked_fill(hidden, poison), v.masked_fill(hidden, poison), padding
    )
    for expected, got in zip(clean, poisoned):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)


def test_a_future_value_cannot_reach_earlier_queries_under_a_causal_mask():
    q, k, v, _ = random_inputs(8, 1, 4, 4, 3, 2, False)
    before, _ = attention(q, k, v, causal=True)
    v[0, 3] = 1e6
    after, _ = attention(q, k, v, causal=True)
    assert torch.equal(after[0, :3], before[0, :3]) and (after[0, 3] > 1e3).all()


@pytest.mark.parametrize("name", ["q", "k", "v"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_nan_or_inf_that_attention_would_read_is_refused_with_its_position(name, bad):
    inputs = dict(zip("qkv", random_inputs(9, 1, 3, 4, 3, 2, False)[:3]))
    inputs[name][0, 1, 0] = bad
    with pytest.raises(ValueError, match=rf"{name} holds NaN or infinite values, first at"):
        attention(inputs["q"], inputs["k"], inputs["v"])


def test_a_nan_in_a_padded_key_is_never_read_so_it_is_allowed():
    q, k, v, _ = random_inputs(10, 1, 3, 4, 3, 2, False)
    padding = torch.tensor([[False, False, True, True]])
    k[0, 3], v[0, 2] = float("nan"), float("inf")
    output, _ = attention(q, k, v, padding)
    assert torch.isfinite(output).all()


def test_scores_that_overflow_are_refused_not_turned_into_nan_weights():
    q, k, v, _ = random_inputs(11, 1, 3, 4, 3, 2, False)
    with pytest.raises(
        ValueError, match=r"scores q @ k.T / sqrt\(D\) overflow torch.float32"
    ):
        attention(q.float() * 1e20, k.float() * 1e20, v.float())


@pytest.mark.parametrize(
    "make, error, message",
    [
        (
            lambda q, k, v: (q, k[:, :0], v[:, :0]),
            ValueError,
            r"k has shape \(2, 0, 4\): it has no keys to read",
        ),
        (
            lambda q, k, v: (q[..., :0], k[..., :0], v),
            ValueError,
            r"q has shape \(2, 3, 0\): it has no width D",
        ),
        (
            lambda q, k, v: (q.long(), k.long(), v.long()),
            TypeError,
            "q must hold floating-point numbers, got dtype torch.int64",
        ),
        (
            lambda q, k, v: (q, k, v.double()),
            TypeError,
            r"v must have dtype torch.float32 \(the dtype of q\), got torch.float64",
        ),
    ],
)
def test_degenerate_sizes_and_dtypes_are_refused(make, error, message):
    q, k, v = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4), torch.zeros(2, 5, 6)
    with pytest.raises(error, match=message):
        attention(*make(q, k, v))


@pytest.mark.parametrize("causal", ["False", 1, None])
def test_causal_must_be_a_real_bool(causal):
    q = torch.zeros(1, 3, 2)
    with pytest.raises(TypeError, match="causal must be True or False"):
        attention(q, q, q, causal=causal)


def test_mix_values_checks_its_inputs():
    scores, v = torch.zeros(2, 3, 5), torch.zeros(2, 5, 6)
    with pytest.raises(TypeError, match="scores must be a torch.Tensor"):
        mix_values([[1.0]], v)
    with pytest.raises(
        ValueError, match=r"v has shape \(2, 5, 6\) but its dimension 1 should be 4"
    ):
        mix_values(torch.zeros(2, 3, 4), v)
    with pytest.raises(TypeError, match="ignore must be a boolean tensor"):
        mix_values(scores, v, torch.zeros(2, 3, 5))
    with pytest.raises(
        ValueError,
        match=r"ignore has shape \(2, 4\), which does not broadcast to the scores' shape \(B, Lq, Lk\) \(2, 3, 5\)",
    ):
        mix_values(scores, v, torch.zeros(2, 4, dtype=torch.bool))


@pytest.mark.parametrize(
    "temperature, error, message",
    [
        (float("nan"), ValueError, "temperature must be a finite number, got nan"),
        (float("inf"), ValueError, "temperature must be a finite number, got inf"),
        (None, TypeError, "temperature must be a number, got NoneType None"),
        ("0.1", TypeError, "temperature must be a number, got str '0.1'"),
        (True, TypeError, "temperature must be a number, got bool True"),
        (-1.0, ValueError, "temperature must be positive, got -1.0"),
    ],
)
def test_soft_join_refuses_bad_temperatures(temperature, error, message):
    keys = torch.eye(3)
    with pytest.raises(error, match=message):
        soft_join(keys, keys, keys, temperature)


@pytest.mark.parametrize("temperature", [1e-3, 1e-40, 1e-300])
def test_soft_join_at_tiny_temperatures_is_the_hard_join(temperature):
    keys = F.normalize(torch.randn(6, 4, generator=torch.Generator().manual_seed(1)), dim=1)
    values = torch.arange(12.0).reshape(6, 2)
    order = torch.tensor([5, 0, 3])
    output, weights = soft_join(keys[order], keys, values, temperature)
    torch.testing.assert_close(output, values[order])
    assert torch.equal(weights, F.one_hot(order, 6).float())


def test_soft_join_splits_the_weight_between_tied_keys_at_zero_temperature():
    keys = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    _, weights = soft_join(keys[:1], keys, torch.eye(3), temperature=1e-40)
    torch.testing.assert_close(weights, torch.tensor([[0.5, 0.5, 0.0]]))


def test_soft_join_with_huge_scores_stays_finite_or_says_why():
    keys = torch.eye(3)
    output, weights = soft_join(
        keys * 1e10, keys * 1e10, torch.eye(3), temperature=1.0
    )  # scores of 1e20
    torch.testing.assert_close(weights, torch.eye(3))
    with pytest.raises(ValueError, match="overflow torch.float32.*scale the inputs down"):
        soft_join(keys * 1e20, keys * 1e20, torch.eye(3), temperature=1.0)  # scores of 1e40
    with pytest.raises(
        ValueError, match=r"keys holds NaN or infinite values, first at position \(0, 0\)"
    ):
        soft_join(keys, keys * float("nan"), keys, temperature=1.0)


def test_sizes_and_seeds_are_checked():
    with pytest.raises(ValueError, match="length must be an int of at least 1, got -1"):
        causal_mask(-1)
    with pytest.raises(TypeError, match="length must be an int, got float 2.5"):
        causal_mask(2.5)
    with pytest.raises(ValueError, match="each width must be an int of at least 1, got 0"):
        max_weight_by_width([0])
    with pytest.raises(TypeError, match="tokens must be a list of strings .*not a str"):
        toy_self_attention("login")


def test_gradients_stay_finite_when_padding_holds_nan():
    q, k, v, _ = random_inputs(9, 2, 3, 5, 4, 6, False)
    padding = torch.tensor(
        [[False, False, False, True, True], [False, True, True, True, True]]
    )
    v = v.masked_fill(padding[:, :, None], float("nan")).requires_grad_(True)
    q.requires_grad_(True)
    output, _ = attention(q, k, v, padding)
    output.sum().backward()
    assert torch.isfinite(q.grad).all()
    assert (v.grad.masked_select(padding[:, :, None].expand_as(v)) == 0).all()


def test_toy_inputs_are_the_numbers_the_toy_uses():
    embeddings, w_q, w_k, w_v = toy_inputs(3, d_model=4, seed=5)
    assert embeddings.shape == (3, 4) and w_q.shape == w_k.shape == w_v.shape == (4, 4)
    same_embeddings, weights = toy_self_attention(["a", "b", "c"], d_model=4, seed=5)
    assert torch.equal(same_embeddings, embeddings)
    torch.testing.assert_close(
        weights, torch.softmax((embeddings @ w_q) @ (embeddings @ w_k).T / 2, dim=-1)
    )
    assert not torch.equal(toy_inputs(3, d_model=4, seed=6)[0], embeddings)


@pytest.mark.parametrize("temperature", [1e-40, 1e-45, 5e-324])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_soft_join_at_a_vanishing_temperature_is_the_hard_join(temperature, dtype):
    """Below the point where exp underflows, the result is the zero-temperature limit: one-hot
    on the best key, and an even split between keys tied exactly for the top score."""
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0], [0.5, 0.5]], dtype=dtype)
    values = torch.tensor([[10.0], [20.0], [30.0], [40.0]], dtype=dtype)
    queries = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=dtype)
    output, weights = soft_join(queries, keys, values, temperature=temperature)
    expected = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.5, 0.0]], dtype=dtype)
    assert torch.equal(weights, expected)
    assert torch.equal(output, torch.tensor([[10.0], [25.0]], dtype=dtype))
