"""The character-level praise classifier of chapter 4 (and of the week-20 starter script)."""

import pandas as pd
import pytest
import torch

from transformer_lab.char_transformer import (
    LENGTH,
    MAX_CHAR_ID,
    PAD_ID,
    PraiseClassifier,
    PraiseSplit,
    compare_positions,
    encode_text,
    encode_texts,
    load_praise_sample,
    majority_baseline,
    order_sensitive,
    predict_logits,
    split_sample,
    train_and_score,
    train_praise_model,
)
from transformer_lab.reproducibility import seed_everything


def order_only_split(length: int = 6) -> PraiseSplit:
    """A task only order can solve: 'ab…' is praise, 'ba…' is not; both have the same characters."""
    texts = ["ab xy", "ba xy", "ab yx", "ba yx"] * 24
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0] * 24)
    ids = encode_texts(texts, length)
    return PraiseSplit(ids[:64], labels[:64], ids[64:], labels[64:], texts[64:])


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


def test_order_sensitive_rule_sees_only_the_visible_characters():
    texts = [
        "not bad at all",
        "Great, but slow",
        "I can’t log in",
        "love it",
        "nothing",
        "notable",
        "x" * 40 + " not",
    ]
    assert order_sensitive(texts, length=32).tolist() == [
        True,
        True,
        True,
        False,
        True,
        False,
        False,
    ]


def test_load_praise_sample_is_seeded_and_labelled():
    sample = load_praise_sample(n=300, seed=4)
    assert list(sample.columns) == ["feedback_text", "is_praise"] and len(sample) == 300
    assert set(sample["is_praise"]) == {0, 1} and sample.index.is_unique
    pd.testing.assert_frame_equal(sample, load_praise_sample(n=300, seed=4))
    assert not sample.index.equals(load_praise_sample(n=300, seed=5).index)
    with pytest.raises(ValueError, match="n must be between 1 and"):
        load_praise_sample(n=0)


def test_split_sample_partitions_the_sample_reproducibly():
    sample = load_praise_sample(n=200, seed=0)
    split = split_sample(sample, length=16, test_share=0.25, seed=3)
    assert split.x_train.shape == (150, 16) and split.x_test.shape == (50, 16)
    assert split.y_train.dtype == torch.float32 and len(split.texts_test) == 50
    again = split_sample(sample, length=16, test_share=0.25, seed=3)
    assert torch.equal(split.x_test, again.x_test) and split.texts_test == again.texts_test
    assert torch.equal(encode_texts(split.texts_test, 16), split.x_test)
    assert split.y_train.sum() + split.y_test.sum() == sample["is_praise"].sum()


def test_split_sample_rejects_bad_input():
    with pytest.raises(ValueError, match="missing \\['is_praise'\\]"):
        split_sample(pd.DataFrame({"feedback_text": ["a"]}))
    with pytest.raises(ValueError, match="test_share must be strictly between 0 and 1"):
        split_sample(load_praise_sample(n=10), test_share=1.0)


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
    split = order_only_split()
    with_pos = train_and_score(True, seed=0, split=split, epochs=30, batch_size=16)
    without_pos = train_and_score(False, seed=0, split=split, epochs=30, batch_size=16)
    assert with_pos == 1.0
    assert (
        without_pos == 0.5
    )  # identical bags of characters, opposite labels: a coin flip at best


def test_training_is_reproducible_and_validated():
    split = order_only_split()
    first = predict_logits(train_praise_model(split, True, seed=3, epochs=2), split.x_test)
    second = predict_logits(train_praise_model(split, True, seed=3, epochs=2), split.x_test)
    assert torch.equal(first, second)
    with pytest.raises(ValueError, match="epochs must be an int of at least 1"):
        train_praise_model(split, True, epochs=0)


def test_majority_baseline():
    assert (
        majority_baseline(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0.0, 1.0, 0.0, 0.0]))
        == 0.75
    )
    assert (
        majority_baseline(torch.tensor([1.0, 1.0, 0.0]), torch.tensor([0.0, 1.0, 0.0, 0.0]))
        == 0.25
    )


def test_compare_positions_scores_every_seed_and_variant():
    split = order_only_split()
    result = compare_positions(split, seeds=(0, 1), epochs=2, batch_size=32)
    assert list(result.scores.columns) == [
        "seed",
        "positions",
        "all",
        "order-sensitive",
        "rest",
    ]
    assert result.scores[["seed", "positions"]].values.tolist() == [
        [0, "with"],
        [0, "without"],
        [1, "with"],
        [1, "without"],
    ]
    assert set(result.logits) == {(0, True), (0, False), (1, True), (1, False)}
    assert result.logits[0, True].shape == (len(split.y_test),)
    with pytest.raises(ValueError, match="at least one seed"):
        compare_positions(split, seeds=())


def test_encode_texts_refuses_a_single_string_and_keeps_the_shape_when_empty():
    with pytest.raises(TypeError, match="texts must be a list of strings .*not a str"):
        encode_texts("hello")
    assert encode_texts([]).shape == (0, LENGTH) and encode_texts([], 5).shape == (0, 5)
    with pytest.raises(TypeError, match="length must be an int, got bool True"):
        encode_text("hi", True)
    with pytest.raises(TypeError, match="texts must be a list of strings"):
        order_sensitive("not bad")


def test_labels_and_shares_are_checked():
    sample = pd.DataFrame({"feedback_text": ["good", "bad"] * 4, "is_praise": [0, 2] * 4})
    with pytest.raises(
        ValueError, match=r"is_praise must hold only the classes 0 and 1, got \[2.0\]"
    ):
        split_sample(sample)
    with pytest.raises(ValueError, match="test_share must be a finite number, got nan"):
        split_sample(sample.assign(is_praise=[0, 1] * 4), test_share=float("nan"))
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
    mine = train_praise_model(split, False, seed=4, epochs=1, model_class=Doubled)
    assert type(mine) is Doubled and not mine.training
    seed_everything(4)
    fresh = PraiseClassifier(False, length=split.x_train.shape[1])
    trained_from = train_praise_model(split, False, seed=4, epochs=1)
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
        train_praise_model(split, False, epochs=1, model_class=torch.nn.Linear)


def test_sinusoidal_positions_follow_the_formula():
    from transformer_lab.char_transformer import sinusoidal_positions

    table = sinusoidal_positions(32, 24)
    assert table.shape == (32, 24)
    torch.testing.assert_close(
        table[0], torch.tensor([0.0, 1.0] * 12)
    )  # position 0: every clock at its start
    torch.testing.assert_close(
        table[:, 0], torch.sin(torch.arange(32.0))
    )  # the fastest clock: one radian a step
    torch.testing.assert_close(table[:, 1], torch.cos(torch.arange(32.0)))
    slowest = 10_000 ** (-22 / 24)
    torch.testing.assert_close(table[:, 22], torch.sin(torch.arange(32.0) * slowest))
    assert (
        len({tuple(row) for row in table.round(decimals=4).tolist()}) == 32
    )  # every position distinct
    with pytest.raises(ValueError, match="d_model must be even"):
        sinusoidal_positions(4, 5)
