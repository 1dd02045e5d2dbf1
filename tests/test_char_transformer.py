"""The character-level praise classifier of chapter 4 (and of the week-20 starter script)."""

import pandas as pd
import pytest
import torch

from transformer_lab.char_transformer import (
    LENGTH,
    MAX_CHAR_ID,
    PAD_ID,
    POSITION_STD,
    POSITION_STD_CANDIDATES,
    RUNS,
    SAMPLE_SIZE,
    WINDOW_CANDIDATES,
    PraiseClassifier,
    PraiseSplit,
    bag_collisions,
    compare_positions,
    encode_text,
    encode_texts,
    load_praise_sample,
    majority_baseline,
    position_experiment,
    position_std_search,
    predict_logits,
    split_sample,
    train_praise_model,
    train_validation_part,
    window_collisions,
)
from transformer_lab.metrics import accuracy
from transformer_lab.protocol import SealedTest
from transformer_lab.reproducibility import seed_everything


def order_only_split(length: int = 6) -> PraiseSplit:
    """A task only order can solve: 'ab…' is praise, 'ba…' is not; both have the same characters."""
    texts = ["ab xy", "ba xy", "ab yx", "ba yx"] * 24
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0] * 24)
    ids = encode_texts(texts, length)
    needs_order = torch.from_numpy(bag_collisions(texts, labels, length).needs_order)
    test = SealedTest(ids[80:], labels[80:], needs_order[80:], texts[80:])
    return PraiseSplit(ids[:64], labels[:64], ids[64:80], labels[64:80], test, 0)


def sealed_accuracy(split: PraiseSplit, model) -> float:
    """Accuracy of ``model`` on the sealed test split (scores it: once per split)."""
    return split.test.score(lambda x, y, *_: accuracy(predict_logits(model, x), y))


def test_encode_text_lowercases_caps_truncates_and_pads():
    assert encode_text("Ab", length=4) == [ord("a"), ord("b"), PAD_ID, PAD_ID]
    assert encode_text("café ’👍", length=8)[3:] == [
        MAX_CHAR_ID,
        ord(" "),
        MAX_CHAR_ID,
        MAX_CHAR_ID,
        PAD_ID,
    ]
    assert encode_text("x" * 50) == [ord("x")] * LENGTH


@pytest.mark.parametrize(
    "text, length, error",
    [(None, 4, TypeError), (17, 4, TypeError), ("", 4, ValueError), ("abc", 0, ValueError)],
)
def test_encode_text_rejects_bad_input(text, length, error):
    with pytest.raises(
        error, match="text must be a str|text is empty|length must be an int of at least 1"
    ):
        encode_text(text, length)


def test_encode_texts_shape_and_dtype():
    ids = encode_texts(["hello", "a much longer comment than that"], length=8)
    assert ids.shape == (2, 8) and ids.dtype == torch.long
    assert (ids[0, 5:] == PAD_ID).all() and (ids[1] != PAD_ID).all()


def test_bag_collisions_find_what_only_order_or_nothing_can_decide():
    texts = [
        "fast, not slow",
        "slow, not fast",
        "love it",
        "love it",
        "great app",
        "bad app",
    ]
    found = bag_collisions(texts, [1, 0, 1, 0, 1, 0], length=32)
    # same characters in another order, other label: a bag of characters must miss one of them
    assert found.shared_bag.tolist() == [True, True, True, True, False, False]
    # the very same window with both labels: nothing that reads the window can separate them
    assert found.shared_window.tolist() == [False, False, True, True, False, False]
    assert found.needs_order.tolist() == [True, True, False, False, False, False]
    # only the window counts: beyond it the two comments differ, inside it they are the same
    cut = bag_collisions(["ab ok", "ab no"], [1, 0], length=2)
    assert cut.shared_window.all() and not cut.needs_order.any()
    with pytest.raises(ValueError, match="one label per comment"):
        bag_collisions(["a", "b"], [1])
    with pytest.raises(TypeError, match="texts must be a list of strings"):
        bag_collisions("not bad", [1])


def test_load_praise_sample_is_seeded_and_labelled():
    assert len(load_praise_sample()) == SAMPLE_SIZE
    sample = load_praise_sample(n=300, seed=4)
    assert list(sample.columns) == ["feedback_text", "is_praise"] and len(sample) == 300
    assert set(sample["is_praise"]) == {0, 1} and sample.index.is_unique
    pd.testing.assert_frame_equal(sample, load_praise_sample(n=300, seed=4))
    assert not sample.index.equals(load_praise_sample(n=300, seed=5).index)
    with pytest.raises(ValueError, match="n must be between 1 and"):
        load_praise_sample(n=0)


def test_split_sample_partitions_the_sample_reproducibly():
    sample = load_praise_sample(n=200, seed=0)
    split = split_sample(sample, length=16, seed=3)
    assert split.x_train.shape == (120, 16) and split.x_validation.shape == (40, 16)
    assert len(split.test) == 40 and split.y_train.dtype == torch.float32
    x_test, y_test, needs_order, texts = split.test.score(lambda *parts: parts)
    assert torch.equal(encode_texts(texts, 16), x_test) and needs_order.dtype == torch.bool
    again = split_sample(sample, length=16, seed=3)
    assert torch.equal(split.x_validation, again.x_validation)
    total = split.y_train.sum() + split.y_validation.sum() + y_test.sum()
    assert total == sample["is_praise"].sum()
    # the test split is sealed: scored once
    with pytest.raises(RuntimeError, match="already"):
        split.test.score(lambda *parts: parts)


def test_split_sample_rejects_bad_input():
    with pytest.raises(ValueError, match="missing \\['is_praise'\\]"):
        split_sample(pd.DataFrame({"feedback_text": ["a"]}))


def test_without_positions_the_model_is_a_bag_of_characters():
    seed_everything(0)
    model = PraiseClassifier(use_positions=False).eval()
    ids = encode_texts(
        ["fast, not slow at all", "slow, not fast at all"]
    )  # both fit the window
    shuffled = ids[:, torch.randperm(LENGTH, generator=torch.Generator().manual_seed(1))]
    with torch.no_grad():
        logits = model(torch.cat([ids, shuffled]))
    assert torch.allclose(logits, logits[0].expand(4), atol=1e-6)


def test_with_positions_order_changes_the_output():
    seed_everything(0)
    model = PraiseClassifier(use_positions=True).eval()
    with torch.no_grad():
        logits = model(encode_texts(["fast, not slow at all", "slow, not fast at all"]))
    assert abs(logits[0] - logits[1]) > 1e-4


def test_padding_does_not_change_the_prediction():
    seed_everything(0)
    model = PraiseClassifier(use_positions=True).eval()
    with torch.no_grad():
        short, padded = (
            model(encode_texts(["great app"], length=9)),
            model(encode_texts(["great app"], length=LENGTH)),
        )
    assert torch.allclose(short, padded, atol=1e-6)


def test_both_variants_start_from_the_same_weights():
    seed_everything(7)
    with_pos = PraiseClassifier(use_positions=True).state_dict()
    seed_everything(7)
    without_pos = PraiseClassifier(use_positions=False).state_dict()
    assert all(torch.equal(with_pos[name], without_pos[name]) for name in with_pos)


@pytest.mark.parametrize(
    "ids, error, message",
    [
        ([[1, 2]], TypeError, "ids must be a torch.Tensor"),
        (
            torch.ones(2, 3, 4, dtype=torch.long),
            ValueError,
            r"ids should have shape \(N, L\)",
        ),
        (torch.ones(2, 3), ValueError, "long integers"),
        (torch.ones(2, LENGTH + 1, dtype=torch.long), ValueError, f"L<={LENGTH}"),
    ],
)
def test_model_rejects_bad_ids(ids, error, message):
    with pytest.raises(error, match=message):
        PraiseClassifier()(ids)


def test_heads_must_divide_the_width():
    with pytest.raises(ValueError, match="d_model=16 is not divisible by nhead=5"):
        PraiseClassifier(nhead=5)


def test_positions_solve_an_order_only_task_that_a_bag_cannot():
    options = {"max_epochs": 30, "patience": None, "batch_size": 16}
    with_pos = train_praise_model(order_only_split(), True, seed=0, **options)
    without_pos = train_praise_model(order_only_split(), False, seed=0, **options)
    assert sealed_accuracy(order_only_split(), with_pos.model) == 1.0
    # identical bags of characters, opposite labels: a coin flip at best
    assert sealed_accuracy(order_only_split(), without_pos.model) == 0.5


def test_training_stops_early_on_validation_and_is_reproducible():
    # without positions the order-only task cannot be learned: the validation loss stalls
    split = order_only_split()
    first = train_praise_model(split, False, seed=3, max_epochs=30, patience=2)
    second = train_praise_model(split, False, seed=3, max_epochs=30, patience=2)
    assert torch.equal(
        predict_logits(first.model, split.x_validation),
        predict_logits(second.model, split.x_validation),
    )
    history = first.stopping.history
    assert first.stopping.stopped_early and len(history) == first.stopping.best_epoch + 2
    best = min(loss for _, loss in history)
    assert history[first.stopping.best_epoch - 1][1] == best
    with pytest.raises(ValueError, match="epochs must be an int of at least 1"):
        train_praise_model(split, True, max_epochs=0)


def test_majority_baseline():
    assert (
        majority_baseline(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.0, 1.0, 0.0, 0.0]))
        == 0.75
    )
    assert (
        majority_baseline(torch.tensor([1.0, 1.0, 0.0]), torch.tensor([0.0, 1.0, 0.0, 0.0]))
        == 0.25
    )


def test_compare_positions_scores_every_seed_and_variant_once():
    split = order_only_split()
    result = compare_positions(split, seeds=(0, 1), max_epochs=2, batch_size=32)
    assert list(result.scores.columns) == [
        "split",
        "seed",
        "positions",
        "best_epoch",
        "epochs",
        "stopped_early",
        "validation_loss",
        "accuracy",
        "log_loss",
        "needs order",
        "rest",
    ]
    assert result.scores[["seed", "positions"]].values.tolist() == [
        [0, "with"],
        [0, "without"],
        [1, "with"],
        [1, "without"],
    ]
    assert set(result.correct) == {(0, True), (0, False), (1, True), (1, False)}
    assert result.correct[0, True].shape == (len(result.y_test),) == (16,)
    # every test comment of the order-only task needs order
    assert result.needs_order.all() and result.scores["rest"].isna().all()
    assert result.scores["accuracy"].tolist() == [
        c.mean().item() for c in result.correct.values()
    ]
    with pytest.raises(RuntimeError, match="already"):
        compare_positions(split, seeds=(0,), max_epochs=1)
    with pytest.raises(ValueError, match="at least one seed"):
        compare_positions(order_only_split(), seeds=())


def test_position_experiment_trains_each_split_once():
    sample = load_praise_sample(n=60, seed=1)
    results = position_experiment(((0, 0), (1, 0), (0, 1)), sample, length=8, max_epochs=1)
    assert [r.scores["split"].iloc[0] for r in results] == [0, 1]
    assert results[0].scores["seed"].tolist() == [0, 0, 1, 1]
    assert RUNS and all(len(run) == 2 for run in RUNS)
    with pytest.raises(ValueError, match="at least one"):
        position_experiment(())


def test_encode_texts_refuses_a_single_string_and_an_empty_list():
    with pytest.raises(TypeError, match="texts must be a list of strings .*not a str"):
        encode_texts("hello")
    with pytest.raises(ValueError, match="texts"):
        encode_texts([])
    with pytest.raises(TypeError, match="length must be an int, got bool True"):
        encode_text("hi", True)


def test_labels_and_shares_are_checked():
    sample = pd.DataFrame({"feedback_text": ["good", "bad"] * 4, "is_praise": [0, 2] * 4})
    with pytest.raises(
        ValueError, match=r"is_praise must hold only the classes 0 and 1, got \[2.0\]"
    ):
        split_sample(sample)
    with pytest.raises(ValueError, match="y_train is empty"):
        majority_baseline(torch.zeros(0), torch.zeros(3))
    with pytest.raises(TypeError, match="n must be an int, got bool True"):
        load_praise_sample(True)


class Doubled(PraiseClassifier):
    """A subclass with its own forward, as the week-20 starter's students write one."""

    def forward(self, ids, padding=None):
        return 2 * super().forward(ids, padding)


def test_model_class_trains_a_subclass_from_the_same_initial_weights():
    split = order_only_split()
    mine = train_praise_model(split, False, seed=4, max_epochs=1, model_class=Doubled).model
    assert type(mine) is Doubled and not mine.training
    seed_everything(4)
    fresh = PraiseClassifier(False, length=split.x_train.shape[1])
    trained_from = train_praise_model(split, False, seed=4, max_epochs=1).model
    assert not torch.equal(
        trained_from.embed.weight, fresh.embed.weight
    )  # training moved it...
    seed_everything(4)
    assert torch.equal(
        Doubled(False, length=split.x_train.shape[1]).embed.weight, fresh.embed.weight
    )  # ...same start
    with pytest.raises(
        TypeError, match="model_class must be PraiseClassifier or a subclass"
    ):
        train_praise_model(split, False, max_epochs=1, model_class=torch.nn.Linear)


def test_the_window_is_the_candidate_with_most_comments_that_need_order_on_train_validation():
    sample = load_praise_sample()
    counts = window_collisions(sample)
    assert list(counts.index) == list(WINDOW_CANDIDATES)
    assert counts["needs_order"].idxmax() == LENGTH
    # the counts read only the training and validation rows of split 0
    texts, labels = train_validation_part(sample, seed=0)
    split = split_sample(sample, seed=0)
    assert len(texts) == len(split.y_train) + len(split.y_validation) == len(labels)
    test_texts = split.test.score(lambda *tensors: tensors[3])
    assert len(set(test_texts) & set(texts)) < len(test_texts) // 20  # only duplicates


def test_position_std_search_reports_each_std_and_leaves_the_test_sealed():
    sample = load_praise_sample(n=80, seed=2)
    found = position_std_search(sample, stds=(1.0, 0.05), max_epochs=2, batch_size=32)
    assert list(found.index) == [1.0, 0.05]
    assert (found["validation_loss"] > 0).all() and (found["best_epoch"] >= 1).all()
    assert POSITION_STD in POSITION_STD_CANDIDATES


def test_compare_positions_scores_a_probe_with_every_model():
    split = order_only_split()
    probe = encode_texts(["ab xy", "ba xy", "ab ab"], 6)
    result = compare_positions(split, seeds=(0,), probe=probe, max_epochs=1, batch_size=32)
    assert set(result.probe_logits) == {(0, True), (0, False)}
    assert result.probe_logits[0, True].shape == (3,)
    without = result.probe_logits[0, False]
    assert torch.allclose(without[0], without[1], atol=1e-5)  # the same bag
    assert compare_positions(order_only_split(), max_epochs=1).probe_logits == {}
