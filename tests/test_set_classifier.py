"""transformer_lab.set_classifier: shapes, parameter counts, symmetry, and the attention read-out."""

import pytest
import torch

from transformer_lab.encoder import count_parameters, encoder_layer_parameters
from transformer_lab.set_classifier import SetClassifier, largest_key_attention
from transformer_lab.set_task import make_sets


def build(seed=0, **kwargs):
    torch.manual_seed(seed)
    return SetClassifier(**kwargs).eval()


def test_logits_have_one_number_per_set():
    x, padding, _ = make_sets(10, seed=1)
    for use_attention in (True, False):
        assert build(use_attention=use_attention)(x, padding).shape == (10,)


@pytest.mark.parametrize("d_model, nhead, d_ff", [(32, 2, 64), (16, 4, 8), (8, 1, 32)])
def test_the_encoder_adds_exactly_one_encoder_layer_of_parameters(d_model, nhead, d_ff):
    with_attention = build(d_model=d_model, nhead=nhead, d_ff=d_ff)
    baseline = build(use_attention=False, d_model=d_model, nhead=nhead, d_ff=d_ff)
    assert baseline.encoder is None
    extra = count_parameters(with_attention) - count_parameters(baseline)
    assert extra == encoder_layer_parameters(d_model, nhead, d_ff)
    # embedding 2→d, head d→d→1
    assert count_parameters(baseline) == (2 * d_model + d_model) + (d_model * d_model + d_model) + (d_model + 1)


@pytest.mark.parametrize("use_attention", [True, False])
def test_joint_permutation_of_tokens_and_mask_leaves_logits_unchanged(use_attention):
    model = build(3, use_attention=use_attention)
    x, padding, _ = make_sets(16, seed=2)
    order = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(model(x, padding), model(x[:, order], padding[:, order]), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("use_attention", [True, False])
def test_padded_tokens_cannot_change_the_prediction(use_attention):
    model = build(4, use_attention=use_attention)
    x, padding, _ = make_sets(16, seed=3)
    noisy = x.masked_fill(padding[:, :, None], 50.0)
    with torch.no_grad():
        torch.testing.assert_close(model(x, padding), model(noisy, padding))


def test_attention_weights_are_the_ones_the_layer_uses():
    model = build(5, nhead=4)
    x, padding, _ = make_sets(6, seed=4)
    weights = model.attention_weights(x, padding)
    assert weights.shape == (6, 4, 8, 8)
    torch.testing.assert_close(weights.sum(-1), torch.ones(6, 4, 8))
    assert (weights.masked_select(padding[:, None, None, :].expand_as(weights)) == 0).all()
    # rebuild the attention output from these weights and compare with the layer's own output
    attn = model.encoder.self_attn
    with torch.no_grad():
        h = model.embed_tokens(x, padding)  # what forward feeds the encoder: padding zeroed
        _, _, v = torch.nn.functional.linear(h, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1)
        heads = v.unflatten(-1, (4, 8)).transpose(1, 2)  # (B, H, L, D/H)
        mixed = (weights @ heads).transpose(1, 2).flatten(2)  # (B, L, D)
        rebuilt = attn.out_proj(mixed)
        expected, _ = attn(h, h, h, key_padding_mask=padding, need_weights=False)
    torch.testing.assert_close(rebuilt, expected)


def test_uniform_attention_gives_the_uniform_share():
    model = build(6)
    with torch.no_grad():  # zero queries: every score is 0, so each real key gets 1 / length
        d = model.encoder.self_attn.embed_dim
        model.encoder.self_attn.in_proj_weight[:d].zero_()
        model.encoder.self_attn.in_proj_bias[:d].zero_()
    x, padding, _ = make_sets(20, seed=5)
    share = largest_key_attention(model, x, padding)
    assert share["per_head"].shape == (20, 2)
    torch.testing.assert_close(share["per_head"], share["uniform"][:, None].expand(20, 2))
    torch.testing.assert_close(share["uniform"], 1 / (~padding).sum(1).float())


def test_focused_attention_is_measured_on_the_largest_key():
    x = torch.tensor([[[0.0, 1.0], [3.0, -1.0], [1.0, 2.0], [0.0, 0.0]]])
    padding = torch.tensor([[False, False, False, True]])
    model = build(7, nhead=1, d_model=4, d_ff=4)
    focus = torch.tensor([[[[0.0, 1.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]]])
    model.attention_weights = lambda x, padding: focus  # the three real queries give 1, 1, 0.5
    share = largest_key_attention(model, x, padding)
    torch.testing.assert_close(share["per_head"], torch.tensor([[2.5 / 3]]))


def test_bad_use_is_explained():
    with pytest.raises(ValueError, match="not divisible by nhead=3"):
        SetClassifier(d_model=32, nhead=3)
    x, padding, _ = make_sets(2, seed=0)
    with pytest.raises(ValueError, match="use_attention=False"):
        build(use_attention=False).attention_weights(x, padding)
    with pytest.raises(ValueError, match="each token is a \\(key, value\\) pair"):
        build()(torch.zeros(2, 8, 3), padding)


@pytest.mark.parametrize("use_attention", [True, False])
@pytest.mark.parametrize("poison", [float("nan"), float("inf")])
def test_nan_or_inf_at_padding_cannot_reach_logits_or_weights(use_attention, poison):
    model = build(6, use_attention=use_attention)
    x, padding, _ = make_sets(16, seed=5)
    poisoned = x.masked_fill(padding[:, :, None], poison)
    with torch.no_grad():
        torch.testing.assert_close(model(poisoned, padding), model(x, padding), rtol=0, atol=0)
    if use_attention:
        torch.testing.assert_close(model.attention_weights(poisoned, padding), model.attention_weights(x, padding))


def test_bad_settings_and_dtypes_are_refused():
    with pytest.raises(ValueError, match="d_ff must be an int of at least 1, got 0"):
        SetClassifier(d_ff=0)
    with pytest.raises(TypeError, match="use_attention must be True or False, got str 'no'"):
        SetClassifier(use_attention="no")
    x, padding, _ = make_sets(4, seed=0)
    with pytest.raises(TypeError, match=r"x must have dtype torch.float32 \(the dtype of the model's weights\), got torch.float64"):
        build()(x.double(), padding)
    with pytest.raises(TypeError, match="x must hold floating-point numbers, got dtype torch.int64"):
        build()(x.long(), padding)
