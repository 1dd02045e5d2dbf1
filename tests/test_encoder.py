"""transformer_lab.encoder: the parameter formula, identity attention, per-head weights, anatomy."""

import pytest
import torch
from torch import nn

from transformer_lab.attention import attention
from transformer_lab.encoder import (
    ENCODER_LAYER_ROLES,
    check_heads,
    count_parameters,
    describe_encoder_layer,
    encoder_layer_parameters,
    head_weights,
    identity_attention,
)


def padded_batch(seed, batch=4, length=6, width=3):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, length, width, generator=g)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    padding = torch.arange(length)[None, :] >= lengths[:, None]
    return x, padding


@pytest.mark.parametrize(
    "d_model, nhead, d_ff",
    [(2, 1, 4), (16, 4, 32), (32, 2, 64), (30, 5, 7), (64, 8, 256), (512, 8, 2048)],
)
@pytest.mark.parametrize("bias", [True, False])
def test_formula_equals_numel(d_model, nhead, d_ff, bias):
    layer = nn.TransformerEncoderLayer(
        d_model, nhead, dim_feedforward=d_ff, batch_first=True, bias=bias
    )
    assert encoder_layer_parameters(d_model, nhead, d_ff, bias=bias) == sum(
        p.numel() for p in layer.parameters()
    )
    assert count_parameters(layer) == sum(p.numel() for p in layer.parameters())


def test_the_textbook_layer_has_about_3_15_million_parameters():
    assert encoder_layer_parameters(512, 8, 2048) == 3_152_384


def test_heads_do_not_change_the_count():
    counts = {encoder_layer_parameters(64, heads, 128) for heads in (1, 2, 4, 8, 16)}
    assert len(counts) == 1


def test_count_parameters_skips_frozen_parameters():
    layer = nn.Linear(3, 2)
    layer.bias.requires_grad_(False)
    assert count_parameters(layer) == 6


def test_indivisible_width_is_explained():
    with pytest.raises(ValueError, match=r"d_model=10 is not divisible by nhead=4.*2\.50"):
        check_heads(10, 4)
    with pytest.raises(ValueError, match="nhead must be an int of at least 1, got 0"):
        encoder_layer_parameters(8, 0, 16)
    with pytest.raises(ValueError, match="d_ff must be an int of at least 1, got 0"):
        encoder_layer_parameters(8, 2, 0)
    with pytest.raises(TypeError, match="d_model must be an int, got bool True"):
        check_heads(True, 1)
    with pytest.raises(TypeError, match="bias must be True or False, got str 'no'"):
        encoder_layer_parameters(8, 2, 16, bias="no")
    with pytest.raises(TypeError, match="got int"):
        count_parameters(3)


@pytest.mark.parametrize("seed", range(5))
def test_identity_attention_is_the_hand_written_attention(seed):
    x, padding = padded_batch(seed)
    layer = identity_attention(3)
    expected_out, expected_weights = attention(x, x, x, padding)
    out, weights = layer(x, x, x, key_padding_mask=padding)
    torch.testing.assert_close(out, expected_out)
    torch.testing.assert_close(weights, expected_weights)


def test_head_weights_per_head_rows_and_padding():
    torch.manual_seed(0)
    x, padding = padded_batch(1, width=8)
    layer = nn.MultiheadAttention(8, 4, batch_first=True)
    weights = head_weights(layer, x, padding)
    assert weights.shape == (4, 4, 6, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 4, 6))
    assert (weights.masked_select(padding[:, None, None, :].expand_as(weights)) == 0).all()
    # averaging the heads gives what need_weights returns by default (padded positions read as 0)
    zeroed = x.masked_fill(padding[:, :, None], 0.0)
    _, averaged = layer(zeroed, zeroed, zeroed, key_padding_mask=padding)
    torch.testing.assert_close(weights.mean(dim=1), averaged)
    # without a mask the padded keys get weight
    assert (head_weights(layer, x)[padding[:, None, None, :].expand_as(weights)] > 0).all()


def test_head_weights_rejects_bad_input():
    with pytest.raises(TypeError, match="nn.MultiheadAttention"):
        head_weights(nn.Linear(2, 2), torch.zeros(1, 2, 2))
    with pytest.raises(ValueError, match="batch_first=True"):
        head_weights(nn.MultiheadAttention(4, 2), torch.zeros(1, 2, 4))
    with pytest.raises(ValueError, match="embed_dim is 4"):
        head_weights(nn.MultiheadAttention(4, 2, batch_first=True), torch.zeros(1, 2, 3))
    with pytest.raises(
        TypeError,
        match=r"x must have dtype torch.float32 \(the dtype of the layer's weights\), got torch.float64",
    ):
        head_weights(
            nn.MultiheadAttention(4, 2, batch_first=True),
            torch.zeros(1, 2, 4, dtype=torch.float64),
        )


def test_head_weights_all_padding_is_the_same_clear_error_as_attention():
    layer = nn.MultiheadAttention(4, 2, batch_first=True)
    padding = torch.tensor([[False, True], [True, True]])
    with pytest.raises(ValueError, match="example 1 is all padding: every key is masked"):
        head_weights(layer, torch.zeros(2, 2, 4), padding)


def test_head_weights_ignore_whatever_padding_holds():
    torch.manual_seed(0)
    x, padding = padded_batch(1, width=8)
    layer = nn.MultiheadAttention(8, 4, batch_first=True)
    clean = head_weights(layer, x, padding)
    for poison in (float("nan"), float("inf"), 1e30):
        assert torch.equal(
            head_weights(layer, x.masked_fill(padding[:, :, None], poison), padding), clean
        )


def test_anatomy_reads_every_submodule_of_the_layer():
    layer = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, batch_first=True)
    rows = describe_encoder_layer(layer)
    assert [row["submodule"] for row in rows] == [
        name for name, _ in layer.named_children()
    ]
    # Every submodule has a role; the activation is a function, the one block that is not one.
    assert {row["submodule"] for row in rows} == set(ENCODER_LAYER_ROLES) - {"activation"}
    assert sum(row["parameters"] for row in rows) == count_parameters(layer)
    assert all(row["role"] != "not in the book's diagram" for row in rows)
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        describe_encoder_layer(nn.Linear(2, 2))
