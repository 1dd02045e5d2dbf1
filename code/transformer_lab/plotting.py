"""Figure helpers shared by every page: one colour-blind-safe style, labelled heatmaps."""

from collections.abc import Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np

from transformer_lab.validation import describe

# cividis is designed to read the same for the common colour-vision deficiencies; the line colours
# are the Okabe–Ito palette, safe for the same readers.
SEQUENTIAL_CMAP = "cividis"
LINE_COLOURS = [
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
]


def use_book_style() -> None:
    """Apply the book's matplotlib defaults (palette, colormap, readable sizes)."""
    plt.rcParams.update(
        {
            "axes.prop_cycle": matplotlib.cycler(color=LINE_COLOURS),
            "image.cmap": SEQUENTIAL_CMAP,
            "figure.dpi": 100,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "font.size": 11,
        }
    )


def heatmap(
    ax: plt.Axes,
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    xlabel: str = "key",
    ylabel: str = "query",
    annotate: bool = True,
    vmax: float | None = 1.0,
):
    """Draw a labelled weights table (rows = queries, columns = keys) on ``ax``; return the image.

    ``matrix`` (rows, columns) of finite numbers, one label per row and per column.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(
            f"matrix should have shape (rows, columns), got {describe(matrix.shape)}"
        )
    if not np.isfinite(matrix).all():
        row, col = np.argwhere(~np.isfinite(matrix))[0]
        raise ValueError(
            f"matrix holds NaN or infinite values, first at position ({row}, {col})"
        )
    for name, labels, size in (
        ("row_labels", row_labels, matrix.shape[0]),
        ("col_labels", col_labels, matrix.shape[1]),
    ):
        if len(labels) != size:
            raise ValueError(
                f"{name} has {len(labels)} labels but matrix has shape {describe(matrix.shape)}: need {size}"
            )
    image = ax.imshow(matrix, cmap=SEQUENTIAL_CMAP, vmin=0.0, vmax=vmax)
    # Long column names (plan names, words) collide when horizontal; tilt them only when needed.
    tilt = (
        {"rotation": 30, "ha": "right"}
        if max(len(str(label)) for label in col_labels) > 6
        else {}
    )
    ax.set_xticks(range(len(col_labels)), labels=list(col_labels), **tilt)
    ax.set_yticks(range(len(row_labels)), labels=list(row_labels))
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(False)
    if annotate:
        top = vmax if vmax is not None else matrix.max()
        for (row, col), value in np.ndenumerate(matrix):
            colour = "black" if value > 0.6 * top else "white"
            ax.text(
                col, row, f"{value:.2f}", ha="center", va="center", color=colour, fontsize=9
            )
    return image
