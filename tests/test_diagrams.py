import itertools

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure
from torch import nn

from transformer_lab.diagrams import (
    ENCODER_BLOCKS,
    FILLS,
    SMALL_PT,
    encoder_blocks,
    encoder_layer_diagram,
    mask_diagram,
    multi_head_diagram,
)
from transformer_lab.encoder import ENCODER_LAYER_BLOCKS

DIAGRAMS = {
    "encoder": encoder_layer_diagram,
    "encoder numbered": lambda: encoder_layer_diagram(numbered=True),
    "pre-norm encoder": lambda: encoder_layer_diagram(norm_first=True),
    "pre-norm encoder numbered": lambda: encoder_layer_diagram(
        numbered=True, norm_first=True
    ),
    "multi-head": multi_head_diagram,
    "masks": mask_diagram,
}


@pytest.fixture(params=list(DIAGRAMS), ids=list(DIAGRAMS))
def drawn(request):
    fig = DIAGRAMS[request.param]()
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def texts(fig: Figure) -> list[matplotlib.text.Text]:
    return [
        text
        for text in fig.findobj(matplotlib.text.Text)
        if text.get_text().strip() and text.get_visible()
    ]


def words(fig: Figure) -> str:
    return "\n".join(text.get_text() for text in texts(fig))


def test_every_diagram_fits_the_page_width(drawn):
    width, height = drawn.get_size_inches()
    assert 6.5 <= width <= 7.5 and height <= 7, f"figure is {width} x {height} in"


def test_no_text_is_smaller_than_the_small_size(drawn):
    sizes = {text.get_text(): text.get_fontsize() for text in texts(drawn)}
    small = {text: size for text, size in sizes.items() if size < SMALL_PT}
    assert not small, f"labels below {SMALL_PT} pt: {small}"


def test_no_text_is_clipped_by_the_figure_edge(drawn):
    renderer = drawn.canvas.get_renderer()
    frame = drawn.bbox
    outside = [
        text.get_text()
        for text in texts(drawn)
        if not frame.contains(*text.get_window_extent(renderer).p0)
        or not frame.contains(*text.get_window_extent(renderer).p1)
    ]
    assert not outside, f"text reaching outside the figure: {outside}"


def test_no_two_labels_overlap(drawn):
    renderer = drawn.canvas.get_renderer()
    boxes = [
        (text.get_text(), text.get_window_extent(renderer).expanded(0.98, 0.9))
        for text in texts(drawn)
    ]
    clashes = [
        (a, b)
        for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2)
        if box_a.overlaps(box_b)
    ]
    assert not clashes, f"overlapping labels: {clashes}"


def test_encoder_diagram_names_every_submodule_of_pytorchs_layer():
    fig = encoder_layer_diagram()
    drawn_names = [name for name, _, _ in ENCODER_BLOCKS]
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    submodules = [name for name, _ in layer.named_children()]
    # The activation is a function, not a submodule; every submodule is a block of the diagram.
    assert sorted(submodules) == sorted(
        name for name in drawn_names if name != "activation"
    )
    assert layer.activation.__name__ == "relu" and not layer.norm_first
    labels = words(fig)
    for name in drawn_names:
        assert name in labels
    pluses = [text for text in texts(fig) if text.get_text() == "+"]
    assert len(pluses) == 2, "post-norm has exactly two residual sums"
    assert "residual" in labels and "post-norm" in labels
    # The dropout on the attention weights lives inside self_attn: the diagram says so.
    assert "dropout inside, on its weights" in labels
    # The pre-norm layout is the by-hand sheet's exercise: the default diagram must not give it.
    assert "norm1(x)" not in labels and "norm_first=True" not in labels
    plt.close(fig)


def test_pre_norm_diagram_moves_each_norm_to_the_start_of_its_sublayer():
    order = [name for name, _, _ in encoder_blocks(norm_first=True)]
    assert order == [
        "norm1",
        "self_attn",
        "dropout1",
        "norm2",
        "linear1",
        "activation",
        "dropout",
        "linear2",
        "dropout2",
    ]
    assert sorted(order) == sorted(name for name, _, _ in ENCODER_BLOCKS)
    assert encoder_blocks() == ENCODER_BLOCKS
    fig = encoder_layer_diagram(norm_first=True)
    # The block titles (bold); the activation's block is titled by what it computes.
    drawn = [
        t
        for t in texts(fig)
        if t.get_fontweight() == "bold" and t.get_text() not in {"x", "h", "+", "out"}
    ]
    # Left to right within each row, top row first: the drawn order is the data's order.
    drawn.sort(key=lambda t: (-round(t.get_position()[1], 1), t.get_position()[0]))
    titles = [t.get_text() for t in drawn]
    assert titles == [("ReLU" if name == "activation" else name) for name in order]
    assert "norm_first=True" in words(fig)
    plt.close(fig)


def test_numbered_diagrams_name_no_block_and_give_no_formula():
    for norm_first in (False, True):
        fig = encoder_layer_diagram(numbered=True, norm_first=norm_first)
        labels = words(fig)
        names = [name for name, _, _ in ENCODER_BLOCKS]
        assert not any(name in labels for name in names), labels
        assert "inside" not in labels and "h = " not in labels and "out = " not in labels
        plt.close(fig)


def test_numbered_encoder_diagram_hides_the_names_and_numbers_the_blocks():
    fig = encoder_layer_diagram(numbered=True)
    labels = [text.get_text() for text in texts(fig)]
    assert [label for label in labels if label.isdigit()] == [
        str(i) for i in range(1, len(ENCODER_BLOCKS) + 1)
    ]
    assert not any(name in labels for name, _, _ in ENCODER_BLOCKS)
    plt.close(fig)


def test_multi_head_diagram_puts_the_shapes_on_the_arrows():
    fig = multi_head_diagram(heads=3)
    labels = words(fig)
    for shape in (
        "(B, L, D)",
        "(B, L, H, D/H)",
        "(B, L, D/H)",
        "(B, H, L, D/H)",
        "(B, H, L, L)",
    ):
        assert shape in labels, shape
    assert "head 1" in labels and "head H" in labels and "head 3" not in labels
    for step in ("split", "concatenate", "output projection"):
        assert step in labels
    plt.close(fig)


def test_encoder_diagram_rejects_a_non_boolean_switch():
    with pytest.raises(TypeError, match="numbered must be True or False, got int"):
        encoder_layer_diagram(numbered=1)
    with pytest.raises(TypeError, match="norm_first must be True or False, got str"):
        encoder_layer_diagram(norm_first="yes")


@pytest.mark.parametrize("heads", [1, 7, 2.0, True])
def test_multi_head_diagram_rejects_lanes_that_do_not_fit(heads):
    with pytest.raises(ValueError, match="heads must be an int from 2 to 6"):
        multi_head_diagram(heads=heads)


def blocked_cells(fig: Figure) -> list[tuple[float, float]]:
    """Lower-left corners (inches) of the dark, blocked grid cells."""
    ax = fig.axes[0]
    dark = matplotlib.colors.to_rgba(FILLS["blocked"])
    return [
        patch.get_xy()
        for patch in ax.patches
        if isinstance(patch, matplotlib.patches.Rectangle)
        and patch.get_facecolor() == dark
        and patch.get_height() == patch.get_width()
    ]


def test_mask_diagram_blocks_whole_key_columns_and_the_upper_triangle():
    fig = mask_diagram(tokens=("a", "b", "<pad>"), real=2)
    cells = blocked_cells(fig)
    # Padding: one key column of three cells; causal: the 3 cells above the diagonal.
    assert len(cells) == 3 + 3
    padding_cells = sorted(cells)[:3]
    assert len({round(x, 6) for x, _ in padding_cells}) == 1, (
        "padding blocks one whole column"
    )
    labels = words(fig)
    assert [text.get_text() for text in texts(fig)].count("−∞") == 6
    assert "(B, Lk)" in labels and "(B, Lq, Lk)" in labels
    plt.close(fig)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"tokens": ("a",)}, "tokens must hold 2 to 6"),
        ({"tokens": ("a", "b"), "real": 0}, "real must be an int"),
        ({"tokens": ("a", "b"), "real": 3}, "real must be an int"),
    ],
)
def test_mask_diagram_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        mask_diagram(**kwargs)


def test_the_diagram_draws_the_blocks_the_encoder_module_lists():
    # One list of the encoder layer's blocks (encoder.ENCODER_LAYER_BLOCKS): the diagram's is
    # read from it, so the picture and the table of submodules cannot disagree.
    assert [block[:3] for block in ENCODER_LAYER_BLOCKS] == list(ENCODER_BLOCKS)
