"""What ``exercises/week-20/starter.py`` runs: the self-check, Task 2's table, Task 1's
controlled experiment and Task 4's broken model against the repair, all on the student's own
functions.

The starter holds only the student's functions and the settings they change (CAPITALS); its
``main`` calls :func:`main` here with its own module. Task 1 follows the book's protocol: choices
are made on a validation split carved from the training comments; the test split is scored only
on request (``--test``), once, after the last choice.
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from transformer_lab.char_transformer import (
    PAD_ID,
    TEST_SHARE,
    VALIDATION_SHARE,
    PraiseClassifier,
    PraiseSplit,
    bag_collisions,
    load_praise_sample,
    majority_baseline,
    predict_logits,
    split_sample,
    train_praise_model,
)
from transformer_lab.metrics import accuracy
from transformer_lab.protocol import SealedTest, seed_interval, three_way_split

# Task 6's defaults (the starter's BPE_VOCAB and BPE_LENGTH are tested equal to them): the
# vocabulary of chapter 5's kind of tokenizer, byte-level BPE (256 bytes plus merges), trained
# here on the experiment's own training comments, and the number of tokens the model reads.
TASK6_BPE_VOCAB = 400
TASK6_BPE_LENGTH = 8

Forward = Callable[[PraiseClassifier, torch.Tensor, torch.Tensor], torch.Tensor]


def as_namespace(starter: dict | types.ModuleType) -> types.SimpleNamespace:
    """The starter's names (its ``globals()`` or the module) as attributes."""
    names = starter if isinstance(starter, dict) else vars(starter)
    return types.SimpleNamespace(**names)


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


def slice_scores(logits, y, needs_order) -> dict[str, float]:
    """Accuracy overall, on the comments that need order, and on the rest (NaN if empty)."""

    def score(mask):
        return accuracy(logits[mask], y[mask]) if bool(mask.any()) else float("nan")

    return {
        "all": accuracy(logits, y),
        "needs order": score(needs_order),
        "rest": score(~needs_order),
    }


def positions_experiment(
    forward: Forward,
    *,
    window: int,
    split_seed: int,
    max_epochs: int,
    patience: int | None,
    seeds: Sequence[int],
    n_comments: int,
    sinusoids: Forward | None = None,
    test: bool = False,
) -> pd.DataFrame:
    """Task 1: the package's model with positions against the student's without (and, for Task
    5, the student's sinusoids), same split, seeds and batches, each trained with early stopping
    on the validation split; one row per seed and model.

    Scored on the validation split, or, with ``test``, on the sealed test split: once, for every
    model together, after the last choice."""
    data = week_split(n_comments, window, split_seed)
    split = data.split
    print(
        f"{len(split.y_train)} training, {len(split.y_validation)} validation and "
        f"{len(split.test)} test comments (split seed {split_seed}); window {window} "
        f"characters; early stopping with patience {patience}, at most {max_epochs} epochs"
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

    def table(x, y, needs_order) -> pd.DataFrame:
        rows = []
        for (seed, name), run in runs.items():
            scores = slice_scores(predict_logits(run.model, x), y, needs_order)
            rows.append(
                {
                    "seed": seed,
                    "model": name,
                    "best epoch": run.stopping.best_epoch,
                    **scores,
                }
            )
        return pd.DataFrame(rows)

    if test:
        where = "test"
        scores = split.test.score(lambda x, y, needs, _texts: table(x, y, needs))
    else:
        where = "validation"
        scores = table(split.x_validation, split.y_validation, data.needs_order_validation)
    print(
        f"scored on the {where} split; always answering the training majority scores "
        f"{majority_baseline(split.y_train, split.y_validation):.3f} on validation; "
        f"{int(data.needs_order_validation.sum())} validation comments need order"
    )
    print(scores.round(3).to_string(index=False))
    wide = scores.pivot(index="seed", columns="model")
    for column in ("all", "needs order", "rest"):
        gaps = (wide[column]["with"] - wide[column]["yours"]).dropna().tolist()
        if len(gaps) >= 2:
            text = str(seed_interval(gaps))
        elif gaps:
            text = f"{gaps[0]:+.3f} (one seed: no interval)"
        else:
            text = "no comments in this slice"
        print(f"gap with − without positions, {column}: {text}")
    return scores


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
    parser.add_argument("--seeds", type=int, nargs="+", default=list(settings.SEEDS))
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
    from transformer_lab.selfcheck import PASSED, check_file, format_report
    from transformer_lab.selfcheck.registry import WEEK20

    starter = as_namespace(starter)
    args = parse(argv, starter)
    report = check_file(
        starter.__file__, display="exercises/week-20/starter.py", page=WEEK20
    )
    print(format_report(report))
    # as `python -m transformer_lab.selfcheck` does: 1 while a check has not passed
    status = 0 if report.all_passed else 1
    passed = {result.name for result in report.results if result.status == PASSED}
    if "toy_weights" in passed:
        print("\n== Task 2: the attention map")
        print_toy_table(starter.toy_weights, starter.TOY_TOKENS, args.toy_seed)
    if args.debug:
        print("\n== Task 4: the broken transformer and your repair")
        # run whatever the repair is now: what each bug left in does to training is the clue
        debug_experiment(
            starter.repaired_forward, seed=args.seeds[0], **recipe(args, starter)
        )
    if args.tokens:
        print("\n== Task 6: characters against BPE tokens")
        if "encode_with_bpe" in passed:
            tokens_experiment(
                starter.encode_with_bpe,
                bpe_vocab=starter.BPE_VOCAB,
                bpe_length=starter.BPE_LENGTH,
                seeds=args.seeds,
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
        seeds=args.seeds,
        sinusoids=sines,
        test=args.test,
        **recipe(args, starter),
    )
    return status
