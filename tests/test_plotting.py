import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from transformer_lab.plotting import SEQUENTIAL_CMAP, heatmap, use_book_style


def test_heatmap_labels_every_axis_and_cell():
    use_book_style()
    fig, ax = plt.subplots()
    image = heatmap(
        ax, np.array([[0.2, 0.8], [0.5, 0.5]]), ["a", "b"], ["x", "y"], title="t"
    )
    assert image.get_cmap().name == SEQUENTIAL_CMAP
    assert ax.get_title() == "t" and ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    assert [label.get_text() for label in ax.get_xticklabels()] == ["x", "y"]
    assert sorted(text.get_text() for text in ax.texts) == ["0.20", "0.50", "0.50", "0.80"]
    plt.close(fig)


def test_heatmap_refuses_mismatched_labels_and_non_finite_values():
    fig, ax = plt.subplots()
    with pytest.raises(
        ValueError, match=r"row_labels has 2 labels but matrix has shape \(3, 3\): need 3"
    ):
        heatmap(ax, np.eye(3), ["a", "b"], ["x", "y", "z"], title="t")
    with pytest.raises(
        ValueError, match=r"matrix should have shape \(rows, columns\), got \(3\)"
    ):
        heatmap(ax, np.ones(3), ["a"], ["x", "y", "z"], title="t")
    with pytest.raises(
        ValueError, match=r"matrix holds NaN or infinite values, first at position \(0, 1\)"
    ):
        heatmap(ax, np.array([[0.0, np.nan]]), ["a"], ["x", "y"], title="t")
    plt.close(fig)
