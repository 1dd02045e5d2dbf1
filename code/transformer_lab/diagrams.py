"""Block diagrams of the architecture, drawn with matplotlib patches, arrows and text.

Three pictures a first-time reader needs: PyTorch's encoder layer with its residual paths, how
multi-head attention splits and rejoins the width, and which cells of the (B, Lq, Lk) score tensor
a padding mask and a causal mask hide. Every function returns a ``matplotlib.figure.Figure`` about
7 inches wide (the book's page width at its dpi); no text is smaller than 10 pt. The fills are tints
of the Okabe–Ito palette and every block is also named in words, so no reader needs the colours.

Coordinates are inches: the axes fill the figure and one data unit is one inch.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch, Rectangle

from transformer_lab.encoder import ENCODER_LAYER_BLOCKS
from transformer_lab.plotting import LINE_COLOURS, use_book_style

# Light tints of the Okabe–Ito colours (black text stays readable on each) and the strong colours
# for edges. Blocks of one kind share a colour; the words on each block carry the meaning.
FILLS = {
    "attention": "#C6E5F7",  # sky blue tint
    "feed_forward": "#BFE6DB",  # bluish green tint
    "activation": "#FAF5B8",  # yellow tint
    "norm": "#F7DFAF",  # orange tint
    "dropout": "#E6E6E6",  # grey
    "projection": "#EED3E3",  # reddish purple tint
    "allowed": "#C6E5F7",
    "blocked": "#3B3B3B",
}
EDGE = "#333333"
RESIDUAL = LINE_COLOURS[0]  # Okabe–Ito blue
TEXT_PT = 11
SMALL_PT = 10

# The encoder layer's blocks as the diagram draws them: (name, what it is, kind of block), in
# the order data flows, read from ``encoder.ENCODER_LAYER_BLOCKS`` (the one list of them).
ENCODER_BLOCKS: tuple[tuple[str, str, str], ...] = tuple(
    (name, what, kind) for name, what, kind, _ in ENCODER_LAYER_BLOCKS
)


def _canvas(width: float, height: float) -> tuple[Figure, plt.Axes]:
    """A blank figure of ``width`` × ``height`` inches whose data units are inches."""
    use_book_style()
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _box(
    ax,
    centre: tuple[float, float],
    size: tuple[float, float],
    title: str,
    subtitle: str = "",
    kind: str = "dropout",
) -> dict[str, float]:
    """Draw a rounded block with a title (and an optional second line); return its edges."""
    (x, y), (w, h) = centre, size
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y - h / 2),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.06",
            facecolor=FILLS[kind],
            edgecolor=EDGE,
            linewidth=1.0,
        )
    )
    if subtitle:
        ax.text(
            x,
            y + 0.09,
            title,
            ha="center",
            va="center",
            fontsize=TEXT_PT,
            fontweight="bold",
        )
        ax.text(x, y - 0.12, subtitle, ha="center", va="center", fontsize=SMALL_PT)
    else:
        ax.text(x, y, title, ha="center", va="center", fontsize=TEXT_PT, fontweight="bold")
    return {
        "left": x - w / 2,
        "right": x + w / 2,
        "top": y + h / 2,
        "bottom": y - h / 2,
        "x": x,
        "y": y,
    }


def _adder(ax, centre: tuple[float, float], radius: float = 0.15) -> dict[str, float]:
    """Draw a residual sum as a circled plus sign; return its edges."""
    x, y = centre
    ax.add_patch(Circle(centre, radius, facecolor="white", edgecolor=EDGE, linewidth=1.2))
    ax.text(x, y - 0.01, "+", ha="center", va="center", fontsize=13, fontweight="bold")
    return {
        "left": x - radius,
        "right": x + radius,
        "top": y + radius,
        "bottom": y - radius,
        "x": x,
        "y": y,
    }


def _arrow(
    ax,
    start: tuple[float, float],
    end: tuple[float, float],
    colour: str = EDGE,
    width: float = 1.2,
) -> None:
    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=11,
            color=colour,
            linewidth=width,
            shrinkA=0,
            shrinkB=0,
        )
    )


def _path(
    ax, points: Sequence[tuple[float, float]], colour: str = EDGE, width: float = 1.2
) -> None:
    """A polyline whose last segment ends in an arrow head."""
    xs, ys = zip(*points[:-1])
    ax.plot(xs, ys, color=colour, linewidth=width, solid_capstyle="butt")
    _arrow(ax, points[-2], points[-1], colour, width)


def _chain(
    ax,
    blocks: Sequence[tuple[str, str, str, float]],
    y: float,
    start: float,
    gap: float,
    numbered: int | None,
) -> list[dict[str, float]]:
    """Lay ``blocks`` (title, subtitle, kind, width) out left to right at height ``y``, arrows between.

    A block whose kind is ``"add"`` is a residual sum. With ``numbered`` set, blocks show a number
    (counting on from ``numbered``) instead of their names, for the exercise that asks to name them.
    """
    placed, x, number = [], start, numbered
    for title, subtitle, kind, width in blocks:
        if kind == "add":
            shape = _adder(ax, (x + width / 2, y), width / 2)
        elif number is not None:
            shape = _box(ax, (x + width / 2, y), (width, 0.5), str(number), "", kind)
            number += 1
        else:
            shape = _box(ax, (x + width / 2, y), (width, 0.5), title, subtitle, kind)
        if placed:
            _arrow(ax, (placed[-1]["right"], y), (shape["left"], y))
        placed.append(shape)
        x += width + gap
    return placed


def encoder_blocks(norm_first: bool = False) -> tuple[tuple[str, str, str], ...]:
    """The encoder layer's blocks in the order data meets them: ``ENCODER_BLOCKS`` (post-norm) or,
    with ``norm_first=True``, the pre-norm order (each norm moved to the start of its sublayer)."""
    if not isinstance(norm_first, bool):
        raise TypeError(
            f"norm_first must be True or False, got {type(norm_first).__name__}"
        )
    if not norm_first:
        return ENCODER_BLOCKS
    by_name = {block[0]: block for block in ENCODER_BLOCKS}
    order = ("norm1", "self_attn", "dropout1", "norm2", "linear1", "activation", "dropout")
    return tuple(by_name[name] for name in (*order, "linear2", "dropout2"))


def encoder_layer_diagram(numbered: bool = False, norm_first: bool = False) -> Figure:
    """PyTorch's ``nn.TransformerEncoderLayer`` as a block diagram, post-norm (default) or pre-norm.

    Post-norm, top row: x → self_attn → dropout1 → (+ x) → norm1 = h; bottom row: h → linear1 →
    ReLU → dropout → linear2 → dropout2 → (+ h) → norm2. ``norm_first=True`` draws the pre-norm
    layout instead: x → norm1 → self_attn → dropout1 → (+ x) = h, then h → norm2 → linear1 → … →
    dropout2 → (+ h). Residual paths are drawn in blue; ``self_attn`` is marked as holding a dropout
    on its attention weights. ``numbered=True`` replaces the block names by numbers 1–9 (in
    ``encoder_blocks(norm_first)`` order) and leaves out every label that would name a block.
    """
    if not isinstance(numbered, bool):
        raise TypeError(f"numbered must be True or False, got {type(numbered).__name__}")
    order = encoder_blocks(norm_first)
    fig, ax = _canvas(7.0, 4.3)
    first = 1 if numbered else None
    widths = {
        "self_attn": 1.6,
        "dropout1": 0.95,
        "norm1": 0.95,
        "linear1": 0.8,
        "activation": 0.85,
        "dropout": 0.8,
        "linear2": 0.8,
        "dropout2": 0.85,
        "norm2": 0.85,
    }
    # The activation is a function, not a submodule: its block is titled by what it computes.
    blocks = [
        (subtitle, name, kind, widths[name])
        if name == "activation"
        else (name, subtitle, kind, widths[name])
        for name, subtitle, kind in order
    ]
    add = ("+", "", "add", 0.3)
    if norm_first:
        rows = [[*blocks[:3], add], [*blocks[3:], add]]
        top_add, bottom_add = 3, 6
    else:
        rows = [[*blocks[:2], add, blocks[2]], [*blocks[3:8], add, blocks[8]]]
        top_add, bottom_add = 2, 5
    top_y, bottom_y = 3.15, 1.4

    # Attention sublayer.
    ax.text(0.08, top_y, "x", ha="left", va="center", fontsize=TEXT_PT, fontweight="bold")
    ax.text(0.08, top_y - 0.3, "(B, L, D)", ha="left", va="center", fontsize=SMALL_PT)
    top = _chain(ax, rows[0], top_y, 1.05, 0.3, first)
    _arrow(ax, (0.3, top_y), (top[0]["left"], top_y))
    add1 = top[top_add]
    _path(
        ax,
        [
            (0.62, top_y),
            (0.62, top_y + 0.6),
            (add1["x"], top_y + 0.6),
            (add1["x"], add1["top"]),
        ],
        RESIDUAL,
    )
    ax.text(
        (0.62 + add1["x"]) / 2,
        top_y + 0.68,
        "residual: x skips the whole sublayer"
        if norm_first
        else "residual: x skips the attention",
        ha="center",
        va="bottom",
        fontsize=SMALL_PT,
        color=RESIDUAL,
    )
    if not numbered:
        attention = top[[name for name, _, _ in order].index("self_attn")]
        ax.text(
            attention["x"],
            attention["bottom"] - 0.08,
            "dropout inside, on its weights",
            ha="center",
            va="top",
            fontsize=SMALL_PT,
            fontstyle="italic",
        )
    ax.text(
        3.5,
        4.15,
        "attention sublayer",
        ha="center",
        va="top",
        fontsize=TEXT_PT,
        fontstyle="italic",
    )

    # h wraps from the end of the top row to the start of the bottom row.
    wrap_y = (top_y + bottom_y) / 2 + 0.05
    _path(
        ax,
        [
            (top[-1]["right"], top_y),
            (6.75, top_y),
            (6.75, wrap_y),
            (0.3, wrap_y),
            (0.3, bottom_y),
            (0.5, bottom_y),
        ],
    )
    ax.text(
        6.7, top_y + 0.08, "h", ha="right", va="bottom", fontsize=TEXT_PT, fontweight="bold"
    )

    # Feed-forward sublayer.
    bottom = _chain(ax, rows[1], bottom_y, 0.5, 0.13, None if first is None else first + 3)
    add2 = bottom[bottom_add]
    _path(
        ax,
        [
            (0.3, bottom_y),
            (0.3, bottom_y - 0.55),
            (add2["x"], bottom_y - 0.55),
            (add2["x"], add2["bottom"]),
        ],
        RESIDUAL,
    )
    ax.text(
        (0.3 + add2["x"]) / 2,
        bottom_y - 0.62,
        "residual: h skips the whole sublayer"
        if norm_first
        else "residual: h skips the feed-forward block",
        ha="center",
        va="top",
        fontsize=SMALL_PT,
        color=RESIDUAL,
    )
    _arrow(ax, (bottom[-1]["right"], bottom_y), (6.95, bottom_y))
    ax.text(
        6.95,
        bottom_y + 0.08,
        "out",
        ha="right",
        va="bottom",
        fontsize=TEXT_PT,
        fontweight="bold",
    )
    ax.text(6.95, bottom_y + 0.45, "(B, L, D)", ha="right", va="center", fontsize=SMALL_PT)
    ax.text(
        3.5,
        wrap_y - 0.12,
        "feed-forward sublayer (each token on its own)",
        ha="center",
        va="top",
        fontsize=TEXT_PT,
        fontstyle="italic",
    )
    ax.text(
        0.08,
        0.05,
        "nn.TransformerEncoderLayer(..., norm_first=True): pre-norm"
        if norm_first
        else "nn.TransformerEncoderLayer(...): PyTorch's default, post-norm",
        ha="left",
        va="bottom",
        fontsize=SMALL_PT,
    )
    return fig


def multi_head_diagram(heads: int = 4) -> Figure:
    """Multi-head self-attention as in ``nn.MultiheadAttention``, with the tensor shape on each arrow.

    x (B, L, D) → W_Q, W_K, W_V → split the D channels into H heads (B, H, L, D/H) → attention in
    every head → concatenate (B, L, D) → output projection W_O → (B, L, D). ``heads`` (2 to 6) is
    how many head lanes are drawn; the shapes stay symbolic.
    """
    if isinstance(heads, bool) or not isinstance(heads, int) or not 2 <= heads <= 6:
        raise ValueError(
            f"heads must be an int from 2 to 6 (lanes that fit the page), got {heads!r}"
        )
    fig, ax = _canvas(7.0, 6.0)
    centre, shape_x = 2.7, 2.9

    def shape_label(x: float, y: float, text: str) -> None:
        ax.text(x, y, text, ha="left", va="center", fontsize=SMALL_PT, color=RESIDUAL)

    ax.text(
        centre,
        5.8,
        "x   (B, L, D)",
        ha="center",
        va="center",
        fontsize=TEXT_PT,
        fontweight="bold",
    )
    _arrow(ax, (centre, 5.65), (centre, 5.3))
    proj = _box(
        ax,
        (centre, 5.0),
        (4.4, 0.6),
        r"project:  $Q = xW_Q,\ \ K = xW_K,\ \ V = xW_V$",
        "three learned D × D matrices",
        "projection",
    )
    _arrow(ax, (centre, proj["bottom"]), (centre, 4.15))
    shape_label(shape_x, 4.45, "Q, K, V: (B, L, D) each")
    split = _box(
        ax,
        (centre, 3.85),
        (4.4, 0.6),
        "split the D channels into H heads",
        "view as (B, L, H, D/H), then swap L and H",
        "projection",
    )
    side = centre + 2.2 + 0.15
    ax.text(
        side,
        3.85,
        "head h gets its own\nD/H channels of\nQ, K and V",
        ha="left",
        va="center",
        fontsize=SMALL_PT,
        color=EDGE,
    )

    lane_w, gap = 0.95, 0.18
    total = heads * lane_w + (heads - 1) * gap
    lanes = [centre - total / 2 + lane_w / 2 + i * (lane_w + gap) for i in range(heads)]
    head_y = 2.55
    for i, x in enumerate(lanes):
        _arrow(ax, (x, split["bottom"]), (x, head_y + 0.3))
        label = f"head {i + 1}" if i < heads - 1 else "head H"
        _box(ax, (x, head_y), (lane_w, 0.6), label, "attention", "attention")
    shape_label(side, 3.2, r"$Q_h, K_h, V_h$: (B, L, D/H)")
    ax.text(
        side,
        head_y + 0.15,
        r"$A_h = \mathrm{softmax}(Q_h K_h^\top / \sqrt{D/H})$",
        ha="left",
        va="center",
        fontsize=SMALL_PT,
    )
    ax.text(
        side, head_y - 0.15, r"$Z_h = A_h V_h$", ha="left", va="center", fontsize=SMALL_PT
    )

    concat_y = 1.3
    for x in lanes:
        _arrow(ax, (x, head_y - 0.3), (x, concat_y + 0.3))
    shape_label(side, 1.92, "A: (B, H, L, L)\nZ: (B, H, L, D/H)")
    concat = _box(
        ax,
        (centre, concat_y),
        (4.4, 0.6),
        "concatenate the heads",
        "swap H and L back, reshape to (B, L, D)",
        "projection",
    )
    _arrow(ax, (centre, concat["bottom"]), (centre, 0.55))
    shape_label(shape_x, 0.8, "(B, L, D)")
    out = _box(
        ax, (centre, 0.3), (2.6, 0.5), r"output projection $W_O$", "D × D", "projection"
    )
    _arrow(ax, (out["right"], 0.3), (out["right"] + 0.45, 0.3))
    ax.text(
        out["right"] + 0.55,
        0.3,
        "out   (B, L, D)",
        ha="left",
        va="center",
        fontsize=TEXT_PT,
        fontweight="bold",
    )
    return fig


def _mask_grid(
    ax,
    origin: tuple[float, float],
    cell: float,
    blocked: Sequence[Sequence[bool]],
    queries: Sequence[str],
    keys: Sequence[str],
) -> None:
    """A query × key grid at ``origin`` (its top-left corner); blocked cells are dark and read −∞."""
    left, top = origin
    for i, row in enumerate(blocked):
        for j, hidden in enumerate(row):
            x, y = left + j * cell, top - (i + 1) * cell
            ax.add_patch(
                Rectangle(
                    (x, y),
                    cell,
                    cell,
                    facecolor=FILLS["blocked" if hidden else "allowed"],
                    edgecolor="white",
                    linewidth=1.5,
                )
            )
            if hidden:
                ax.text(
                    x + cell / 2,
                    y + cell / 2,
                    "−∞",
                    ha="center",
                    va="center",
                    fontsize=SMALL_PT,
                    color="white",
                    fontweight="bold",
                )
    for i, name in enumerate(queries):
        ax.text(
            left - 0.06,
            top - (i + 0.5) * cell,
            name,
            ha="right",
            va="center",
            fontsize=SMALL_PT,
        )
    for j, name in enumerate(keys):
        ax.text(
            left + (j + 0.5) * cell,
            top - len(queries) * cell - 0.06,
            name,
            ha="center",
            va="top",
            fontsize=SMALL_PT,
        )
    ax.text(
        left + len(keys) * cell / 2,
        top - len(queries) * cell - 0.3,
        "key j",
        ha="center",
        va="top",
        fontsize=SMALL_PT,
        fontstyle="italic",
    )


def mask_diagram(
    tokens: Sequence[str] = ("login", "failed", "again", "<pad>", "<pad>"), real: int = 3
) -> Figure:
    """The (Lq, Lk) scores of one example with a padding mask, next to a causal mask.

    Left: a (B, Lk) key padding mask, here the row of one example, broadcast along the query axis
    (B, 1, Lk) → (B, Lq, Lk): whole key columns are blocked, and padded *queries* still get rows.
    Right: a causal mask (L, L), the same for every example: the upper triangle (the future) is
    blocked. ``tokens`` label the positions, the first ``real`` of them are real tokens.
    """
    tokens = list(tokens)
    if not 2 <= len(tokens) <= 6:
        raise ValueError(
            f"tokens must hold 2 to 6 labels (the grid must fit the page), got {len(tokens)}"
        )
    if isinstance(real, bool) or not isinstance(real, int) or not 1 <= real <= len(tokens):
        raise ValueError(
            f"real must be an int from 1 to len(tokens)={len(tokens)}, got {real!r}"
        )
    n, cell = len(tokens), 0.54
    fig, ax = _canvas(7.0, 2.7 + n * cell)
    top = 1.4 + n * cell
    padding = [j >= real for j in range(n)]

    # Left: padding mask, broadcast down the query axis.
    left = 0.85
    strip_y = top + 0.45
    ax.text(
        left + n * cell / 2,
        strip_y + 0.75,
        "padding mask (encoder)",
        ha="center",
        va="top",
        fontsize=TEXT_PT,
        fontweight="bold",
    )
    for j, hidden in enumerate(padding):
        x = left + j * cell
        ax.add_patch(
            Rectangle(
                (x, strip_y),
                cell,
                0.32,
                facecolor=FILLS["blocked" if hidden else "allowed"],
                edgecolor="white",
                linewidth=1.5,
            )
        )
        ax.text(
            x + cell / 2,
            strip_y + 0.16,
            "True" if hidden else "False",
            ha="center",
            va="center",
            fontsize=SMALL_PT,
            color="white" if hidden else "black",
        )
        if hidden:
            _arrow(ax, (x + cell / 2, strip_y - 0.02), (x + cell / 2, top + 0.02), RESIDUAL)
    ax.text(
        left - 0.06, strip_y + 0.16, "(B, Lk)", ha="right", va="center", fontsize=SMALL_PT
    )
    ax.text(
        left + real * cell - 0.06,
        top + 0.22,
        "broadcast to (B, Lq, Lk)",
        ha="right",
        va="center",
        fontsize=SMALL_PT,
        color=RESIDUAL,
    )
    blocked = [[padding[j] for j in range(n)] for _ in range(n)]
    _mask_grid(ax, (left, top), cell, blocked, tokens, tokens)
    ax.text(
        0.12,
        top - n * cell / 2,
        "query i",
        ha="center",
        va="center",
        rotation=90,
        fontsize=SMALL_PT,
        fontstyle="italic",
    )

    # Right: causal mask.
    right = 4.2
    positions = [f"t{i}" for i in range(n)]
    ax.text(
        right + n * cell / 2,
        strip_y + 0.75,
        "causal mask (decoder)",
        ha="center",
        va="top",
        fontsize=TEXT_PT,
        fontweight="bold",
    )
    ax.text(
        right + n * cell / 2,
        strip_y + 0.16,
        "(L, L): the same for every example",
        ha="center",
        va="center",
        fontsize=SMALL_PT,
    )
    blocked = [[j > i for j in range(n)] for i in range(n)]
    _mask_grid(ax, (right, top), cell, blocked, positions, positions)
    ax.text(
        right - 0.45,
        top - n * cell / 2,
        "query i",
        ha="center",
        va="center",
        rotation=90,
        fontsize=SMALL_PT,
        fontstyle="italic",
    )

    notes = (
        "Dark cells are set to −∞ before the softmax: their weight is exactly 0, and each row\n"
        "still sums to 1. Padding blocks whole key columns; padded queries still get a row,\n"
        "so pooling must drop them. A causal mask blocks the upper triangle: query i reads\n"
        "keys 0 … i, never the future."
    )
    ax.text(0.05, 0.05, notes, ha="left", va="bottom", fontsize=SMALL_PT, linespacing=1.4)
    return fig
