"""The experiment protocol every trained result of the book follows.

1. Split once into train / validation / test (``three_way_split``, or generator seeds that never
   meet): the model learns on train, every choice (recipe, epoch, architecture) is made on
   validation, and the test split is scored once, after every choice (``SealedTest``).
2. Train until the validation loss stops improving (``fit_with_early_stopping``) and keep the
   best epoch's weights, so training length is measured, not guessed.
3. Report a comparison with an interval that matches the claim: ``paired_bootstrap`` over the
   test examples (two models on the same examples), ``seed_interval`` over runs (seeds × splits),
   ``run_and_test_interval`` over runs *and* the draw of the test examples (``bootstrap_counts``),
   ``slice_interaction`` for "the gain is larger on this slice"; ``sign_test`` says how much a
   handful of runs that agree in sign can show. (``metrics.mcnemar_exact`` is the exact paired
   test of two classifiers' counts.)

Arrays come in as NumPy arrays, torch tensors or lists; results come out as Python floats.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from transformer_lab.metrics import mcnemar_exact
from transformer_lab.validation import (
    describe,
    require_binary_labels,
    require_finite,
    require_float_tensor,
    require_int,
    require_number,
)

T = TypeVar("T")


# --- results ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """An estimate with a two-sided interval at confidence ``level`` (0.95: a 95 % interval)."""

    estimate: float
    low: float
    high: float
    level: float = 0.95

    def __post_init__(self) -> None:
        for name in ("estimate", "low", "high"):
            require_number(name, getattr(self, name))
        require_number("level", self.level, above=0, below=1)
        if self.low > self.high:
            raise ValueError(
                f"an interval needs low <= high, got low {self.low} and high {self.high}"
            )

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0 (both ends strictly)."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        """``+0.036 (95 % CI +0.012 to +0.060)``: signed, three decimals."""
        return (
            f"{self.estimate:+.3f} ({self.level * 100:g} % CI "
            f"{self.low:+.3f} to {self.high:+.3f})"
        )


@dataclass(frozen=True)
class SplitIndices:
    """Disjoint 1-D int64 index tensors (sorted) that together cover ``range(n)``."""

    train: torch.Tensor
    validation: torch.Tensor
    test: torch.Tensor


@dataclass
class EarlyStopping:
    """What ``fit_with_early_stopping`` did.

    history: one ``(train_loss, validation_loss)`` pair per epoch run; ``best_epoch`` (counted
    from 1) is the epoch with the lowest validation loss, whose weights the model now holds;
    ``stopped_early`` is True when ``patience`` epochs passed without improvement before
    ``max_epochs``. That is the patience rule firing, not proof of convergence: a longer
    patience can find a better epoch later, so a page that calls a model converged re-runs it
    at two to three times the patience.
    """

    history: list[tuple[float, float]]
    best_epoch: int
    stopped_early: bool


# --- input checks -----------------------------------------------------------------------------


def _vector(name: str, values: object) -> np.ndarray:
    """``values`` (N,) as a float64 NumPy array: finite, 1-D, at least one entry."""
    if isinstance(values, torch.Tensor):
        array = values.detach().cpu().numpy()
    elif isinstance(values, np.ndarray | Sequence) and not isinstance(values, str | bytes):
        array = np.asarray(values)
    elif hasattr(values, "to_numpy"):  # a pandas Series
        array = values.to_numpy()
    else:
        raise TypeError(
            f"{name} must be a 1-D array of numbers (list, NumPy array or tensor), "
            f"got {type(values).__name__}"
        )
    if array.dtype == object or not (
        np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_
    ):
        raise TypeError(f"{name} must hold numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D (one entry per example or run), got shape {array.shape}"
        )
    if len(array) == 0:
        raise ValueError(f"{name} is empty: expected at least one entry")
    array = array.astype(np.float64)
    if not np.isfinite(array).all():
        position = int(np.flatnonzero(~np.isfinite(array))[0])
        raise ValueError(
            f"{name} holds NaN or infinite values, first at position {position}"
        )
    return array


def _correctness(name: str, values: object) -> np.ndarray:
    """Per-example correctness (N,) as 0./1. floats; anything but 0 and 1 is refused."""
    array = _vector(name, values)
    bad = (array != 0) & (array != 1)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold per-example correctness, 0 or 1 (or True/False), got "
            f"{array[position]:g} at position {position}"
        )
    return array


def _paired(correct_a: object, correct_b: object) -> tuple[np.ndarray, np.ndarray]:
    a, b = _correctness("correct_a", correct_a), _correctness("correct_b", correct_b)
    if a.shape != b.shape:
        raise ValueError(
            f"correct_a and correct_b must score the same examples, got {len(a)} and {len(b)} entries"
        )
    return a, b


def _bootstrap_settings(resamples: object, seed: object, level: object) -> None:
    require_int("resamples", resamples, minimum=100)
    require_int("seed", seed)
    require_number("level", level, above=0, below=1)


def _percentile_interval(estimate: float, draws: np.ndarray, level: float) -> Interval:
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    # the estimate is a draw's possible value, but a lopsided bootstrap may leave it outside
    return Interval(
        float(estimate), float(min(low, estimate)), float(max(high, estimate)), level
    )


# --- splits -----------------------------------------------------------------------------------


def _split_sizes(n: int, validation_share: float, test_share: float) -> tuple[int, int]:
    return round(validation_share * n), round(test_share * n)


def three_way_split(
    n: int,
    seed: int,
    validation_share: float = 0.2,
    test_share: float = 0.2,
    stratify: torch.Tensor | None = None,
) -> SplitIndices:
    """Shuffle ``range(n)`` with ``seed`` and cut it into train / validation / test indices.

    Shares are fractions of ``n`` (rounded to whole examples), the rest is train; each split gets
    at least one example. ``stratify`` (n,) holds one class per example (labels, or any discrete
    key): each class is split on its own with the same shares, so every split keeps the class
    mix. Returns sorted int64 tensors; the same arguments always give the same split.
    """
    n = require_int("n", n, minimum=3)
    require_int("seed", seed)
    validation_share = require_number(
        "validation_share", validation_share, above=0, below=1
    )
    test_share = require_number("test_share", test_share, above=0, below=1)
    if validation_share + test_share >= 1:
        raise ValueError(
            f"validation_share + test_share must leave examples to train on, got "
            f"{validation_share:g} + {test_share:g} = {validation_share + test_share:g}"
        )
    generator = torch.Generator().manual_seed(seed)
    if stratify is None:
        groups = [torch.arange(n)]
    else:
        classes = torch.as_tensor(_vector("stratify", stratify))
        if len(classes) != n:
            raise ValueError(
                f"stratify must hold one class per example, {n}, got {len(classes)}"
            )
        groups = [torch.nonzero(classes == c).flatten() for c in torch.unique(classes)]
    parts: list[list[torch.Tensor]] = [[], [], []]
    for group in groups:
        shuffled = group[torch.randperm(len(group), generator=generator)]
        n_val, n_test = _split_sizes(len(group), validation_share, test_share)
        parts[2].append(shuffled[:n_test])
        parts[1].append(shuffled[n_test : n_test + n_val])
        parts[0].append(shuffled[n_test + n_val :])
    train, validation, test = (
        torch.cat(part).sort().values.to(torch.int64) for part in parts
    )
    for name, split in (("train", train), ("validation", validation), ("test", test)):
        if len(split) == 0:
            raise ValueError(
                f"the {name} split of {n} examples is empty (validation_share "
                f"{validation_share:g}, test_share {test_share:g}): use more examples or larger shares"
            )
    return SplitIndices(train, validation, test)


# --- training length --------------------------------------------------------------------------


def _loss_value(name: str, value: object) -> float:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must return the loss as a number, got {type(value).__name__}"
        )
    return float(value)


def check_early_stopping(
    model: nn.Module,
    run_epoch: Callable[[], float],
    validation_loss: Callable[[], float],
    max_epochs: int,
    patience: int | None,
) -> int:
    """Raise for arguments ``fit_with_early_stopping`` cannot use; return the patience to apply
    (``max_epochs`` when ``patience`` is None, so that no run stops early)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for name, function in (("run_epoch", run_epoch), ("validation_loss", validation_loss)):
        if not callable(function):
            raise TypeError(
                f"{name} must be a function of no arguments, got {type(function).__name__}"
            )
    require_int("max_epochs", max_epochs, minimum=1)
    if patience is None:
        return max_epochs
    return require_int("patience", patience, minimum=1)


def fit_with_early_stopping(
    model: nn.Module,
    run_epoch: Callable[[], float],
    validation_loss: Callable[[], float],
    max_epochs: int,
    patience: int | None,
) -> EarlyStopping:
    """Train epoch by epoch until the validation loss stops improving; keep the best weights.

    ``run_epoch()`` trains ``model`` for one epoch and returns its mean training loss;
    ``validation_loss()`` returns the loss on the validation split. After each epoch the weights
    are copied when the validation loss is the lowest so far; after ``patience`` epochs in a row
    without a new lowest loss, training stops. ``patience=None`` runs all ``max_epochs``. At the
    end the model holds the best epoch's weights. A validation loss that is never finite (a
    diverged run) raises ``ValueError`` with the history.
    """
    patience = check_early_stopping(model, run_epoch, validation_loss, max_epochs, patience)
    history: list[tuple[float, float]] = []
    best_loss, best_epoch, best_state = math.inf, 0, None
    for epoch in range(1, max_epochs + 1):
        train_loss = _loss_value("run_epoch", run_epoch())
        val_loss = _loss_value("validation_loss", validation_loss())
        history.append((train_loss, val_loss))
        if val_loss < best_loss:  # False for NaN: a diverged epoch is never the best
            best_loss, best_epoch = val_loss, epoch
            best_state = copy.deepcopy(model.state_dict())
        elif epoch - best_epoch >= patience:
            break
    if best_state is None:
        raise ValueError(
            f"the validation loss was never finite in {len(history)} epochs: {history}"
        )
    model.load_state_dict(best_state)
    return EarlyStopping(history, best_epoch, stopped_early=len(history) < max_epochs)


# --- the test split ---------------------------------------------------------------------------


class SealedTest:
    """The test split, held back until every choice is made, then scored exactly once.

    ``SealedTest(x, padding, y)`` keeps the tensors (any objects: arrays, data frames);
    ``score(fn)`` returns ``fn(x, padding, y)`` the first time and raises ``RuntimeError`` on
    every later call, so a page cannot peek at the test split, change its recipe and score again.
    The seal breaks when ``score`` is called, even if ``fn`` then fails: it has seen the data.
    """

    def __init__(self, *tensors: Any):
        if not tensors:
            raise ValueError(
                "SealedTest needs the test split's data, e.g. SealedTest(x, padding, y)"
            )
        sizes = {len(t) for t in tensors if hasattr(t, "__len__")}
        if len(sizes) > 1:
            raise ValueError(
                f"the test split's parts must have one entry per example each, got lengths "
                f"{[len(t) for t in tensors if hasattr(t, '__len__')]}"
            )
        self._tensors = tensors
        self._scored = False

    @property
    def scored(self) -> bool:
        """True once ``score`` has been called."""
        return self._scored

    def __len__(self) -> int:
        return len(self._tensors[0])

    def __repr__(self) -> str:
        state = "scored" if self._scored else "sealed"
        return f"SealedTest({len(self._tensors)} parts, {state})"

    def score(self, fn: Callable[..., T]) -> T:
        """Return ``fn(*tensors)``; only once: a second call raises ``RuntimeError``."""
        if not callable(fn):
            raise TypeError(
                f"fn must be a function of the test tensors, got {type(fn).__name__}"
            )
        if self._scored:
            raise RuntimeError(
                "the test split was already scored: it is scored once, after every choice. "
                "Make further choices on the validation split, or build a new test split"
            )
        self._scored = True
        return fn(*self._tensors)


# --- comparisons ------------------------------------------------------------------------------


def paired_bootstrap(
    correct_a: object,
    correct_b: object,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Interval of accuracy(b) − accuracy(a) for two models scored on the same N examples.

    correct_a, correct_b (N,): 1 where the model got the example right, else 0. The examples are
    resampled with replacement ``resamples`` times (both models keep their pairing) and the
    interval is the percentile interval of the resampled differences. Each example's difference
    is −1, 0 or +1, so a resample is a multinomial draw of those three counts — the same
    distribution as resampling indices, at a cost that does not grow with N.
    """
    a, b = _paired(correct_a, correct_b)
    _bootstrap_settings(resamples, seed, level)
    rng = np.random.default_rng(seed)
    draws = _resampled_gain(b - a, resamples, rng)
    return _percentile_interval(float(np.mean(b - a)), draws, level)


def _resampled_gain(
    differences: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Means (resamples,) of bootstrap resamples of per-example differences in {−1, 0, +1}."""
    n = len(differences)
    shares = [np.mean(differences == 1), np.mean(differences == -1)]
    counts = rng.multinomial(
        n, [shares[0], shares[1], max(0.0, 1 - sum(shares))], size=resamples
    )
    return (counts[:, 0] - counts[:, 1]) / n


def slice_interaction(
    correct_a: object,
    correct_b: object,
    in_slice: object,
    resamples: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[Interval, float]:
    """Does b gain more over a on a slice of the examples than on the rest?

    correct_a, correct_b (N,) per-example correctness (0/1) of two models on the same examples,
    in_slice (N,) True for the examples of the slice. The estimate is (gain of b over a on the
    slice) − (gain on the rest). The slice and the rest are resampled separately (a stratified
    bootstrap, ``resamples`` times); the interval is the percentile interval of the resampled
    estimates, and the two-sided p-value of "the gain is the same on the slice and off it" is the
    share of resampled estimates, centred on the estimate, at least as far from it as the estimate
    is from 0: p = (1 + count) / (1 + resamples). The interval excludes 0 about when p < 1 − level.
    (A permutation test of slice membership would also reject when the slice only has more
    errors, since it assumes the two parts are exchangeable.)
    Both the slice and the rest need at least one example.
    """
    a, b = _paired(correct_a, correct_b)
    member = _correctness("in_slice", in_slice).astype(bool)
    if member.shape != a.shape:
        raise ValueError(
            f"in_slice must mark each of the {len(a)} examples, got {len(member)} entries"
        )
    if member.all() or not member.any():
        raise ValueError(
            f"in_slice must split the examples into a slice and a rest, got {int(member.sum())} "
            f"of {len(member)} in the slice"
        )
    _bootstrap_settings(resamples, seed, level)
    rng = np.random.default_rng(seed)
    d = b - a
    inside, outside = d[member], d[~member]
    estimate = float(inside.mean() - outside.mean())
    draws = _resampled_gain(inside, resamples, rng) - _resampled_gain(
        outside, resamples, rng
    )
    extreme = np.abs(draws - estimate) >= abs(estimate) - 1e-12
    p_value = float((1 + extreme.sum()) / (1 + resamples))
    return _percentile_interval(estimate, draws, level), p_value


def _normal_quantile(probability: float) -> float:
    """The standard normal quantile: the t quantile with infinitely many degrees of freedom."""
    from scipy.special import ndtri

    return float(ndtri(probability))


def _t_quantile(probability: float, dof: float) -> float:
    # scipy (installed with scikit-learn) is imported here, not at module level: its import
    # costs a fifth of a second that pages which never call seed_interval should not pay.
    from scipy.special import stdtrit

    return float(stdtrit(dof, probability))


def seed_interval(values: object, level: float = 0.95) -> Interval:
    """Mean of ``values`` (R,) — one result per run (seeds × splits) — with a Student-t interval.

    mean ± t(level, R − 1) · sd / √R, sd the sample standard deviation. Needs at least 2 runs.
    The interval speaks for other runs of the same recipe (another seed, another split), not for
    other recipes.
    """
    runs = _vector("values", values)
    level = require_number("level", level, above=0, below=1)
    if len(runs) < 2:
        raise ValueError(
            f"seed_interval needs at least 2 runs to measure their spread, got {len(runs)}"
        )
    mean = float(runs.mean())
    half = (
        _t_quantile((1 + level) / 2, len(runs) - 1)
        * float(runs.std(ddof=1))
        / math.sqrt(len(runs))
    )
    return Interval(mean, mean - half, mean + half, level)


def bootstrap_counts(n: int, resamples: int = 1000, seed: int = 0) -> np.ndarray:
    """How often each of ``n`` examples is drawn in each bootstrap resample: (resamples, n) ints.

    Every row sums to ``n`` (a draw of ``n`` examples with replacement, seeded by ``seed``). A
    statistic computed with these counts as weights, for several models or runs on the same
    examples, keeps their pairing: every model sees the same resample ``b`` in row ``b``.
    """
    n = require_int("n", n, minimum=1)
    _bootstrap_settings(resamples, seed, 0.95)
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples)


def run_and_test_interval(
    run_values: object, test_draws: object, level: float = 0.95
) -> Interval:
    """Mean of ``run_values`` (R,) with an interval for both sources of noise.

    run_values (R,): one result per run (seeds × train/validation splits), all on one test
    split. test_draws (B, R): the same results recomputed on B bootstrap resamples of the test
    examples (``bootstrap_counts``; row b uses one resample for every run). The runs' spread
    gives the variance a = s²/R of the mean over runs, as in ``seed_interval``; the resamples
    give the variance b of that mean that comes from which examples were drawn for test. The
    two add: mean ± t(level, ν) · √(a + b), with ν = (a + b)² (R − 1) / a² the
    Welch–Satterthwaite degrees of freedom (b, from many resamples, counts as known), and never
    narrower than ``seed_interval``. It speaks for other runs of the recipe on other test draws
    from the same population, not for other recipes.
    """
    runs = _vector("run_values", run_values)
    level = require_number("level", level, above=0, below=1)
    if len(runs) < 2:
        raise ValueError(f"run_and_test_interval needs at least 2 runs, got {len(runs)}")
    draws = np.asarray(test_draws, dtype=np.float64)
    if draws.ndim == 1:
        draws = draws[:, None]
    if draws.ndim != 2 or draws.shape[1] != len(runs) or draws.shape[0] < 2:
        raise ValueError(
            f"test_draws must have shape (resamples, {len(runs)}), one column per run, "
            f"got {draws.shape}"
        )
    if not np.isfinite(draws).all():
        raise ValueError("test_draws holds NaN or infinite values")
    mean = float(runs.mean())
    from_runs = float(runs.var(ddof=1)) / len(runs)
    from_test = float(draws.mean(axis=1).var(ddof=1))
    quantile = (1 + level) / 2
    run_half = _t_quantile(quantile, len(runs) - 1) * math.sqrt(from_runs)
    if from_runs == 0:
        half = _normal_quantile(quantile) * math.sqrt(from_test)
    else:
        dof = (from_runs + from_test) ** 2 * (len(runs) - 1) / from_runs**2
        half = _t_quantile(quantile, dof) * math.sqrt(from_runs + from_test)
    half = max(half, run_half)
    return Interval(mean, mean - half, mean + half, level)


def sign_test(differences: object) -> float:
    """Two-sided exact sign test p-value of "positive and negative differences are equally likely".

    differences (R,): one paired difference per run. Zeros carry no sign and are dropped; the
    rest is the exact McNemar test of the positive and negative counts (``metrics.mcnemar_exact``):
    3 runs of 3 positive give p = 0.25, 5 of 5 give 0.0625. No difference at all gives 1.0.
    """
    d = _vector("differences", differences)
    return mcnemar_exact(int(np.sum(d > 0)), int(np.sum(d < 0)))


def correct(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-example correctness (N,) as 0./1. floats at logit 0, for the paired tests above.

    logits (N,) raw scores, labels (N,) in {0, 1}; the mean of the result is ``metrics.accuracy``.
    """
    require_float_tensor("logits", logits)
    require_binary_labels("labels", labels)
    if logits.shape != labels.shape or logits.dim() != 1:
        raise ValueError(
            f"logits and labels should both have shape (N,), got {describe(logits.shape)} "
            f"and {describe(labels.shape)}"
        )
    require_finite("logits", logits, allow_inf=True)
    return ((logits > 0).to(labels.dtype) == labels).float()
