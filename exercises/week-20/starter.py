"""Week 20 exercises: your no-position model (Task 1), your 3-token attention table (Task 2) and,
as a stretch, your sinusoidal positions (Task 4).

Run from the repository root:

    python exercises/week-20/starter.py                         # check Tasks 1 and 2 (about 2 s)
    python exercises/week-20/starter.py --train                 # Task 1: with positions against yours
    python exercises/week-20/starter.py --train --split-seed 1  # Task 1 extra: another train/test split
    python exercises/week-20/starter.py --train --length 64     # Task 1 extra: a longer window
    python exercises/week-20/starter.py --toy-seed 1            # Task 2 with other random matrices
    python exercises/week-20/starter.py --train --sinusoidal    # Task 4 (stretch): fixed positions too

Write your code where it says TODO; do not edit the package (chapter 4 and its tests use it).
Task 3 (the memo) is prose: no code.
"""

import argparse
import inspect
import sys

import pandas as pd
import torch

from transformer_lab.char_transformer import LENGTH, PAD_ID, PraiseClassifier

TOKENS = ["login", "failed", "again"]

# --- Task 1 --------------------------------------------------------------------------------------


class NoPositions(PraiseClassifier):
    """The book's PraiseClassifier without its position embedding: it reads a bag of characters.

    Same constructor, same weights; only ``forward`` is yours. ids (N, L) long, padding (N, L) bool
    (True = padding; default ``ids == PAD_ID``) -> logits (N,).
    """

    def forward(self, ids, padding=None):
        # TODO Task 1: the forward pass of PraiseClassifier (chapter 4, or
        # code/transformer_lab/char_transformer.py) without the position embedding.
        raise NotImplementedError(
            "Task 1 (NoPositions.forward): embed, encode with the padding mask, pool, score"
        )


# Task 1, one extra of your choice (or use --split-seed / --length): two comments with the same
# characters in another order, one praise and one not, e.g. swap two words around a "not".
# Keep each within the window: the model reads only the first LENGTH characters (see --length).
MY_PAIR = ("", "")  # TODO Task 1 (optional extra): ("...", "...")

# --- Task 2 --------------------------------------------------------------------------------------


def toy_weights(embeddings, w_q, w_k):
    """The toy's self-attention weights, with your own lines.

    embeddings E (3, d): one row per token; w_q, w_k (d, d). Returns (3, 3): row i says how much
    token i reads from each token, and every row sums to 1. No library attention function.
    """
    # TODO Task 2: queries, keys, scaled scores, softmax over the right axis.
    raise NotImplementedError("Task 2 (toy_weights): queries, keys, scaled scores, softmax")


# --- Task 4 (stretch) ---------------------------------------------------------------------------


def sinusoidal_positions(length, d_model):
    """Fixed position vectors (length, d_model), nothing learned: row p, columns 2i and 2i + 1 hold
    sin(p / 10000^(2i / d_model)) and cos(p / 10000^(2i / d_model)). d_model is even."""
    # TODO Task 4 (stretch): one tensor operation per column family, no Python loop over positions.
    raise NotImplementedError(
        "Task 4 (sinusoidal_positions): positions, frequencies, sines and cosines"
    )


class SinusoidalPositions(PraiseClassifier):
    """PraiseClassifier with your fixed sinusoidal positions instead of its learned table."""

    def forward(self, ids, padding=None):
        # TODO Task 4 (stretch): your NoPositions.forward, plus sinusoidal_positions(L, D) added to
        # the character embeddings (L = ids.shape[1], D = the embedding width).
        raise NotImplementedError(
            "Task 4 (SinusoidalPositions.forward): embed, add the sinusoids, encode, pool, score"
        )


# =================================================================================================
# Below: the runner and its checks. Your code is all above this line.
# =================================================================================================


def report(title, outcome):
    """One line per check, in the form of the homework's self-check."""
    status, *details = outcome
    print(f"[{status}] {title}")
    for line in details:
        print(f"    {line}")
    return status == "passed"


def attempt(function, *args):
    """Call a student function; a crash becomes ('raised an error', one line) instead of a traceback."""
    from transformer_lab.selfcheck import summarise_exception

    try:
        return "ok", function(*args)
    except NotImplementedError as error:
        return "not done yet", f"NotImplementedError: {error}"
    except Exception as error:  # noqa: BLE001 - a student's bug is reported in one line
        return "raised an error", summarise_exception(error, __file__)


def shape_of(value):
    """A tensor's shape, or the type name of anything else (for a 'received:' line)."""
    return tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__


def check_toy_weights(function=None, seed=0):
    """Task 2: compare the student's table with the package's toy; name the likely mistake."""
    from transformer_lab.attention import attention, toy_inputs, toy_self_attention

    function = function or toy_weights
    source = inspect.getsource(function)
    if "scaled_dot_product_attention" in source or "transformer_lab" in source:
        return (
            "FAILED",
            "Likely mistake: a library attention call; this task asks for your own lines",
            "Try: project with w_q and w_k, score, scale, softmax, all with plain torch",
        )
    embeddings, w_q, w_k, w_v = toy_inputs(len(TOKENS), d_model=4, seed=seed)
    status, table = attempt(function, embeddings.clone(), w_q.clone(), w_k.clone())
    if status != "ok":
        return status, table
    expected = toy_self_attention(TOKENS, d_model=4, seed=seed)[1]
    if not isinstance(table, torch.Tensor) or tuple(table.shape) != (3, 3):
        shape = shape_of(table)
        return (
            "FAILED",
            "Likely mistake: not a (3, 3) tensor",
            "expected: (3, 3)",
            f"received: {shape}",
        )
    table = table.detach().float()
    if torch.allclose(table, expected, atol=1e-5):
        return ("passed",)
    x = embeddings[None]

    def weights(q, k):  # the package's attention on other queries and keys
        return attention(q, k, x @ w_v)[1][0]

    width = embeddings.shape[1]
    mistakes = {
        "softmax over the queries (each column sums to 1, not each row)": weights(
            x @ w_k, x @ w_q
        ).T,
        "queries and keys swapped (E W_k against E W_q)": weights(x @ w_k, x @ w_q),
        "no scaling: the scores were not divided by sqrt(d)": weights(
            x @ w_q * width**0.5, x @ w_k
        ),
        "divided by d instead of sqrt(d)": weights(x @ w_q / width**0.5, x @ w_k),
        "no projections: E against E, without w_q and w_k": weights(x, x),
    }
    for mistake, variant in mistakes.items():
        if torch.allclose(table, variant, atol=1e-5):
            return (
                "FAILED",
                f"Likely mistake: {mistake}",
                f"expected row 'failed': {_row(expected[1])}",
                f"received row 'failed': {_row(table[1])}",
            )
    sums = table.sum(dim=-1)
    if not torch.allclose(sums, torch.ones(3), atol=1e-4):
        return (
            "FAILED",
            "Likely mistake: the rows do not sum to 1 (no softmax, or one over another axis)",
            f"expected row sums: {_row(torch.ones(3))}",
            f"received row sums: {_row(sums)}",
        )
    worst = (table - expected).abs().max().item()
    return (
        "FAILED",
        "Likely mistake: another formula; rows sum to 1 but the weights differ "
        f"(largest difference {worst:.3f})",
        f"expected row 'failed': {_row(expected[1])}",
        f"received row 'failed': {_row(table[1])}",
    )


def _row(values):
    return "[" + ", ".join(f"{v:.3f}" for v in values.tolist()) + "]"


def check_no_positions(model_class=None, n_comments=64):
    """Task 1: the student's forward against the package's use_positions=False model, same weights."""
    from transformer_lab.char_transformer import encode_texts, load_praise_sample
    from transformer_lab.reproducibility import seed_everything

    model_class = model_class or NoPositions
    texts = list(load_praise_sample(n=n_comments, seed=1)["feedback_text"])
    ids = encode_texts(texts)
    # Most comments fill the window; cut every other one short so that there is padding to mask.
    ids[::2, ids.shape[1] // 2 :] = PAD_ID
    seed_everything(0)
    mine = model_class().eval()
    reference, with_positions = (
        PraiseClassifier(use_positions=False).eval(),
        PraiseClassifier().eval(),
    )
    for model in (reference, with_positions):
        model.load_state_dict(mine.state_dict())
    with torch.no_grad():
        status, logits = attempt(mine, ids)
        if status != "ok":
            return status, logits
        expected = reference(ids)
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != tuple(
            expected.shape
        ):
            shape = shape_of(logits)
            return (
                "FAILED",
                "Likely mistake: the output is not one logit per comment",
                f"expected shape: {tuple(expected.shape)}",
                f"received: {shape}",
                "Try: the head gives (N, 1); squeeze the last axis",
            )
        if torch.allclose(logits, expected, atol=1e-5):
            return ("passed",)
        if torch.allclose(logits, with_positions(ids), atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: the position embedding is still added",
                "Try: leave out the line that adds self.pos(...)",
            )
        shuffled = shuffle_characters(ids)
        status, moved = attempt(mine, shuffled)
        if status == "ok" and not torch.allclose(moved, logits, atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: your model still sees the order of the characters",
                "expected: the same logits after shuffling each comment's characters",
                f"received: logits that moved by up to {(moved - logits).abs().max().item():.3f}",
            )
        short = ids.clone()
        short[:, 16:] = PAD_ID  # the first 16 characters, padded to the whole window ...
        status, padded = attempt(mine, short)
        status_cut, cut = attempt(mine, short[:, :20])  # ... and to 20
        if status == status_cut == "ok" and not torch.allclose(cut, padded, atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: padding leaks into the result",
                f"expected: the same logits for the same characters with {ids.shape[1] - 20} fewer padding positions",
                f"received: logits that moved by up to {(cut - padded).abs().max().item():.3f}",
                "Try: pass the padding mask to the encoder and pool with masked_mean(x, padding)",
            )
    worst = (logits - expected).abs().max().item()
    return (
        "FAILED",
        f"Likely mistake: another computation (largest difference {worst:.3f} from the package's "
        "model without positions)",
        "Try: compare your forward line by line with PraiseClassifier.forward",
    )


def check_sinusoidal_table(function=None):
    """Task 4: the student's table against the package's, for two sizes; names the likely mistake."""
    from transformer_lab.char_transformer import sinusoidal_positions as book_table

    function = function or sinusoidal_positions
    for length, width in ((32, 24), (7, 6)):
        status, table = attempt(function, length, width)
        if status != "ok":
            return status, table
        expected = book_table(length, width)
        if not isinstance(table, torch.Tensor) or tuple(table.shape) != (length, width):
            shape = shape_of(table)
            return (
                "FAILED",
                "Likely mistake: the table has the wrong shape",
                f"expected: {(length, width)}",
                f"received: {shape}",
            )
        table = table.detach().float()
        if torch.allclose(table, expected, atol=1e-5):
            continue
        swapped = torch.stack([expected[:, 1::2], expected[:, 0::2]], dim=-1).flatten(
            1
        )  # cos, sin, cos, ...
        if torch.allclose(table, swapped, atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: sines and cosines swapped (the sines belong in the even columns)",
                f"expected row 1: {_row(expected[1, :4])}",
                f"received row 1: {_row(table[1, :4])}",
            )
        if torch.allclose(table[0], expected[0], atol=1e-5) and torch.allclose(
            table[:, :2], expected[:, :2], atol=1e-5
        ):
            return (
                "FAILED",
                "Likely mistake: the slower clocks are off: check the frequencies "
                "1 / 10000^(2i / d_model), with 2i the even column index",
                f"expected column 2: {_row(expected[:4, 2])}",
                f"received column 2: {_row(table[:4, 2])}",
            )
        worst = (table - expected).abs().max().item()
        return (
            "FAILED",
            f"Likely mistake: another formula (largest difference {worst:.3f})",
            f"expected row 1: {_row(expected[1, :4])}",
            f"received row 1: {_row(table[1, :4])}",
        )
    return ("passed",)


def check_sinusoidal_model(model_class=None, n_comments=64):
    """Task 4: the student's model equals the package's model with its position table set to the sinusoids."""
    from transformer_lab.char_transformer import encode_texts, load_praise_sample
    from transformer_lab.char_transformer import sinusoidal_positions as book_table
    from transformer_lab.reproducibility import seed_everything

    model_class = model_class or SinusoidalPositions
    ids = encode_texts(list(load_praise_sample(n=n_comments, seed=1)["feedback_text"]))
    seed_everything(0)
    mine = model_class().eval()
    reference = PraiseClassifier().eval()
    reference.load_state_dict(mine.state_dict())
    with torch.no_grad():
        reference.pos.weight.copy_(book_table(*reference.pos.weight.shape))
        status, logits = attempt(mine, ids)
        if status != "ok":
            return status, logits
        expected = reference(ids)
        if not isinstance(logits, torch.Tensor) or tuple(logits.shape) != tuple(
            expected.shape
        ):
            return (
                "FAILED",
                "Likely mistake: the output is not one logit per comment",
                f"expected shape: {tuple(expected.shape)}",
            )
        if torch.allclose(logits, expected, atol=1e-5):
            return ("passed",)
        status, moved = attempt(mine, shuffle_characters(ids))
        if status == "ok" and torch.allclose(moved, logits, atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: no positions reach the model: shuffled comments score the same",
            )
        learned = PraiseClassifier().eval()
        learned.load_state_dict(mine.state_dict())
        if torch.allclose(logits, learned(ids), atol=1e-5):
            return (
                "FAILED",
                "Likely mistake: the learned table self.pos is added, not your sinusoids",
            )
    worst = (logits - expected).abs().max().item()
    return (
        "FAILED",
        f"Likely mistake: another computation (largest difference {worst:.3f})",
        "Try: your NoPositions.forward with sinusoidal_positions(L, D) added right after the embedding",
    )


def shuffle_characters(ids, seed=0):
    """Each row's real characters in a random order, padding left at the end: the same bag."""
    generator = torch.Generator().manual_seed(seed)
    shuffled = ids.clone()
    for row, length in enumerate((ids != PAD_ID).sum(dim=1).tolist()):
        shuffled[row, :length] = ids[row, torch.randperm(length, generator=generator)]
    return shuffled


def print_toy_table(seed=0):
    """Task 2: the student's table with its labels."""
    from transformer_lab.attention import toy_inputs

    embeddings, w_q, w_k, _ = toy_inputs(len(TOKENS), d_model=4, seed=seed)
    table = toy_weights(embeddings, w_q, w_k).detach()
    print(
        f"your toy self-attention weights (seed {seed}); rows read, columns are read from:"
    )
    print(pd.DataFrame(table.numpy(), index=TOKENS, columns=TOKENS).round(2).to_string())


def positions_experiment(
    seeds=(0,), n_comments=4000, split_seed=0, length=LENGTH, epochs=None, sinusoidal=False
):
    """Task 1: the package's model with positions against yours without, same seed, split and batches.

    ``sinusoidal=True`` (Task 4) trains your SinusoidalPositions model as a third variant.
    """
    from transformer_lab.char_transformer import (
        load_praise_sample,
        majority_baseline,
        predict_logits,
        split_sample,
        train_praise_model,
    )
    from transformer_lab.metrics import accuracy
    from transformer_lab.timing import format_wall_time, stopwatch

    options = {} if epochs is None else {"epochs": epochs}
    split = split_sample(load_praise_sample(n=n_comments), length=length, seed=split_seed)
    print(
        f"{len(split.y_train)} training and {len(split.y_test)} test comments, split seed {split_seed}, "
        f"window {length} characters"
    )
    print(
        f"majority baseline (always the most common training label): "
        f"{majority_baseline(split.y_train, split.y_test):.3f}"
    )
    models = {}
    for seed in seeds:
        with stopwatch() as clock:
            models["with"] = train_praise_model(split, True, seed, **options)
            models["yours"] = train_praise_model(
                split, False, seed, model_class=NoPositions, **options
            )
            if sinusoidal:
                models["sines"] = train_praise_model(
                    split, True, seed, model_class=SinusoidalPositions, **options
                )
        scores = {
            name: accuracy(predict_logits(model, split.x_test), split.y_test)
            for name, model in models.items()
        }
        print(
            f"seed {seed}: with positions {scores['with']:.3f}, yours without {scores['yours']:.3f}, "
            f"difference {scores['with'] - scores['yours']:+.3f}"
            + (f"; your sinusoids {scores['sines']:.3f}" if sinusoidal else "")
            + f" ({format_wall_time(clock['seconds'])})"
        )
    if any(MY_PAIR):
        score_pair(models, length)


def score_pair(models, length=LENGTH):
    """Task 1 extra: the last seed's two models on the student's order-flipped pair."""
    from transformer_lab.char_transformer import encode_texts, predict_logits

    first, second = MY_PAIR
    ids = encode_texts([first, second], length)
    if sorted(ids[0].tolist()) != sorted(ids[1].tolist()):
        print(
            f"MY_PAIR: the two comments do not hold the same characters within the first {length}, "
            "so they are not an order-flipped pair"
        )
        return
    for name, model in models.items():
        probabilities = torch.sigmoid(predict_logits(model, ids)).tolist()
        print(
            f"{name:>5}: P(praise) {probabilities[0]:.3f} for {first!r}, {probabilities[1]:.3f} for {second!r}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument(
        "--train", action="store_true", help="Task 1: train with positions and your variant"
    )
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="training seeds (Task 1)"
    )
    parser.add_argument(
        "--split-seed", type=int, default=0, help="seed of the train/test split (Task 1)"
    )
    parser.add_argument(
        "--length", type=int, default=LENGTH, help="characters the model reads (Task 1)"
    )
    parser.add_argument(
        "--comments", type=int, default=4000, help="comments in the sample (Task 1)"
    )
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="training epochs (Task 1; default: chapter 4's)",
    )
    parser.add_argument(
        "--toy-seed", type=int, default=0, help="seed of the toy's random matrices (Task 2)"
    )
    parser.add_argument(
        "--sinusoidal",
        action="store_true",
        help="Task 4 (stretch): check your sinusoidal model; with --train, train it too",
    )
    args = parser.parse_args(argv)
    print("== Checks")
    task1 = report("Task 1: NoPositions.forward(ids, padding=None)", check_no_positions())
    task2 = report(
        "Task 2: toy_weights(embeddings, w_q, w_k)", check_toy_weights(seed=args.toy_seed)
    )
    task4 = args.sinusoidal and all(
        [
            report(
                "Task 4 (stretch): sinusoidal_positions(length, d_model)",
                check_sinusoidal_table(),
            ),
            report(
                "Task 4 (stretch): SinusoidalPositions.forward(ids, padding=None)",
                check_sinusoidal_model(),
            ),
        ]
    )
    if task2:
        print("\n== Task 2: the 3-token attention map")
        print_toy_table(args.toy_seed)
    if args.train:
        print(
            "\n== Task 1: with positions against yours without"
            + (" (and your sinusoids)" if task4 else "")
        )
        if task1:
            positions_experiment(
                args.seeds, args.comments, args.split_seed, args.length, args.epochs, task4
            )
        else:
            print("finish NoPositions.forward first: the check above must pass")
    elif task1:
        print(
            "\nTask 1: your model passes; now train it with --train (about 3 s for one training seed)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
