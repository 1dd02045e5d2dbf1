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
import math
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from transformer_lab.char_transformer import (
    PAD_ID,
    PraiseClassifier,
    PraiseSplit,
    encode_texts,
    load_praise_sample,
    majority_baseline,
    order_sensitive,
    predict_logits,
    train_praise_model,
)
from transformer_lab.metrics import accuracy

Forward = Callable[[PraiseClassifier, torch.Tensor, torch.Tensor], torch.Tensor]
VALIDATION_SHARE = TEST_SHARE = 0.2


def as_namespace(starter: dict | types.ModuleType) -> types.SimpleNamespace:
    """The starter's names (its ``globals()`` or the module) as attributes."""
    names = starter if isinstance(starter, dict) else vars(starter)
    return types.SimpleNamespace(**names)


def model_class(forward: Forward, use_positions: bool = False) -> type[PraiseClassifier]:
    """A ``PraiseClassifier`` whose forward is the student's ``forward(model, ids, padding)``
    (padding defaults to ``ids == PAD_ID``); same constructor, so the same initial weights."""

    class StudentModel(PraiseClassifier):
        def forward(self, ids, padding=None):
            return forward(self, ids, ids == PAD_ID if padding is None else padding)

    StudentModel.__name__ = StudentModel.__qualname__ = getattr(
        forward, "__name__", "StudentModel"
    )
    return StudentModel


@dataclass(frozen=True)
class ThreeWaySplit:
    """Train and validation (as a ``PraiseSplit`` whose test part is the validation split, so
    that ``train_praise_model`` never sees it) and the held-out test split."""

    fit: PraiseSplit
    x_test: torch.Tensor
    y_test: torch.Tensor
    texts_test: list[str]
    texts_train: list[str]


def three_way_split(n_comments: int, window: int, seed: int) -> ThreeWaySplit:
    """``n_comments`` comments encoded to ``window`` characters, split 60/20/20 by ``seed``."""
    sample = load_praise_sample(n=n_comments)
    texts = list(sample["feedback_text"])
    ids = encode_texts(texts, window)
    labels = torch.tensor(sample["is_praise"].to_numpy(), dtype=torch.float32)
    order = np.random.default_rng(seed).permutation(len(texts))
    n_test = int(round(TEST_SHARE * len(texts)))
    n_val = int(round(VALIDATION_SHARE * len(texts)))
    test, val, train = (
        order[:n_test],
        order[n_test : n_test + n_val],
        order[n_test + n_val :],
    )
    pick = torch.from_numpy
    fit = PraiseSplit(
        ids[pick(train)], labels[pick(train)], ids[pick(val)], labels[pick(val)],
        [texts[i] for i in val],
    )  # fmt: skip
    return ThreeWaySplit(
        fit,
        ids[pick(test)],
        labels[pick(test)],
        [texts[i] for i in test],
        [texts[i] for i in train],
    )


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean over runs and the half-width of its Student-t interval (NaN for one run)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), float("nan")
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1)
    return float(values.mean()), float(half / math.sqrt(len(values)))


def score_runs(models, x, y, texts, window) -> dict[str, dict[str, float]]:
    """Accuracy of each model overall, on the order-sensitive slice and on the rest."""
    sensitive = torch.from_numpy(order_sensitive(texts, window))
    scores = {}
    for name, model in models.items():
        logits = predict_logits(model, x)
        scores[name] = {
            "all": accuracy(logits, y),
            "order-sensitive": accuracy(logits[sensitive], y[sensitive]),
            "rest": accuracy(logits[~sensitive], y[~sensitive]),
        }
    return scores


def positions_experiment(
    forward: Forward,
    *,
    window: int,
    split_seed: int,
    epochs: int,
    seeds: Sequence[int],
    n_comments: int,
    sinusoids: Forward | None = None,
    test: bool = False,
) -> pd.DataFrame:
    """Task 1: the package's model with positions against the student's without (and, for Task
    5, the student's sinusoids), same split, seed and batches; one row per seed and model.

    Scored on the validation split, or, with ``test``, on the test split (run that once, last)."""
    split = three_way_split(n_comments, window, split_seed)
    data = split.fit
    where = "test" if test else "validation"
    x, y, texts = (
        (split.x_test, split.y_test, split.texts_test)
        if test
        else (data.x_test, data.y_test, data.texts_test)
    )
    sensitive = order_sensitive(texts, window)
    print(
        f"{len(data.y_train)} training, {len(data.y_test)} validation and {len(split.y_test)} "
        f"test comments (split seed {split_seed}); window {window} characters, {epochs} epochs"
    )
    print(
        f"scored on the {where} split: {len(y)} comments, {int(sensitive.sum())} of them "
        f"order-sensitive; always answering the majority class scores "
        f"{majority_baseline(data.y_train, y):.3f}"
    )
    variants = {"with": (True, None), "yours": (False, model_class(forward))}
    if sinusoids is not None:
        variants["sines"] = (False, model_class(sinusoids))
    rows = []
    for seed in seeds:
        models = {
            name: train_praise_model(data, flag, seed, epochs=epochs, model_class=cls)
            for name, (flag, cls) in variants.items()
        }
        for name, score in score_runs(models, x, y, texts, window).items():
            rows.append({"seed": seed, "model": name, **score})
    table = pd.DataFrame(rows)
    print(table.round(3).to_string(index=False))
    wide = table.pivot(index="seed", columns="model")
    for column in ("all", "order-sensitive", "rest"):
        gaps = (wide[column]["with"] - wide[column]["yours"]).tolist()
        mean, half = mean_interval(gaps)
        spread = "" if math.isnan(half) else f" ± {half:.3f} (95 % interval over seeds)"
        print(f"gap with − without positions, {column}: {mean:+.3f}{spread}")
    return table


def debug_experiment(
    repaired: Forward,
    *,
    window: int,
    split_seed: int,
    epochs: int,
    seed: int,
    n_comments: int,
) -> dict[str, list[float]]:
    """Task 4: the broken transformer and the student's repair, same weights, split and batches;
    prints each one's training loss per epoch and its validation accuracy (or the error it
    raised). Returns the loss histories of the runs that trained."""
    from torch import nn

    from transformer_lab.broken_transformer import BrokenPraiseClassifier
    from transformer_lab.reproducibility import seed_everything
    from transformer_lab.selfcheck import summarise_exception
    from transformer_lab.training import adam, train_epoch

    class Repaired(BrokenPraiseClassifier):
        def forward(self, ids, padding=None):
            return repaired(self, ids, ids == PAD_ID if padding is None else padding)

    data = three_way_split(n_comments, window, split_seed).fit
    histories = {}
    for name, cls in (("broken", BrokenPraiseClassifier), ("repaired", Repaired)):
        generator = seed_everything(seed)
        model = cls(length=window)
        optimizer = adam(model.parameters(), 1e-2)
        batches = (data.x_train, data.x_train == PAD_ID, data.y_train)
        losses = []
        try:
            for _ in range(epochs):
                losses.append(
                    train_epoch(
                        model, optimizer, nn.BCEWithLogitsLoss(), batches, 128, generator
                    )
                )
            score = accuracy(predict_logits(model, data.x_test), data.y_test)
        except Exception as error:  # noqa: BLE001 - a planted bug may raise: that is a finding
            print(f"{name:>8}: raised {summarise_exception(error)}")
            continue
        histories[name] = losses
        sample = data.x_test[:32]
        together = predict_logits(model, sample)
        alone = torch.cat([predict_logits(model, row[None]) for row in sample])
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
    epochs: int,
    seeds: Sequence[int],
    n_comments: int,
) -> pd.DataFrame:
    """Task 6: chapter 4's model on characters (``window``) against the same model on the
    student's byte-level BPE ids (``bpe_length`` tokens, chapter 5's tokenizer trained on the
    training comments only); validation accuracy per seed and the characters each one reads."""
    from transformer_lab.tokenizer import train_byte_level_bpe_tokenizer

    split = three_way_split(n_comments, window, split_seed)
    chars = split.fit
    tokenizer = train_byte_level_bpe_tokenizer(split.texts_train, bpe_vocab)
    if tokenizer.token_to_id("[PAD]") != PAD_ID:
        raise ValueError(f"the tokenizer's [PAD] must be id {PAD_ID}, as the model expects")
    tokens = PraiseSplit(
        encode(tokenizer, split.texts_train, bpe_length),
        chars.y_train,
        encode(tokenizer, chars.texts_test, bpe_length),
        chars.y_test,
        chars.texts_test,
    )
    seen = np.mean(
        [
            len(tokenizer.decode([i for i in row if i != PAD_ID]))
            for row in tokens.x_test.tolist()
        ]
    )
    visible = np.mean([min(len(text), window) for text in chars.texts_test])
    print(
        f"characters read per validation comment: {visible:.1f} from {window} characters, "
        f"{seen:.1f} from {bpe_length} BPE tokens (vocabulary {tokenizer.get_vocab_size()})"
    )
    rows = []
    for seed in seeds:
        for name, data, options in (
            ("characters", chars, {}),
            ("BPE tokens", tokens, {"vocab_size": tokenizer.get_vocab_size()}),
        ):
            model = train_praise_model(data, True, seed, epochs=epochs, **options)
            score = accuracy(predict_logits(model, data.x_test), data.y_test)
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
    parser.add_argument("--epochs", type=int, default=settings.EPOCHS)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(settings.SEEDS))
    parser.add_argument("--toy-seed", type=int, default=settings.TOY_SEED)
    return parser.parse_args(argv)


def main(starter: dict | types.ModuleType, argv: Sequence[str] | None = None) -> int:
    """The starter's main: self-check the file, print Task 2's table, run Task 1 on request."""
    from transformer_lab.selfcheck import PASSED, check_file, format_report
    from transformer_lab.selfcheck.registry import WEEK20

    starter = as_namespace(starter)
    args = parse(argv, starter)
    report = check_file(
        starter.__file__, display="exercises/week-20/starter.py", page=WEEK20
    )
    print(format_report(report))
    passed = {result.name for result in report.results if result.status == PASSED}
    if "toy_weights" in passed:
        print("\n== Task 2: the attention map")
        print_toy_table(starter.toy_weights, starter.TOY_TOKENS, args.toy_seed)
    if args.debug:
        print("\n== Task 4: the broken transformer and your repair")
        # run whatever the repair is now: what each bug left in does to training is the clue
        debug_experiment(
            starter.repaired_forward,
            window=args.window,
            split_seed=args.split_seed,
            epochs=args.epochs,
            seed=args.seeds[0],
            n_comments=starter.N_COMMENTS,
        )
    if args.tokens:
        print("\n== Task 6: characters against BPE tokens")
        if "encode_with_bpe" in passed:
            tokens_experiment(
                starter.encode_with_bpe,
                window=args.window,
                bpe_vocab=starter.BPE_VOCAB,
                bpe_length=starter.BPE_LENGTH,
                split_seed=args.split_seed,
                epochs=args.epochs,
                seeds=args.seeds,
                n_comments=starter.N_COMMENTS,
            )
        else:
            print("finish encode_with_bpe first: its check above must pass")
    if not args.train:
        return 0
    print("\n== Task 1: with positions against yours without")
    if "forward_without_positions" not in passed:
        print("finish forward_without_positions first: its check above must pass")
        return 0
    sines = None
    if args.sinusoidal:
        if "forward_with_sinusoids" in passed:
            sines = starter.forward_with_sinusoids
        else:
            print("(Task 5 not trained: its checks above must pass first)")
    positions_experiment(
        starter.forward_without_positions,
        window=args.window,
        split_seed=args.split_seed,
        epochs=args.epochs,
        seeds=args.seeds,
        n_comments=starter.N_COMMENTS,
        sinusoids=sines,
        test=args.test,
    )
    return 0
