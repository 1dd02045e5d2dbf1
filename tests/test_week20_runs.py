"""transformer_lab.week20_runs: what the Week-20 starter runs, tested apart from the starter."""

import math

import numpy as np
import pytest
import torch

from transformer_lab.broken_transformer import BrokenPraiseClassifier
from transformer_lab.char_transformer import PAD_ID, PraiseClassifier, encode_texts
from transformer_lab.mirrored_pairs import PairOutcomes
from transformer_lab.pooling import masked_mean
from transformer_lab.power import detectable_effect, detectable_effect_over_runs
from transformer_lab.protocol import seed_interval
from transformer_lab.week20_runs import (
    TASK1_SPLIT_SEED,
    Scored,
    as_namespace,
    detectable_gaps,
    model_class,
    positions_experiment,
    print_gaps,
    print_power,
    seed_gaps,
    task1_design,
    task1_pairs,
    week_split,
)


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


# --- Task 1: the natural split, the mirrored pairs and what a run can detect -----------------------


def test_task1_pair_sets_are_disjoint_and_repeat_no_comment():
    from transformer_lab.datasets import load_feedback
    from transformer_lab.mirrored_pairs import window_key

    validation, test = task1_pairs(48, 50)
    assert len(validation) == len(test) == 50
    first = {window_key(text) for text in validation.texts}
    second = {window_key(text) for text in test.texts}
    corpus = {window_key(text) for text in load_feedback()["feedback_text"]}
    assert not first & second and not (first | second) & corpus


def test_task1_pairs_say_which_setting_leaves_too_few():
    with pytest.raises(ValueError, match=r"400 mirrored pairs per set at a window of 24"):
        task1_pairs(24, 400)


def test_detectable_gaps_are_the_power_modules_worst_case():
    gaps = detectable_gaps(800, 40, 400)
    assert gaps["all"] == pytest.approx(detectable_effect(1.0, 800))
    assert gaps["needs order"] == pytest.approx(detectable_effect(1.0, 40))
    assert gaps["pairs"] == pytest.approx(detectable_effect(1.0, 400))
    assert gaps["pairs"] < gaps["needs order"]
    assert math.isnan(detectable_gaps(800, 0, 400)["needs order"])


def test_task1_design_counts_the_default_validation_split():
    design = task1_design(n_comments=500, n_pairs=100)
    data = week_split(500, 48, TASK1_SPLIT_SEED)
    assert design.n_comments == len(data.split.y_validation)
    assert design.n_needs_order == int(data.needs_order_validation.sum())
    assert design.detectable == detectable_gaps(
        design.n_comments, design.n_needs_order, 100
    )


def outcomes(read, backwards):
    return PairOutcomes(
        torch.tensor(read, dtype=torch.float), torch.tensor(backwards, dtype=torch.float)
    )


def scored(hits, read, backwards):
    return Scored(torch.tensor(hits, dtype=torch.float), outcomes(read, backwards))


def test_seed_gaps_pair_the_models_and_read_the_pairs_net():
    needs = torch.tensor([True, True, False, False])
    results = {
        (0, "with"): scored([1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 1, 0]),
        (0, "yours"): scored([0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]),
    }
    gaps = seed_gaps(results, needs, 0)
    assert gaps["all"].estimate == pytest.approx(0.0)
    assert gaps["needs order"].estimate == pytest.approx(0.5)
    assert gaps["rest"].estimate == pytest.approx(-0.5)
    # the model blind to order reads no pair either way: the gap is the other model's net
    assert gaps["pairs net"].estimate == pytest.approx(results[0, "with"].pairs.net) == 0.25
    # a "without" model that reads order is not blind: no pairs gap is claimed for it
    results[0, "yours"] = scored([0, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0])
    assert seed_gaps(results, needs, 0)["pairs net"] is None
    assert seed_gaps(results, torch.zeros(4, dtype=torch.bool), 0)["needs order"] is None


def test_gaps_and_power_over_one_seed_and_over_several(capsys):
    needs = torch.tensor([True, False, False, False])
    results = {}
    for seed, read in ((0, [1, 1, 0, 0]), (1, [1, 0, 0, 0]), (2, [1, 1, 1, 0])):
        results[seed, "with"] = scored([1, 1, 0, 1], read, [0, 0, 0, 0])
        results[seed, "yours"] = scored([1, 0, 0, 1], [0] * 4, [0] * 4)
    gaps = print_gaps(results, needs, [0])
    out = capsys.readouterr().out
    assert "seed 0, pairs net: +0.500 (95 % CI" in out and "not measured" in out
    gaps = print_gaps(results, needs, [0, 1, 2])
    out = capsys.readouterr().out
    assert gaps["pairs net"] == pytest.approx([0.5, 0.25, 0.75])
    assert "mean over the 3 seeds (95 % CI from the spread of their gaps)" in out
    assert f"pairs net: {seed_interval([0.5, 0.25, 0.75])}" in out
    print_power(800, 40, 400, gaps)
    out = capsys.readouterr().out
    one = detectable_gaps(800, 40, 400)
    assert f"a gap of {one['all']:.3f} on all 800 comments" in out
    assert f"{one['pairs']:.3f} in net share on 400 pairs" in out
    runs = detectable_effect_over_runs(float(np.std([0.5, 0.25, 0.75], ddof=1)), 3)
    assert (
        "over 3 seeds, at the spread of their gaps:" in out
        and f"pairs net {runs:.3f}" in out
    )


def test_task1_scores_the_test_pairs_only_with_the_test_split(capsys):
    def forward(model, ids, padding):
        x = model.encoder(model.embed(ids), src_key_padding_mask=padding)
        return model.head(masked_mean(x, padding)).squeeze(-1)

    settings = dict(
        window=48,
        split_seed=0,
        max_epochs=1,
        patience=None,
        seeds=[0],
        n_comments=400,
        n_pairs=20,
    )
    scores = positions_experiment(forward, **settings)
    out = capsys.readouterr().out
    assert "scored on the validation split" in out and "validation pairs" in out
    assert set(scores["model"]) == {"with", "yours"}
    assert scores.set_index("model").loc["yours", "pairs net"] == 0.0
    positions_experiment(forward, test=True, **settings)
    out = capsys.readouterr().out
    assert "scored on the test split" in out and "test pairs" in out


def test_task6_flags_default_to_the_starters_settings():
    """Task 6 varies the token length (and the vocabulary) from the command line."""
    import types

    from transformer_lab.week20_runs import TASK6_BPE_LENGTH, TASK6_BPE_VOCAB, parse

    settings = types.SimpleNamespace(
        WINDOW=48,
        SPLIT_SEED=0,
        MAX_EPOCHS=100,
        PATIENCE=10,
        TASK1_COMMENTS=4000,
        N_PAIRS=400,
        TOY_SEED=5,
        BPE_VOCAB=TASK6_BPE_VOCAB,
        BPE_LENGTH=TASK6_BPE_LENGTH,
    )
    defaults = parse([], settings)
    assert (defaults.bpe_length, defaults.bpe_vocab) == (TASK6_BPE_LENGTH, TASK6_BPE_VOCAB)
    changed = parse(["--tokens", "--bpe-length", "16", "--bpe-vocab", "600"], settings)
    assert (changed.bpe_length, changed.bpe_vocab) == (16, 600)


def test_debug_prints_the_majority_baseline_first(capsys):
    """Task 4's --debug: the majority baseline, then each model's run or its error."""
    from transformer_lab.char_transformer import majority_baseline
    from transformer_lab.week20_runs import debug_experiment

    def repaired(model, ids, padding):
        raise NotImplementedError("not yet")

    debug_experiment(
        repaired,
        window=48,
        split_seed=0,
        max_epochs=1,
        patience=None,
        seed=0,
        n_comments=400,
    )
    lines = capsys.readouterr().out.splitlines()
    split = week_split(400, 48, 0).split
    expected = majority_baseline(split.y_train, split.y_validation)
    assert lines[0] == (
        f"always answering the training majority scores {expected:.3f} on the validation split"
    )
    assert lines[2].startswith("repaired: raised NotImplementedError")
