"""transformer_lab.week20_runs: what the Week-20 starter runs, tested apart from the starter."""

import math

import pytest
import torch

from transformer_lab.char_transformer import PAD_ID, PraiseClassifier
from transformer_lab.week20_runs import (
    as_namespace,
    mean_interval,
    model_class,
    three_way_split,
)


def test_the_three_splits_are_disjoint_cover_the_sample_and_follow_the_seed():
    split = three_way_split(500, 24, seed=3)
    sizes = len(split.fit.y_train), len(split.fit.y_test), len(split.y_test)
    assert sizes == (300, 100, 100)
    rows = torch.cat([split.fit.x_train, split.fit.x_test, split.x_test])
    assert rows.shape == (500, 24)
    again = three_way_split(500, 24, seed=3)
    assert torch.equal(again.x_test, split.x_test)
    other = three_way_split(500, 24, seed=4)
    assert not torch.equal(other.x_test, split.x_test)
    assert split.texts_test and len(split.texts_test) == 100


def test_mean_interval_is_a_student_t_interval():
    mean, half = mean_interval([0.1, 0.2, 0.3])
    assert mean == pytest.approx(0.2)
    assert half == pytest.approx(4.302653 * 0.1 / math.sqrt(3), rel=1e-5)
    assert math.isnan(mean_interval([0.5])[1])


def test_model_class_runs_the_students_forward_with_the_default_padding():
    seen = {}

    def forward(model, ids, padding):
        seen["padding"] = padding
        return model.head(model.embed(ids).mean(dim=1)).squeeze(-1)

    cls = model_class(forward)
    assert issubclass(cls, PraiseClassifier) and cls.__name__ == "forward"
    ids = torch.tensor([[5, 6, PAD_ID]])
    assert cls()(ids).shape == (1,)
    assert seen["padding"].tolist() == [[False, False, True]]


def test_as_namespace_reads_globals_or_a_module():
    assert as_namespace({"EPOCHS": 3}).EPOCHS == 3
    assert as_namespace(math).pi == math.pi
