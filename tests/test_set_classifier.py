"""transformer_lab.set_classifier: shapes, parameter counts, symmetry, and the attention read-out."""

import pytest
import torch

from transformer_lab.attention import attention
from transformer_lab.encoder import count_parameters, encoder_layer_parameters
from transformer_lab.set_classifier import (
    ARCHITECTURES,
    BATCH_SIZE,
    LEARNING_RATE,
    MAX_EPOCHS,
    PATIENCE,
    HandEncoderLayer,
    SetClassifier,
    build_set_classifier,
    largest_key_attention,
    multi_head_self_attention,
    train_set_classifier,
)
from transformer_lab.set_task import make_sets
from transformer_lab.training import train_classifier


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
    assert count_parameters(baseline) == (2 * d_model + d_model) + (
        d_model * d_model + d_model
    ) + (d_model + 1)


@pytest.mark.parametrize("use_attention", [True, False])
def test_joint_permutation_of_tokens_and_mask_leaves_logits_unchanged(use_attention):
    model = build(3, use_attention=use_attention)
    x, padding, _ = make_sets(16, seed=2)
    order = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(
            model(x, padding), model(x[:, order], padding[:, order]), atol=1e-6, rtol=1e-5
        )


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
        _, _, v = torch.nn.functional.linear(
            h, attn.in_proj_weight, attn.in_proj_bias
        ).chunk(3, dim=-1)
        heads = v.unflatten(-1, (4, 8)).transpose(1, 2)  # (B, H, L, D/H)
        mixed = (weights @ heads).transpose(1, 2).flatten(2)  # (B, L, D)
        rebuilt = attn.out_proj(mixed)
        expected, _ = attn(h, h, h, key_padding_mask=padding, need_weights=False)
    torch.testing.assert_close(rebuilt, expected)


def test_uniform_attention_gives_the_uniform_share():
    model = build(6)
    with (
        torch.no_grad()
    ):  # zero queries: every score is 0, so each real key gets 1 / length
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
    focus = torch.tensor(
        [
            [
                [
                    [0.0, 1.0, 0.0, 0.0],
                    [0.0, 1.0, 0.0, 0.0],
                    [0.5, 0.5, 0.0, 0.0],
                    [0.0, 1.0, 0.0, 0.0],
                ]
            ]
        ]
    )
    model.attention_weights = lambda x, padding: (
        focus
    )  # the three real queries give 1, 1, 0.5
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
        torch.testing.assert_close(
            model(poisoned, padding), model(x, padding), rtol=0, atol=0
        )
    if use_attention:
        torch.testing.assert_close(
            model.attention_weights(poisoned, padding), model.attention_weights(x, padding)
        )


def test_bad_settings_and_dtypes_are_refused():
    with pytest.raises(ValueError, match="d_ff must be an int of at least 1, got 0"):
        SetClassifier(d_ff=0)
    with pytest.raises(
        TypeError, match="use_attention must be True or False, got str 'no'"
    ):
        SetClassifier(use_attention="no")
    x, padding, _ = make_sets(4, seed=0)
    with pytest.raises(
        TypeError,
        match=r"x must have dtype torch.float32 \(the dtype of the model's weights\), got torch.float64",
    ):
        build()(x.double(), padding)
    with pytest.raises(
        TypeError, match="x must hold floating-point numbers, got dtype torch.int64"
    ):
        build()(x.long(), padding)


def random_torch_layer(d_model=16, nhead=4, d_ff=24, seed=8):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(
        d_model, nhead, d_ff, dropout=0.0, batch_first=True
    ).eval()
    with torch.no_grad():  # non-trivial biases and norms, so a mix-up of any of them shows
        for parameter in layer.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    return layer


@pytest.mark.parametrize("nhead", [1, 2, 4])
def test_multi_head_self_attention_equals_the_library_layer(nhead):
    torch.manual_seed(9)
    mha = torch.nn.MultiheadAttention(16, nhead, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    x, padding = (
        torch.randn(5, 7, 16),
        torch.arange(7)[None, :] >= torch.tensor([7, 3, 5, 1, 6])[:, None],
    )
    with torch.no_grad():
        expected, _ = mha(x, x, x, key_padding_mask=padding, need_weights=False)
        torch.testing.assert_close(multi_head_self_attention(x, padding, mha), expected)


def test_hand_layer_is_the_library_layer_written_out():
    library = random_torch_layer()
    hand = HandEncoderLayer(16, 4, 24)
    hand.load_state_dict(library.state_dict())  # same names, same shapes: no key left over
    x, padding = torch.randn(6, 8, 16), make_sets(6, seed=8)[1]
    with torch.no_grad():
        torch.testing.assert_close(
            hand(x, src_key_padding_mask=padding),
            library(x, src_key_padding_mask=padding),
            atol=1e-5,
            rtol=1e-5,
        )


def test_same_seed_gives_the_same_initial_weights_with_any_attention():
    library, hand = build(10), build(10, attention_fn=attention)
    assert isinstance(hand.encoder, HandEncoderLayer)
    assert list(library.state_dict()) == list(hand.state_dict())
    for name, value in library.state_dict().items():
        assert torch.equal(value, hand.state_dict()[name]), name
    x, padding, _ = make_sets(32, seed=10)
    with torch.no_grad():
        torch.testing.assert_close(
            hand(x, padding), library(x, padding), atol=1e-5, rtol=1e-5
        )
    # the hand layer passes the symmetry test of the library layer too
    order = torch.randperm(8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(
            hand(x, padding), hand(x[:, order], padding[:, order]), atol=1e-6, rtol=1e-5
        )


def test_the_functions_passed_in_are_the_ones_that_run():
    calls = []

    def spy_attention(q, k, v, padding):
        calls.append((tuple(q.shape), tuple(padding.shape)))
        return attention(q, k, v, padding)

    x, padding, _ = make_sets(3, seed=11)
    model = build(11, nhead=4, attention_fn=spy_attention)
    with torch.no_grad():
        model(x, padding)
    assert calls == [
        ((12, 8, 8), (12, 8))
    ]  # B·H = 3·4 sets of 8 tokens, 32 / 4 = 8 channels per head

    def uniform_attention(
        q, k, v, padding
    ):  # ignores q and k: every real key gets the same weight
        weights = (~padding)[:, None, :].float().expand(-1, q.shape[1], -1)
        weights = weights / weights.sum(-1, keepdim=True)
        return weights @ v, weights

    with torch.no_grad():
        assert not torch.allclose(
            build(11, attention_fn=uniform_attention)(x, padding), build(11)(x, padding)
        )
        zero_pool = build(
            11, pool_fn=lambda h, padding: torch.zeros(h.shape[0], h.shape[2])
        )
        logits = zero_pool(x, padding)
        torch.testing.assert_close(logits, zero_pool.head(torch.zeros(3, 32)).squeeze(-1))
        assert isinstance(
            zero_pool.encoder, torch.nn.TransformerEncoderLayer
        )  # pool_fn alone keeps it


def test_multi_head_fn_replaces_the_whole_attention_step():
    seen = []

    def my_multi_head(x, padding, mha):
        seen.append(mha.num_heads)
        return multi_head_self_attention(x, padding, mha)

    x, padding, _ = make_sets(4, seed=12)
    with torch.no_grad():
        torch.testing.assert_close(
            build(12, multi_head_fn=my_multi_head)(x, padding),
            build(12)(x, padding),
            atol=1e-5,
            rtol=1e-5,
        )
    assert seen == [2]


def test_bad_functions_are_explained():
    with pytest.raises(TypeError, match="attention_fn must be a function, got int"):
        SetClassifier(attention_fn=3)
    with pytest.raises(TypeError, match="pool_fn must be a function, got str"):
        SetClassifier(pool_fn="mean")
    mha = torch.nn.MultiheadAttention(8, 2)  # batch_first=False
    with pytest.raises(ValueError, match="batch_first=True"):
        multi_head_self_attention(
            torch.zeros(1, 3, 8), torch.zeros(1, 3, dtype=torch.bool), mha
        )


def test_deepsets_maps_each_token_on_its_own_then_averages():
    model = build(4, use_attention=False, token_mlp=True)
    assert model.encoder is None and model.token_mlp is not None
    x, padding, _ = make_sets(8, seed=6)
    with torch.no_grad():
        tokens = model.token_mlp(model.embed_tokens(x, padding))  # (B, L, D)
        # one token's output depends on that token alone: change another and it stays put
        changed = x.clone()
        changed[:, 1] += 1.0
        moved = model.token_mlp(model.embed_tokens(changed, padding))
        torch.testing.assert_close(moved[:, 0], tokens[:, 0])
        assert not torch.allclose(moved[:, 1], tokens[:, 1])
        # and the logit is the head of the masked mean of those outputs
        pooled = (tokens * (~padding)[:, :, None]).sum(1) / (~padding).sum(1, keepdim=True)
        torch.testing.assert_close(model(x, padding), model.head(pooled).squeeze(-1))


def test_deepsets_is_the_encoder_layer_without_its_attention():
    d, h, ff = 32, 2, 64
    deepsets = count_parameters(SetClassifier(False, d, h, ff, token_mlp=True))
    baseline = count_parameters(SetClassifier(False, d, h, ff))
    transformer = count_parameters(SetClassifier(True, d, h, ff))
    feed_forward = (d * ff + ff) + (ff * d + d) + 2 * d  # linear1, linear2, one LayerNorm
    assert deepsets - baseline == feed_forward
    attention_and_norm = 4 * d * d + 4 * d + 2 * d  # in/out projections and norm1
    assert transformer - deepsets == attention_and_norm


def test_token_mlp_with_attention_is_refused():
    with pytest.raises(
        ValueError, match="token_mlp=True builds DeepSets, which has no attention"
    ):
        SetClassifier(use_attention=True, token_mlp=True)
    with pytest.raises(TypeError, match="token_mlp must be True or False"):
        SetClassifier(use_attention=False, token_mlp=1)


def test_the_recipe_builds_each_architecture_from_its_seed():
    for name, options in ARCHITECTURES.items():
        model = build_set_classifier(name)
        twin = build_set_classifier(name)
        assert (model.encoder is not None) == options["use_attention"]
        assert (model.token_mlp is not None) == options.get("token_mlp", False)
        for a, b in zip(model.state_dict().values(), twin.state_dict().values()):
            assert torch.equal(a, b)
    other = build_set_classifier("transformer", seed=1)
    assert not torch.equal(
        other.embed.weight, build_set_classifier("transformer").embed.weight
    )
    assert build_set_classifier("transformer", nhead=4).encoder.self_attn.num_heads == 4
    with pytest.raises(ValueError, match="architecture must be one of"):
        build_set_classifier("lstm")


def test_train_set_classifier_is_train_classifier_with_the_recipe():
    train, val = make_sets(256, seed=41), make_sets(64, seed=42)
    ours = train_set_classifier(
        build_set_classifier("mean baseline"), train, val, patience=2
    )
    theirs = train_classifier(
        build_set_classifier("mean baseline"),
        train,
        val,
        epochs=MAX_EPOCHS,
        learning_rate=LEARNING_RATE,
        batch_size=BATCH_SIZE,
        seed=42,
        patience=2,
    )
    assert ours.history == theirs.history and ours.best_epoch == theirs.best_epoch
    assert ours.stopped_early and len(ours.history) < MAX_EPOCHS
    assert PATIENCE >= 2
    short = train_set_classifier(
        build_set_classifier("mean baseline"), train, val, epochs=2
    )
    assert len(short.history) == 2


def test_largest_key_attention_refuses_a_nan_key_before_the_model_reads_it():
    from transformer_lab.set_classifier import largest_key_attention

    x, padding, _ = make_sets(4, seed=6)
    x[1, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"x holds NaN or infinite values, first at"):
        largest_key_attention(SetClassifier(), x, padding)


def test_every_architecture_trains_at_its_own_learning_rate():
    from transformer_lab.set_classifier import LEARNING_RATES, train_architecture

    assert set(LEARNING_RATES) == set(ARCHITECTURES)
    assert LEARNING_RATES["transformer"] == LEARNING_RATE  # the homework's transformer
    train, val = make_sets(256, seed=41), make_sets(64, seed=42)
    ours = train_architecture("DeepSets", train, val, epochs=3)
    theirs = train_set_classifier(
        build_set_classifier("DeepSets"),
        train,
        val,
        learning_rate=LEARNING_RATES["DeepSets"],
        epochs=3,
    )
    assert ours.history == theirs.history
    other = train_architecture("DeepSets", train, val, epochs=3, learning_rate=1e-3)
    assert other.history != ours.history  # a setting overrides the recipe's rate


def test_the_learning_rate_search_trains_every_architecture_at_every_candidate():
    from transformer_lab.set_classifier import learning_rate_search

    train, val = make_sets(128, seed=41), make_sets(64, seed=42)
    found = learning_rate_search(train, val, candidates=(1e-3, 1e-2), epochs=2)
    assert set(found) == set(ARCHITECTURES)
    for losses in found.values():
        assert set(losses) == {1e-3, 1e-2}
        assert all(loss > 0 for loss in losses.values())
    assert found["DeepSets"][1e-3] != found["DeepSets"][1e-2]
