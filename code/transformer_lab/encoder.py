"""From one attention head to a full encoder layer: PyTorch's modules, opened up.

Shapes use B for the batch, L for positions, D (``d_model``) for the token width, H for heads.
Masks follow PyTorch's convention: **True means ignore**.
"""

import torch
from torch import nn

from transformer_lab.validation import (
    require_bool,
    require_float_tensor,
    require_int,
    require_padding,
    require_rank,
    require_size,
    require_some_key,
)

# The blocks of PyTorch's default (post-norm) ``nn.TransformerEncoderLayer``, in the order data
# flows through them: x -> [self_attn -> dropout1 -> + x -> norm1] -> [linear1 -> activation ->
# dropout -> linear2 -> dropout2 -> + -> norm2]. Each is (name of the submodule or function, what
# it is, kind of block, what it does). The one list behind the block diagram
# (``diagrams.encoder_layer_diagram``) and the table of submodules (``describe_encoder_layer``).
# The two residual sums are not modules; the diagram draws them as (+) circles.
ENCODER_LAYER_BLOCKS: tuple[tuple[str, str, str, str], ...] = (
    (
        "self_attn",
        "multi-head attention",
        "attention",
        "multi-head self-attention: every token reads every unmasked token "
        "(with its own dropout on the attention weights)",
    ),
    (
        "dropout1",
        "Dropout",
        "dropout",
        "dropout on the attention output, before the first residual sum",
    ),
    (
        "norm1",
        "LayerNorm",
        "norm",
        "layer norm after the first residual sum (input + attention)",
    ),
    (
        "linear1",
        "D → D_ff",
        "feed_forward",
        "feed-forward, first linear layer: widen each token from d_model to d_ff",
    ),
    (
        "activation",
        "ReLU",
        "activation",
        "the ReLU between the two linear layers (a function, not a submodule)",
    ),
    (
        "dropout",
        "Dropout",
        "dropout",
        "dropout inside the feed-forward block, after the activation",
    ),
    (
        "linear2",
        "D_ff → D",
        "feed_forward",
        "feed-forward, second linear layer: narrow back from d_ff to d_model",
    ),
    (
        "dropout2",
        "Dropout",
        "dropout",
        "dropout on the feed-forward output, before the second residual sum",
    ),
    (
        "norm2",
        "LayerNorm",
        "norm",
        "layer norm after the second residual sum (input + feed-forward)",
    ),
)
# What each block does, by name (the activation included: a function, not a submodule).
ENCODER_LAYER_ROLES = {name: role for name, _, _, role in ENCODER_LAYER_BLOCKS}


def check_heads(d_model: int, nhead: int) -> None:
    """Raise ``ValueError`` unless ``nhead`` heads can split a width of ``d_model`` evenly."""
    require_int("d_model", d_model, minimum=1)
    require_int("nhead", nhead, minimum=1)
    if d_model % nhead:
        raise ValueError(
            f"d_model={d_model} is not divisible by nhead={nhead}: each head gets d_model / nhead "
            f"channels, and {d_model} / {nhead} = {d_model / nhead:.2f} is not a whole number"
        )


def encoder_layer_parameters(d_model: int, nhead: int, d_ff: int, bias: bool = True) -> int:
    """Trainable parameters of one ``nn.TransformerEncoderLayer``, from the formula.

    attention: Q, K, V and output projections, 4·d² weights (+ 4·d biases);
    feed-forward: d·d_ff + d_ff·d weights (+ d_ff + d biases);
    two layer norms: 2·d scales (+ 2·d shifts).
    The number of heads does not change the count: the heads split the same d channels.
    """
    check_heads(d_model, nhead)
    require_int("d_ff", d_ff, minimum=1)
    require_bool("bias", bias)
    attention = 4 * d_model * d_model + (4 * d_model if bias else 0)
    feed_forward = 2 * d_model * d_ff + ((d_ff + d_model) if bias else 0)
    norms = 2 * d_model * (2 if bias else 1)
    return attention + feed_forward + norms


def count_parameters(module: nn.Module) -> int:
    """Number of trainable values in ``module``: the sum of ``numel()`` over its parameters."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def identity_attention(d_model: int) -> nn.MultiheadAttention:
    """A one-head ``nn.MultiheadAttention`` whose Q, K, V and output projections are identities.

    With no projections left to learn, it computes exactly softmax(x xᵀ / √D) x: the hand-written
    ``transformer_lab.attention.attention`` on (B, L, D) inputs. Dropout 0, no biases, batch first.
    """
    check_heads(d_model, 1)
    layer = nn.MultiheadAttention(d_model, 1, dropout=0.0, bias=False, batch_first=True)
    with torch.no_grad():
        # (3D, D): the Q, K and V projections stacked.
        layer.in_proj_weight.copy_(torch.eye(d_model).repeat(3, 1))
        layer.out_proj.weight.copy_(torch.eye(d_model))
    return layer


def head_weights(
    attn: nn.MultiheadAttention, x: torch.Tensor, padding: torch.Tensor | None = None
) -> torch.Tensor:
    """Per-head self-attention weights of ``attn`` on x (B, L, D): returns (B, H, L, L).

    ``padding`` (B, L) bool, True = ignore that key (``None``: every key is visible). Padded
    positions of x are replaced by 0 first, so a NaN or inf there cannot reach any weight; an
    example that is all padding is refused, as in ``attention``. Computed without gradients; the
    layer must be ``batch_first``.
    """
    if not isinstance(attn, nn.MultiheadAttention):
        raise TypeError(f"attn must be an nn.MultiheadAttention, got {type(attn).__name__}")
    if not attn.batch_first:
        raise ValueError("attn must be built with batch_first=True so x can be (B, L, D)")
    require_float_tensor(
        "x", x, attn.out_proj.weight.dtype, "the dtype of the layer's weights"
    )
    require_rank("x", x, ("B", "L", "D"))
    require_size("x", x, 2, attn.embed_dim, f"the layer's embed_dim is {attn.embed_dim}")
    if padding is not None:
        require_padding(padding, x.shape[0], x.shape[1])
        require_some_key(padding)
        x = x.masked_fill(padding[:, :, None], 0.0)
    with torch.no_grad():
        _, weights = attn(
            x, x, x, key_padding_mask=padding, need_weights=True, average_attn_weights=False
        )
    return weights


def describe_encoder_layer(layer: nn.TransformerEncoderLayer) -> list[dict[str, object]]:
    """One row per named submodule of ``layer``: name, class, parameter count, role in the block.

    Read from the module itself (``named_children``), so a PyTorch version that renames or adds a
    submodule shows up as a row with the role "not in the book's diagram".
    """
    if not isinstance(layer, nn.TransformerEncoderLayer):
        raise TypeError(
            f"layer must be an nn.TransformerEncoderLayer, got {type(layer).__name__}"
        )
    rows = []
    for name, child in layer.named_children():
        rows.append(
            {
                "submodule": name,
                "class": type(child).__name__,
                "parameters": count_parameters(child),
                "role": ENCODER_LAYER_ROLES.get(name, "not in the book's diagram"),
            }
        )
    return rows
