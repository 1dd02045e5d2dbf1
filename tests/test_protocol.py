"""transformer_lab.protocol: splits, early stopping, the sealed test split and the intervals."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from transformer_lab.metrics import accuracy
from transformer_lab.protocol import (
    EarlyStopping,
    Interval,
    SealedTest,
    SplitIndices,
    bootstrap_counts,
    correct,
    fit_with_early_stopping,
    paired_bootstrap,
    run_and_test_interval,
    seed_interval,
    sign_test,
    slice_interaction,
    three_way_split,
)

# --- Interval ---------------------------------------------------------------------------------


def test_interval_prints_signed_three_decimals_and_knows_zero():
    interval = Interval(0.036, 0.012, 0.060)
    assert str(interval) == "+0.036 (95 % CI +0.012 to +0.060)"
    assert interval.excludes_zero()
    assert Interval(-0.2, -0.3, -0.1, level=0.9).excludes_zero()
    assert str(Interval(-0.2, -0.3, -0.1, level=0.9)) == "-0.200 (90 % CI -0.300 to -0.100)"
    assert not Interval(0.01, -0.01, 0.03).excludes_zero()
    assert not Interval(
        0.01, 0.0, 0.03
    ).excludes_zero()  # touching zero is not excluding it


def test_interval_refuses_nonsense():
    with pytest.raises(ValueError, match="low <= high"):
        Interval(0.0, 0.1, -0.1)
    with pytest.raises(ValueError, match="level must be strictly between 0 and 1"):
        Interval(0.0, -0.1, 0.1, level=95)
    with pytest.raises(ValueError, match="low must be a finite number"):
        Interval(0.0, float("nan"), 0.1)


# --- three_way_split --------------------------------------------------------------------------


def test_splits_are_disjoint_cover_everything_and_repeat():
    split = three_way_split(1000, seed=3)
    assert isinstance(split, SplitIndices)
    parts = [split.train, split.validation, split.test]
    assert all(p.dtype == torch.int64 and p.dim() == 1 for p in parts)
    assert [len(p) for p in parts] == [600, 200, 200]
    together = torch.cat(parts)
    assert len(together.unique()) == 1000
    assert torch.equal(together.sort().values, torch.arange(1000))
    again = three_way_split(1000, seed=3)
    assert all(
        torch.equal(a, b)
        for a, b in zip(parts, [again.train, again.validation, again.test])
    )
    other = three_way_split(1000, seed=4)
    assert not torch.equal(split.test, other.test)
    assert torch.equal(split.test, split.test.sort().values)


def test_shares_are_respected():
    split = three_way_split(100, seed=0, validation_share=0.1, test_share=0.3)
    assert (len(split.train), len(split.validation), len(split.test)) == (60, 10, 30)


def test_stratified_split_keeps_the_class_mix_in_every_split():
    labels = torch.cat([torch.zeros(900), torch.ones(100)])  # 10 % positive
    split = three_way_split(1000, seed=1, stratify=labels)
    for part in (split.train, split.validation, split.test):
        assert int(labels[part].sum()) * 10 == len(part)
    # without stratification the mix of a 200-example split drifts by chance for most seeds
    drifts = [
        abs(labels[three_way_split(1000, seed=s).test].mean().item() - 0.1)
        for s in range(10)
    ]
    assert max(drifts) > 0.005
    assert torch.equal(
        torch.cat([split.train, split.validation, split.test]).sort().values,
        torch.arange(1000),
    )


def test_stratify_accepts_numpy_and_several_classes():
    classes = np.repeat([0, 1, 2], [50, 30, 20])
    split = three_way_split(100, seed=2, stratify=classes)
    assert [int((classes[split.test.numpy()] == c).sum()) for c in range(3)] == [10, 6, 4]


def test_bad_split_arguments_are_explained():
    with pytest.raises(ValueError, match="must leave examples to train on"):
        three_way_split(100, seed=0, validation_share=0.5, test_share=0.5)
    with pytest.raises(
        ValueError, match="validation_share must be strictly between 0 and 1"
    ):
        three_way_split(100, seed=0, validation_share=0.0)
    with pytest.raises(TypeError, match="seed must be an int, got str"):
        three_way_split(100, seed="0")
    with pytest.raises(ValueError, match="the test split of 4 examples is empty"):
        three_way_split(4, seed=0, validation_share=0.5, test_share=0.1)
    with pytest.raises(
        ValueError, match="stratify must hold one class per example, 10, got 9"
    ):
        three_way_split(10, seed=0, stratify=torch.zeros(9))
    with pytest.raises(TypeError, match="stratify must be a 1-D array of numbers"):
        three_way_split(10, seed=0, stratify="abc")


# --- fit_with_early_stopping ------------------------------------------------------------------


class Scripted:
    """A model whose weight counts epochs, and a validation loss read from a script."""

    def __init__(self, losses):
        self.model = nn.Linear(1, 1, bias=False)
        nn.init.zeros_(self.model.weight)
        self.losses = list(losses)
        self.epochs = 0

    def run_epoch(self):
        self.epochs += 1
        with torch.no_grad():
            self.model.weight.fill_(self.epochs)  # the weights remember the epoch
        return 1.0 / self.epochs

    def validation_loss(self):
        return self.losses[self.epochs - 1]


def test_early_stopping_stops_after_patience_and_restores_the_best_weights():
    script = Scripted([0.9, 0.5, 0.6, 0.4, 0.45, 0.5, 0.47, 0.3, 0.2, 0.1])
    fit = fit_with_early_stopping(
        script.model, script.run_epoch, script.validation_loss, 10, 3
    )
    assert isinstance(fit, EarlyStopping)
    assert fit.best_epoch == 4
    assert (
        len(fit.history) == 7 and script.epochs == 7
    )  # 3 epochs without a new best after 4
    assert fit.stopped_early
    assert script.model.weight.item() == 4.0  # the weights of epoch 4, not of epoch 7
    assert [v for _, v in fit.history] == [0.9, 0.5, 0.6, 0.4, 0.45, 0.5, 0.47]
    assert fit.history[0][0] == 1.0


def test_early_stopping_with_larger_patience_keeps_going():
    script = Scripted([0.9, 0.5, 0.6, 0.4, 0.45, 0.5, 0.47, 0.3, 0.2, 0.1])
    fit = fit_with_early_stopping(
        script.model, script.run_epoch, script.validation_loss, 10, 4
    )
    assert fit.best_epoch == 10 and not fit.stopped_early and len(fit.history) == 10
    assert script.model.weight.item() == 10.0


def test_a_run_that_improves_on_its_last_epoch_did_not_stop_early():
    script = Scripted([0.5, 0.4, 0.3])
    fit = fit_with_early_stopping(
        script.model, script.run_epoch, script.validation_loss, 3, 1
    )
    assert (fit.best_epoch, fit.stopped_early) == (3, False)


def test_no_patience_runs_every_epoch_and_keeps_the_best():
    script = Scripted([0.5, 0.1, 0.6, 0.7, 0.8, 0.9])
    fit = fit_with_early_stopping(
        script.model, script.run_epoch, script.validation_loss, 6, None
    )
    assert (len(fit.history), fit.best_epoch, fit.stopped_early) == (6, 2, False)
    assert script.model.weight.item() == 2.0


def test_nan_epochs_are_never_the_best_and_a_never_finite_run_raises():
    script = Scripted([float("nan"), 0.5, float("nan"), 0.7])
    fit = fit_with_early_stopping(
        script.model, script.run_epoch, script.validation_loss, 4, None
    )
    assert fit.best_epoch == 2
    broken = Scripted([float("nan")] * 5)
    with pytest.raises(ValueError, match=r"never finite in 2 epochs: \[\(1.0, nan\)"):
        fit_with_early_stopping(
            broken.model, broken.run_epoch, broken.validation_loss, 5, 2
        )


def test_bad_early_stopping_arguments_are_explained():
    script = Scripted([0.5])
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        fit_with_early_stopping("model", script.run_epoch, script.validation_loss, 1, 1)
    with pytest.raises(TypeError, match="run_epoch must be a function"):
        fit_with_early_stopping(script.model, 0.5, script.validation_loss, 1, 1)
    with pytest.raises(ValueError, match="patience must be an int of at least 1, got 0"):
        fit_with_early_stopping(
            script.model, script.run_epoch, script.validation_loss, 1, 0
        )
    with pytest.raises(ValueError, match="max_epochs must be an int of at least 1"):
        fit_with_early_stopping(
            script.model, script.run_epoch, script.validation_loss, 0, 1
        )
    with pytest.raises(
        TypeError, match="validation_loss must return the loss as a number, got str"
    ):
        fit_with_early_stopping(script.model, script.run_epoch, lambda: "0.5", 1, 1)


# --- SealedTest -------------------------------------------------------------------------------


def test_the_test_split_is_scored_once():
    x, y = torch.arange(6.0), torch.tensor([0.0, 1, 0, 1, 0, 1])
    sealed = SealedTest(x, y)
    assert not sealed.scored and len(sealed) == 6
    assert "sealed" in repr(sealed) and "tensor" not in repr(sealed)
    assert sealed.score(lambda a, b: float((a * b).sum())) == 9.0
    assert sealed.scored
    with pytest.raises(RuntimeError, match="the test split was already scored"):
        sealed.score(lambda a, b: 0.0)


def test_a_failing_score_still_breaks_the_seal():
    sealed = SealedTest(torch.zeros(3))

    def peek(x):
        raise KeyError("oops")

    with pytest.raises(KeyError):
        sealed.score(peek)
    with pytest.raises(RuntimeError, match="already scored"):
        sealed.score(lambda x: x.sum())


def test_sealed_test_refuses_bad_input():
    with pytest.raises(ValueError, match="needs the test split's data"):
        SealedTest()
    with pytest.raises(
        ValueError, match=r"one entry per example each, got lengths \[3, 2\]"
    ):
        SealedTest(torch.zeros(3), torch.zeros(2))
    sealed = SealedTest(torch.zeros(3))
    with pytest.raises(TypeError, match="fn must be a function"):
        sealed.score(3)
    assert not sealed.scored  # a non-function never saw the data


# --- paired_bootstrap -------------------------------------------------------------------------


def test_paired_bootstrap_interval_on_a_known_case():
    # b fixes 60 of a's errors and breaks 20 of its correct answers, out of 1000 examples:
    # the difference is +0.04 with standard error sqrt((0.06 + 0.02 - 0.04**2) / 1000) ~ 0.0088
    a = np.ones(1000)
    a[:100] = 0
    b = a.copy()
    b[:60] = 1
    b[100:120] = 0
    interval = paired_bootstrap(a, b, resamples=4000, seed=1)
    se = math.sqrt((0.06 + 0.02 - 0.04**2) / 1000)
    assert interval.estimate == pytest.approx(0.04)
    assert interval.low == pytest.approx(0.04 - 1.96 * se, abs=0.003)
    assert interval.high == pytest.approx(0.04 + 1.96 * se, abs=0.003)
    assert interval.excludes_zero() and interval.level == 0.95
    assert paired_bootstrap(b, a, resamples=4000, seed=1).estimate == pytest.approx(-0.04)
    assert paired_bootstrap(a, b, seed=1) == paired_bootstrap(a, b, seed=1)  # seeded


def test_paired_bootstrap_covers_the_true_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    true_gain, covered, trials = 0.05, 0, 200
    for trial in range(trials):
        # per-example outcome: b only right with p 0.1, a only right with p 0.05
        u = rng.random(400)
        a = (u < 0.7) | ((u >= 0.8) & (u < 0.85))
        b = u < 0.8
        interval = paired_bootstrap(a, b, resamples=1000, seed=trial)
        covered += interval.low <= true_gain <= interval.high
    assert 0.90 <= covered / trials <= 0.99


def test_identical_models_have_a_zero_width_interval():
    a = np.array([1, 0, 1, 1, 0])
    interval = paired_bootstrap(a, a)
    assert (interval.estimate, interval.low, interval.high) == (0.0, 0.0, 0.0)
    assert not interval.excludes_zero()


def test_paired_bootstrap_accepts_tensors_and_bools():
    a = torch.tensor([True, False, True, True])
    b = torch.tensor([1.0, 1.0, 1.0, 1.0])
    assert paired_bootstrap(a, b).estimate == pytest.approx(0.25)


def test_paired_bootstrap_refuses_bad_input():
    with pytest.raises(
        ValueError, match="correct_b must hold per-example correctness, 0 or 1"
    ):
        paired_bootstrap([1, 0, 1], [1, 0.5, 1])
    with pytest.raises(ValueError, match="must score the same examples, got 3 and 2"):
        paired_bootstrap([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="correct_a is empty"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="correct_a must be 1-D"):
        paired_bootstrap(np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match="correct_a must be a 1-D array of numbers"):
        paired_bootstrap(0.9, 0.8)
    with pytest.raises(ValueError, match="resamples must be an int of at least 100"):
        paired_bootstrap([1, 0], [0, 1], resamples=10)
    with pytest.raises(ValueError, match="correct_a holds NaN"):
        paired_bootstrap([1, float("nan")], [0, 1])


# --- slice_interaction ------------------------------------------------------------------------


def test_slice_interaction_finds_a_gain_confined_to_the_slice():
    rng = np.random.default_rng(3)
    n = 2000
    in_slice = np.arange(n) < 400
    a = rng.random(n) < 0.7
    b = a.copy()
    fixable = in_slice & ~a
    b[fixable] = (
        rng.random(fixable.sum()) < 0.8
    )  # b fixes most of a's errors on the slice only
    interval, p = slice_interaction(a, b, in_slice, seed=0)
    gain_in = b[in_slice].mean() - a[in_slice].mean()
    gain_out = b[~in_slice].mean() - a[~in_slice].mean()
    assert gain_out == 0
    assert interval.estimate == pytest.approx(gain_in - gain_out)
    assert interval.excludes_zero() and interval.low > 0.15
    assert p < 0.001


def test_slice_interaction_sees_no_interaction_when_the_gain_is_everywhere():
    rng = np.random.default_rng(4)
    n = 3000
    in_slice = rng.random(n) < 0.3
    a = rng.random(n) < 0.7
    b = a | (rng.random(n) < 0.2)  # the same gain on the slice and off it
    interval, p = slice_interaction(a, b, in_slice, seed=0)
    assert not interval.excludes_zero()
    assert p > 0.05
    assert paired_bootstrap(
        a, b
    ).excludes_zero()  # b is better overall, just not on the slice


def test_slice_interaction_refuses_a_slice_that_is_everything_or_nothing():
    with pytest.raises(ValueError, match="into a slice and a rest, got 3 of 3"):
        slice_interaction([1, 0, 1], [1, 1, 1], [True, True, True])
    with pytest.raises(
        ValueError, match="in_slice must mark each of the 3 examples, got 2"
    ):
        slice_interaction([1, 0, 1], [1, 1, 1], [True, False])


# --- seed_interval and sign_test --------------------------------------------------------------


def test_seed_interval_is_the_student_t_interval():
    values = [0.80, 0.82, 0.84]
    interval = seed_interval(values)
    # mean 0.82, sd 0.02, t(0.975, 2) = 4.302653
    half = 4.302653 * 0.02 / math.sqrt(3)
    assert interval.estimate == pytest.approx(0.82)
    assert interval.low == pytest.approx(0.82 - half, abs=1e-6)
    assert interval.high == pytest.approx(0.82 + half, abs=1e-6)
    narrower = seed_interval(values, level=0.5)
    assert narrower.high - narrower.low < interval.high - interval.low
    assert seed_interval(torch.tensor([1.0, 1.0])).low == 1.0


def test_seed_interval_needs_two_runs():
    with pytest.raises(ValueError, match="at least 2 runs"):
        seed_interval([0.8])
    with pytest.raises(TypeError, match="values must hold numbers"):
        seed_interval(["a", "b"])


# --- run_and_test_interval -------------------------------------------------------------------


def test_bootstrap_counts_draw_n_examples_per_resample_and_repeat():
    counts = bootstrap_counts(50, resamples=200, seed=3)
    assert counts.shape == (200, 50) and (counts.sum(axis=1) == 50).all()
    assert (counts >= 0).all() and counts.mean() == pytest.approx(1.0)
    assert (bootstrap_counts(50, resamples=200, seed=3) == counts).all()
    assert (bootstrap_counts(50, resamples=200, seed=4) != counts).any()


def _synthetic_runs(rng, runs=3, n=200, run_sd=0.01, example_sd=0.3, resamples=300):
    """One experiment: R runs on one test draw of n examples, true mean difference 0.

    Each example has its own effect, shared by every run (the same test rows), each run its
    own offset; returns the per-run means (R,) and their bootstrap draws (resamples, R).
    """
    example = rng.normal(0.0, example_sd, n)
    offset = rng.normal(0.0, run_sd, runs)
    per_example = offset[:, None] + example[None, :] + rng.normal(0, 0.05, (runs, n))
    counts = bootstrap_counts(n, resamples=resamples, seed=int(rng.integers(1 << 30)))
    return per_example.mean(axis=1), counts @ per_example.T / n


def test_run_and_test_interval_is_wider_than_the_run_interval():
    rng = np.random.default_rng(0)
    values, draws = _synthetic_runs(rng)
    both, runs_only = run_and_test_interval(values, draws), seed_interval(values)
    assert both.estimate == pytest.approx(runs_only.estimate)
    assert both.low < runs_only.low and both.high > runs_only.high
    # no test noise at all: exactly the run interval
    same = run_and_test_interval(values, np.tile(values, (10, 1)))
    assert same.low == pytest.approx(runs_only.low)
    assert same.high == pytest.approx(runs_only.high)


def test_run_and_test_interval_covers_when_the_test_draw_dominates():
    # the test draw moves the mean by about 0.021, the runs by about 0.006: the run
    # interval, blind to the draw, misses the true 0 often; the combined one does not
    rng = np.random.default_rng(1)
    hits_both = hits_runs = 0
    trials = 300
    for _ in range(trials):
        values, draws = _synthetic_runs(rng)
        both, runs_only = run_and_test_interval(values, draws), seed_interval(values)
        hits_both += both.low <= 0 <= both.high
        hits_runs += runs_only.low <= 0 <= runs_only.high
    assert hits_runs / trials < 0.8
    assert 0.92 <= hits_both / trials <= 0.98


def test_run_and_test_interval_keeps_95_percent_when_the_runs_dominate():
    rng = np.random.default_rng(2)
    trials = 400
    hits = 0
    for _ in range(trials):
        values, draws = _synthetic_runs(rng, run_sd=0.05, example_sd=0.01)
        interval = run_and_test_interval(values, draws)
        hits += interval.low <= 0 <= interval.high
    assert 0.92 <= hits / trials <= 0.98


def test_run_and_test_interval_refuses_bad_input():
    with pytest.raises(ValueError, match="at least 2 runs"):
        run_and_test_interval([0.1], np.zeros((5, 1)))
    with pytest.raises(ValueError, match=r"shape \(resamples, 3\)"):
        run_and_test_interval([0.1, 0.2, 0.3], np.zeros((5, 2)))
    with pytest.raises(ValueError, match="NaN"):
        run_and_test_interval([0.1, 0.2], np.full((5, 2), np.nan))


def test_sign_test_exact_values():
    assert sign_test([0.01, 0.02, 0.03]) == pytest.approx(0.25)
    assert sign_test([1, 2, 3, 4, 5]) == pytest.approx(0.0625)
    assert sign_test([1, 2, 3, 4, 5, -1]) == pytest.approx(2 * 7 / 64)
    assert sign_test([0.0, 0.0, 0.1, 0.2, 0.3]) == pytest.approx(0.25)  # zeros dropped
    assert sign_test([0.0, 0.0]) == 1.0
    assert sign_test([1, -1]) == 1.0
    assert sign_test(np.ones(10)) == pytest.approx(2 / 1024)


def test_sign_test_refuses_bad_input():
    with pytest.raises(ValueError, match="differences holds NaN"):
        sign_test([0.1, float("nan")])
    with pytest.raises(TypeError, match="differences must be a 1-D array"):
        sign_test(None)


# --- correct ----------------------------------------------------------------------------------


def test_correct_is_per_example_accuracy():
    logits = torch.tensor([-1.5, 0.2, 0.4, 2.0, -0.1])
    labels = torch.tensor([0.0, 1.0, 0.0, 1.0, 1.0])
    right = correct(logits, labels)
    assert right.tolist() == [1.0, 1.0, 0.0, 1.0, 0.0]
    assert right.mean().item() == pytest.approx(accuracy(logits, labels))
    with pytest.raises(ValueError, match="should both have shape"):
        correct(logits, labels[:3])


def test_slice_interaction_p_value_agrees_with_its_interval():
    # a slice that only has more errors (for both models) but the same gain is not an interaction
    rng = np.random.default_rng(5)
    agree = 0
    for trial in range(20):
        n = 1500
        in_slice = np.arange(n) < 300
        base = np.where(in_slice, 0.6, 0.9)
        a = rng.random(n) < base
        b = a | (rng.random(n) < 0.05 + 0.05 * (trial % 2) * in_slice)
        interval, p = slice_interaction(a, b, in_slice, seed=trial)
        agree += interval.excludes_zero() == (p < 0.05)
    assert agree >= 19
