import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from transformer_lab.plotting import SEQUENTIAL_CMAP, heatmap, use_book_style


def test_heatmap_labels_every_axis_and_cell():
    use_book_style()
    fig, ax = plt.subplots()
    image = heatmap(ax, np.array([[0.2, 0.8], [0.5, 0.5]]), ["a", "b"], ["x", "y"], title="t")
    assert image.get_cmap().name == SEQUENTIAL_CMAP
    assert ax.get_title() == "t" and ax.get_xlabel() == "key" and ax.get_ylabel() == "query"
    assert [label.get_text() for label in ax.get_xticklabels()] == ["x", "y"]
    assert sorted(text.get_text() for text in ax.texts) == ["0.20", "0.50", "0.50", "0.80"]
    plt.close(fig)
