"""transformer_lab.week20_runs: what the Week-20 starter runs, tested apart from the starter."""

import math

import torch

from transformer_lab.broken_transformer import BrokenPraiseClassifier
from transformer_lab.char_transformer import PAD_ID, PraiseClassifier, encode_texts
from transformer_lab.week20_runs import as_namespace, model_class, week_split


def test_the_week_split_is_chapter_4s_split_with_its_texts():
    data = week_split(500, 24, seed=3)
    split = data.split
    assert torch.equal(encode_texts(data.texts_validation, 24), split.x_validation)
    assert torch.equal(encode_texts(data.texts_train, 24), split.x_train)
    assert data.needs_order_validation.shape == split.y_validation.shape
    again = week_split(500, 24, seed=3)
    assert data.texts_validation == again.texts_validation
    assert week_split(500, 24, seed=4).texts_validation != data.texts_validation


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
    assert issubclass(model_class(forward, BrokenPraiseClassifier), BrokenPraiseClassifier)


def test_as_namespace_reads_globals_or_a_module():
    assert as_namespace({"EPOCHS": 3}).EPOCHS == 3
    assert as_namespace(math).pi == math.pi
