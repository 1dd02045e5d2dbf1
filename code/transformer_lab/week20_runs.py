"""What ``exercises/week-20/starter.py`` runs: the self-check, Task 2's table, Task 1's
controlled experiment and Task 4's broken model against the repair, all on the student's own
functions.

Task 1 scores each model on a split of the natural comments and on chapter 4's mirrored pairs
(``mirrored_pairs``), where order alone decides the label, and prints what a run of its size
can detect (``power``): the natural split's comments that need order are too few to show any
but a huge gain.

The starter holds only the student's functions and the settings they change (CAPITALS); its
``main`` calls :func:`main` here with its own module. Task 1 follows the book's protocol: choices
are made on a validation split carved from the training comments; the test split is scored only
on request (``--test``), once, after the last choice.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from transformer_lab.char_transformer import (
    LENGTH,
    PAD_ID,
    TEST_SHARE,
    VALIDATION_SHARE,
    PraiseClassifier,
    PraiseSplit,
    bag_collisions,
    encode_texts,
    load_praise_sample,
    majority_baseline,
    predict_logits,
    split_sample,
    train_praise_model,
)
from transformer_lab.datasets import load_feedback
from transformer_lab.metrics import accuracy
from transformer_lab.mirrored_pairs import (
    N_PAIRS,
    PAIR_SEED,
    MirroredPairs,
    PairOutcomes,
    mirrored_pairs,
    pair_outcomes,
)
from transformer_lab.power import detectable_effect, detectable_effect_over_runs
from transformer_lab.protocol import (
    Interval,
    SealedTest,
    correct,
    paired_bootstrap,
    seed_interval,
    three_way_split,
)

# Task 6's defaults (the starter's BPE_VOCAB and BPE_LENGTH are tested equal to them): the
# vocabulary of chapter 5's kind of tokenizer, byte-level BPE (256 bytes plus merges), trained
# here on the experiment's own training comments, and the number of tokens the model reads.
TASK6_BPE_VOCAB = 400
TASK6_BPE_LENGTH = 8

# Task 1's defaults (the starter's Task-1 settings are tested equal to them): chapter 4's recipe
# on a sample twice its size. Chapter 4 printed what its 2,000 comments give; on them its models
# with positions hardly read the mirrored pairs. The sample size was chosen on the validation
# pairs of training seed 0 (a smaller sample gave a model that did not read them), so seed 0 is
# not a default seed: the default run trains seeds 1 to 3, the next three in order (not chosen
# by their results), and the page says so before the run. Each seed costs about 45 s of CPU on
# the Intel Xeon that builds the book; 400 pairs per set detect a net share of 0.14 per seed
# (``detectable_gaps``), as in chapter 4.
TASK1_COMMENTS = 4000
TASK1_SEEDS = (1, 2, 3)
TASK1_PAIRS = N_PAIRS
TASK1_SPLIT_SEED = 0

Forward = Callable[[PraiseClassifier, torch.Tensor, torch.Tensor], torch.Tensor]


def as_namespace(starter: dict | types.ModuleType) -> types.SimpleNamespace:
    """The starter's names (its ``globals()`` or the module) as attributes."""
    names = starter if isinstance(starter, dict) else vars(starter)
    return types.SimpleNamespace(**names)


def check_in_subprocess(path: str, display: str, page: str) -> tuple[int, set[str]]:
    """Run ``python -m transformer_lab.selfcheck`` on the starter at ``path`` in a fresh
    interpreter and print its report (the file shown as ``display``); return the exit status
    and the names of the checks that passed (from the report it writes as JSON). Not in this
    process: the starter's own code has run here and may have changed the book's functions
    that the checks compare with."""
    from transformer_lab.selfcheck import PASSED

    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [sys.executable, "-m", "transformer_lab.selfcheck", path, "--page", page]
        command += ["--display", display, "--json-file", str(report)]
        completed = subprocess.run(
            command, stdout=subprocess.PIPE, text=True, errors="replace"
        )
        print(completed.stdout, end="", flush=True)
        checks = json.loads(report.read_text()).get("checks", []) if report.exists() else []
    passed = {c["check"] for c in checks if c["status"] == PASSED}
    return completed.returncode, passed


def model_class(forward: Forward, base: type[PraiseClassifier] = PraiseClassifier) -> type:
    """A subclass of ``base`` whose forward is the student's ``forward(model, ids, padding)``
    (padding defaults to ``ids == PAD_ID``); same constructor, so the same initial weights."""

    class StudentModel(base):
        def forward(self, ids, padding=None):
            return forward(self, ids, ids == PAD_ID if padding is None else padding)

    StudentModel.__name__ = StudentModel.__qualname__ = getattr(
        forward, "__name__", "StudentModel"
    )
    return StudentModel


@dataclass(frozen=True)
class WeekSplit:
    """Chapter 4's split (``split_sample``: train, validation, sealed test) with what the tasks
    also need: the raw training and validation comments, and which validation comments need
    order (``bag_collisions``' slice)."""

    split: PraiseSplit
    texts_train: list[str]
    texts_validation: list[str]
    needs_order_validation: torch.Tensor


def week_split(n_comments: int, window: int, seed: int) -> WeekSplit:
    """``n_comments`` comments, encoded to ``window`` characters and split by ``seed`` exactly as
    chapter 4 splits them (the same ``protocol.three_way_split`` call gives the texts)."""
    sample = load_praise_sample(n=n_comments)
    split = split_sample(sample, window, seed)
    texts = list(sample["feedback_text"])
    labels = torch.tensor(sample["is_praise"].to_numpy())
    parts = three_way_split(len(texts), seed, VALIDATION_SHARE, TEST_SHARE, stratify=labels)
    needs_order = torch.from_numpy(bag_collisions(texts, labels, window).needs_order)
    return WeekSplit(
        split,
        [texts[i] for i in parts.train.tolist()],
        [texts[i] for i in parts.validation.tolist()],
        needs_order[parts.validation],
    )


def task1_pairs(window: int, n_pairs: int) -> tuple[MirroredPairs, MirroredPairs]:
    """Task 1's two sets of ``n_pairs`` mirrored pairs (chapter 4's ``mirrored_pairs``) for
    ``window``: one scored by every run, as the validation split is, and one scored only with
    ``--test``. No pair repeats the window of a comment of ``feedback.json`` (so of any split),
    and no pair of the second set repeats a window of the first."""
    corpus = list(load_feedback()["feedback_text"])
    try:
        validation = mirrored_pairs(corpus, n_pairs, seed=PAIR_SEED, length=window)
        test = mirrored_pairs(
            corpus + validation.texts, n_pairs, seed=PAIR_SEED + 1, length=window
        )
    except ValueError as error:
        raise ValueError(
            f"{n_pairs} mirrored pairs per set at a window of {window} characters: {error} "
            f"(the two sets need twice as many); ask for fewer pairs or a longer window"
        ) from error
    return validation, test


def detectable_gaps(
    n_comments: int, n_needs_order: int, n_pairs: int, power: float = 0.8
) -> dict[str, float]:
    """The smallest gaps one seed of Task 1 detects with probability ``power`` at the 5 % level
    (``power.detectable_effect``), at the worst-case spread of 1 per example (each example's
    difference is −1, 0 or +1): on all ``n_comments`` comments of a split, on its
    ``n_needs_order`` comments that need order (NaN if none), and as a net share on ``n_pairs``
    mirrored pairs."""
    return {
        "all": detectable_effect(1.0, n_comments, power=power),
        "needs order": (
            detectable_effect(1.0, n_needs_order, power=power)
            if n_needs_order
            else float("nan")
        ),
        "pairs": detectable_effect(1.0, n_pairs, power=power),
    }


@dataclass(frozen=True)
class Task1Design:
    """What one seed of Task 1's run can detect, known before any training: the sizes of its
    validation split (``n_comments``, of which ``n_needs_order`` need order) and of a set of
    pairs (``n_pairs``), and ``detectable_gaps`` for them."""

    n_comments: int
    n_needs_order: int
    n_pairs: int
    detectable: dict[str, float]


def task1_design(
    n_comments: int = TASK1_COMMENTS,
    window: int = LENGTH,
    split_seed: int = TASK1_SPLIT_SEED,
    n_pairs: int = TASK1_PAIRS,
) -> Task1Design:
    """``Task1Design`` of the run on ``n_comments`` comments split by ``split_seed`` (the
    defaults are the starter's Task-1 settings): the Week-20 page states it before the task."""
    data = week_split(n_comments, window, split_seed)
    n_validation = len(data.split.y_validation)
    n_needs = int(data.needs_order_validation.sum())
    return Task1Design(
        n_validation, n_needs, n_pairs, detectable_gaps(n_validation, n_needs, n_pairs)
    )


@dataclass(frozen=True)
class Scored:
    """One model on one evaluation: per-comment correctness (N,) 0./1. on the natural split
    and its outcomes on the mirrored pairs."""

    hits: torch.Tensor
    pairs: PairOutcomes


def positions_experiment(
    forward: Forward,
    *,
    window: int,
    split_seed: int,
    max_epochs: int,
    patience: int | None,
    seeds: Sequence[int],
    n_comments: int,
    n_pairs: int = TASK1_PAIRS,
    sinusoids: Forward | None = None,
    test: bool = False,
) -> pd.DataFrame:
    """Task 1: the package's model with positions against the student's without (and, for Task
    5, the student's sinusoids), same split, seeds and batches, each trained with early stopping
    on the validation split; one row per seed and model.

    Every model is scored twice: on a split of the natural comments (all, the comments that
    need order, the rest) and on mirrored pairs, where only order decides the label (``pairs
    net``: share of pairs read in the right order minus read backwards, exactly 0 for a model
    blind to order). By default the validation split and the first set of pairs; with
    ``test``, the sealed test split and the second set: once, every model together, after the
    last choice. Prints the gaps with their intervals and what a run of this size can detect."""
    data = week_split(n_comments, window, split_seed)
    split = data.split
    pairs_validation, pairs_test = task1_pairs(window, n_pairs)
    print(
        f"sample of {n_comments} comments: {len(split.y_train)} training, "
        f"{len(split.y_validation)} validation, {len(split.test)} test (split seed "
        f"{split_seed}); {n_pairs} mirrored pairs per set; window {window} characters; early "
        f"stopping with patience {patience}, at most {max_epochs} epochs"
    )
    variants = {"with": (True, None), "yours": (False, model_class(forward))}
    if sinusoids is not None:
        variants["sines"] = (False, model_class(sinusoids))
    runs = {}
    for seed in seeds:
        for name, (flag, cls) in variants.items():
            runs[seed, name] = train_praise_model(
                split, flag, seed, max_epochs=max_epochs, patience=patience, model_class=cls
            )

    def score(x, y, pairs: MirroredPairs) -> dict[tuple[int, str], Scored]:
        probe = encode_texts(pairs.texts, window)
        return {
            key: Scored(
                correct(predict_logits(run.model, x), y),
                pair_outcomes(predict_logits(run.model, probe), pairs),
            )
            for key, run in runs.items()
        }

    if test:
        where, pairs = "test", pairs_test
        results, y, needs_order = split.test.score(
            lambda x, y, needs, _texts: (score(x, y, pairs), y, needs.bool())
        )
    else:
        where, pairs = "validation", pairs_validation
        y, needs_order = split.y_validation, data.needs_order_validation
        results = score(split.x_validation, y, pairs)
    n_needs = int(needs_order.sum())
    print(
        f"scored on the {where} split ({len(y)} comments, {n_needs} of them need order) and "
        f"the {where} pairs; always answering the training majority scores "
        f"{majority_baseline(split.y_train, y):.3f} on this split"
    )
    scores = pd.DataFrame(
        [
            {
                "seed": seed,
                "model": name,
                "best epoch": runs[seed, name].stopping.best_epoch,
                **slice_scores(result.hits, needs_order),
                "pairs net": result.pairs.net,
            }
            for (seed, name), result in results.items()
        ]
    )
    print(scores.round(3).to_string(index=False))
    gaps = print_gaps(results, needs_order, seeds)
    print_power(len(y), n_needs, len(pairs), gaps)
    return scores


def slice_scores(hits: torch.Tensor, needs_order: torch.Tensor) -> dict[str, float]:
    """Accuracy from per-comment correctness ``hits`` (N,): overall, on the comments that need
    order and on the rest (NaN if a part is empty)."""

    def share(mask: torch.Tensor) -> float:
        return hits[mask].mean().item() if bool(mask.any()) else float("nan")

    return {
        "all": hits.mean().item(),
        "needs order": share(needs_order),
        "rest": share(~needs_order),
    }


def seed_gaps(
    results: dict[tuple[int, str], Scored], needs_order: torch.Tensor, seed: int
) -> dict[str, Interval | None]:
    """One seed's gaps with − without positions, each with its 95 % interval over the examples
    (``protocol.paired_bootstrap``): accuracy on all comments, on those that need order and on
    the rest (None when a part is empty), and the net share on the pairs. The student's model
    passed its check, so it is blind to order: its net is 0 on every pair, and the gap there is
    the net of the model with positions (read against backwards, pair by pair)."""
    with_, yours = results[seed, "with"], results[seed, "yours"]
    gaps: dict[str, Interval | None] = {}
    for part, mask in (
        ("all", torch.ones_like(needs_order)),
        ("needs order", needs_order),
        ("rest", ~needs_order),
    ):
        gaps[part] = (
            paired_bootstrap(yours.hits[mask], with_.hits[mask])
            if bool(mask.any())
            else None
        )
    blind = not bool((yours.pairs.read + yours.pairs.reversed).any())
    gaps["pairs net"] = (
        paired_bootstrap(with_.pairs.reversed, with_.pairs.read) if blind else None
    )
    return gaps


def print_gaps(
    results: dict[tuple[int, str], Scored], needs_order: torch.Tensor, seeds: Sequence[int]
) -> dict[str, list[float]]:
    """Print each seed's gaps (``seed_gaps``) and, over two or more seeds, the mean gap with
    its interval from the spread of the seeds' gaps (``protocol.seed_interval``: the models of
    one seed share their start and batches, so it is the gaps that vary). Returns the gaps
    per part, one per seed."""
    print("gap with − without positions, per seed (95 % CI over the examples):")
    gaps: dict[str, list[float]] = {}
    for seed in seeds:
        for part, interval in seed_gaps(results, needs_order, seed).items():
            if interval is None:
                print(
                    f"  seed {seed}, {part}: none (no examples, or your model reads order)"
                )
                continue
            gaps.setdefault(part, []).append(interval.estimate)
            print(f"  seed {seed}, {part}: {interval}")
    if len(seeds) < 2:
        print(
            "one seed: how much the gaps move between seeds is not measured (add --seeds)"
        )
        return gaps
    print(f"mean over the {len(seeds)} seeds (95 % CI from the spread of their gaps):")
    for part, values in gaps.items():
        if len(values) >= 2:
            print(f"  {part}: {seed_interval(values)}")
    return gaps


def print_power(
    n_comments: int, n_needs_order: int, n_pairs: int, gaps: dict[str, list[float]]
) -> None:
    """What this run can detect: ``detectable_gaps`` for one seed and, with two or more seeds,
    the mean gap detectable at the spread of the gaps the seeds measured
    (``power.detectable_effect_over_runs``)."""
    one = detectable_gaps(n_comments, n_needs_order, n_pairs)
    print(
        "what one seed can detect (80 % power, 5 % level, at the worst-case spread): a gap of "
        f"{one['all']:.3f} on all {n_comments} comments, {one['needs order']:.3f} on the "
        f"{n_needs_order} that need order, {one['pairs']:.3f} in net share on {n_pairs} pairs"
    )
    spread = {
        part: detectable_effect_over_runs(float(np.std(values, ddof=1)), len(values))
        for part, values in gaps.items()
        if len(values) >= 2
    }
    if spread:
        print(
            f"over {max(len(v) for v in gaps.values())} seeds, at the spread of their gaps: "
            + ", ".join(f"{part} {value:.3f}" for part, value in spread.items())
        )


def debug_experiment(
    repaired: Forward,
    *,
    window: int,
    split_seed: int,
    max_epochs: int,
    patience: int | None,
    seed: int,
    n_comments: int,
) -> dict[str, list[float]]:
    """Task 4: the broken transformer and the student's repair, same weights, split and batches,
    each trained with early stopping; prints each one's training loss per epoch, its validation
    accuracy and how far a comment's output moves when scored alone (or the error it raised).
    Returns the training-loss histories of the runs that trained."""
    from transformer_lab.broken_transformer import BrokenPraiseClassifier
    from transformer_lab.selfcheck import summarise_exception

    split = week_split(n_comments, window, split_seed).split
    print(
        "always answering the training majority scores "
        f"{majority_baseline(split.y_train, split.y_validation):.3f} on the validation split"
    )
    histories = {}
    for name, cls in (
        ("broken", BrokenPraiseClassifier),
        ("repaired", model_class(repaired, BrokenPraiseClassifier)),
    ):
        try:
            run = train_praise_model(
                split, True, seed, max_epochs=max_epochs, patience=patience, model_class=cls
            )
            score = accuracy(
                predict_logits(run.model, split.x_validation), split.y_validation
            )
        except Exception as error:  # noqa: BLE001 - a planted bug may raise: that is a finding
            print(f"{name:>8}: raised {summarise_exception(error)}")
            continue
        losses = [train for train, _ in run.stopping.history]
        histories[name] = losses
        sample = split.x_validation[:32]
        together = predict_logits(run.model, sample)
        alone = torch.cat([predict_logits(run.model, row[None]) for row in sample])
        print(
            f"{name:>8}: training loss per epoch {', '.join(f'{v:.3f}' for v in losses)}; "
            f"validation accuracy {score:.3f}; a comment's output scored alone vs in a batch of "
            f"32 moves by up to {(together - alone).abs().max().item():.3f}"
        )
    return histories


def tokens_experiment(
    encode: Callable,
    *,
    window: int,
    bpe_vocab: int,
    bpe_length: int,
    split_seed: int,
    max_epochs: int,
    patience: int | None,
    seeds: Sequence[int],
    n_comments: int,
) -> pd.DataFrame:
    """Task 6: chapter 4's model on characters (``window``) against the same model on the
    student's byte-level BPE ids (``bpe_length`` tokens, chapter 5's tokenizer trained on the
    training comments only); validation accuracy per seed and the characters each one reads."""
    from transformer_lab.tokenizer import train_byte_level_bpe_tokenizer

    data = week_split(n_comments, window, split_seed)
    chars = data.split
    tokenizer = train_byte_level_bpe_tokenizer(data.texts_train, bpe_vocab)
    if tokenizer.token_to_id("[PAD]") != PAD_ID:
        raise ValueError(f"the tokenizer's [PAD] must be id {PAD_ID}, as the model expects")
    tokens = PraiseSplit(
        encode(tokenizer, data.texts_train, bpe_length),
        chars.y_train,
        encode(tokenizer, data.texts_validation, bpe_length),
        chars.y_validation,
        SealedTest(torch.empty(0)),  # Task 6 compares on validation only
        split_seed,
    )
    seen = np.mean(
        [
            len(tokenizer.decode([i for i in row if i != PAD_ID]))
            for row in tokens.x_validation.tolist()
        ]
    )
    visible = np.mean([min(len(text), window) for text in data.texts_validation])
    print(
        f"characters read per validation comment: {visible:.1f} from {window} characters, "
        f"{seen:.1f} from {bpe_length} BPE tokens (vocabulary {tokenizer.get_vocab_size()})"
    )
    rows = []
    for seed in seeds:
        for name, split, options in (
            ("characters", chars, {}),
            ("BPE tokens", tokens, {"vocab_size": tokenizer.get_vocab_size()}),
        ):
            run = train_praise_model(
                split, True, seed, max_epochs=max_epochs, patience=patience, **options
            )
            score = accuracy(
                predict_logits(run.model, split.x_validation), split.y_validation
            )
            rows.append({"seed": seed, "input": name, "validation accuracy": score})
    table = pd.DataFrame(rows)
    print(table.round(3).to_string(index=False))
    return table


def print_toy_table(toy_weights, tokens: Sequence[str], seed: int) -> None:
    """Task 2: the student's table for ``tokens``, drawn from ``seed``, with labels."""
    from transformer_lab.attention import toy_inputs

    embeddings, w_q, w_k, _ = toy_inputs(len(tokens), d_model=4, seed=seed)
    table = toy_weights(embeddings, w_q, w_k).detach()
    print(
        f"your toy self-attention weights (seed {seed}); rows read, columns are read from:"
    )
    print(pd.DataFrame(table.numpy(), index=list(tokens), columns=list(tokens)).round(2))


def parse(argv: Sequence[str] | None, settings: types.ModuleType) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Check the Week-20 tasks; --train runs Task 1's experiment."
    )
    parser.add_argument("--train", action="store_true", help="Task 1: train both models")
    parser.add_argument(
        "--test",
        action="store_true",
        help="with --train: score the test split instead (once, after your last choice)",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="Task 4: train the broken model and your repair",
    )
    parser.add_argument(
        "--tokens", action="store_true", help="Task 6: BPE ids instead of characters"
    )
    parser.add_argument(
        "--sinusoidal",
        action="store_true",
        help="with --train: train your Task 5 model too",
    )
    parser.add_argument("--window", type=int, default=settings.WINDOW)
    parser.add_argument("--split-seed", type=int, default=settings.SPLIT_SEED)
    parser.add_argument("--max-epochs", type=int, default=settings.MAX_EPOCHS)
    parser.add_argument(
        "--patience",
        type=lambda text: None if text.lower() == "none" else int(text),
        default=settings.PATIENCE,
        help="epochs without a better validation loss before stopping (none: all epochs)",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        help="training seeds (default: TASK1_SEEDS with --train, else SEEDS)",
    )
    parser.add_argument(
        "--comments",
        type=int,
        default=settings.TASK1_COMMENTS,
        help="with --train: comments in Task 1's sample",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=settings.N_PAIRS,
        help="with --train: mirrored pairs per set (one scored by every run, one by --test)",
    )
    parser.add_argument(
        "--bpe-vocab",
        type=int,
        default=settings.BPE_VOCAB,
        help="Task 6: the BPE vocabulary",
    )
    parser.add_argument(
        "--bpe-length",
        type=int,
        default=settings.BPE_LENGTH,
        help="Task 6: BPE tokens the model reads",
    )
    parser.add_argument("--toy-seed", type=int, default=settings.TOY_SEED)
    return parser.parse_args(argv)


def recipe(args: argparse.Namespace, starter: types.ModuleType) -> dict:
    """The settings every Week-20 run shares (the command line's, the starter's sample size)."""
    return {
        "window": args.window,
        "split_seed": args.split_seed,
        "max_epochs": args.max_epochs,
        "patience": args.patience,
        "n_comments": starter.N_COMMENTS,
    }


def main(starter: dict | types.ModuleType, argv: Sequence[str] | None = None) -> int:
    """The starter's main: self-check the file, print Task 2's table, run Task 1 on request.
    Returns the exit status: 0 when every check passed, 1 otherwise (the runs asked for still
    run)."""
    from transformer_lab.selfcheck.checks.registry import WEEK20

    starter = as_namespace(starter)
    args = parse(argv, starter)
    status, passed = check_in_subprocess(
        starter.__file__, "exercises/week-20/starter.py", WEEK20
    )
    # as `python -m transformer_lab.selfcheck` does: 1 while a check has not passed
    status = 0 if status == 0 else 1
    if "toy_weights" in passed:
        print("\n== Task 2: the attention map")
        print_toy_table(starter.toy_weights, starter.TOY_TOKENS, args.toy_seed)
    if args.debug:
        print("\n== Task 4: the broken transformer and your repair")
        # run whatever the repair is now: what each bug left in does to training is the clue
        debug_experiment(
            starter.repaired_forward,
            seed=(args.seeds or starter.SEEDS)[0],
            **recipe(args, starter),
        )
    if args.tokens:
        print("\n== Task 6: characters against BPE tokens")
        if "encode_with_bpe" in passed:
            tokens_experiment(
                starter.encode_with_bpe,
                bpe_vocab=args.bpe_vocab,
                bpe_length=args.bpe_length,
                seeds=args.seeds or starter.SEEDS,
                **recipe(args, starter),
            )
        else:
            print("finish encode_with_bpe first: its check above must pass")
    if not args.train:
        return status
    print("\n== Task 1: with positions against yours without")
    if "forward_without_positions" not in passed:
        print("finish forward_without_positions first: its check above must pass")
        return status
    sines = None
    if args.sinusoidal:
        if "forward_with_sinusoids" in passed:
            sines = starter.forward_with_sinusoids
        else:
            print("(Task 5 not trained: its checks above must pass first)")
    positions_experiment(
        starter.forward_without_positions,
        seeds=args.seeds or starter.TASK1_SEEDS,
        sinusoids=sines,
        test=args.test,
        **{**recipe(args, starter), "n_comments": args.comments},
        n_pairs=args.pairs,
    )
    return status
