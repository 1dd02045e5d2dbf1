"""Week 20 exercises, Tasks 1 and 2: positions on and off, and the 3-token attention map.

Run from the repository root (a laptop CPU is enough; Task 1 takes a few seconds):

    python exercises/week-20/starter.py                 # Task 1, then Task 2
    python exercises/week-20/starter.py --task toy      # Task 2 only
    python exercises/week-20/starter.py --seeds 0 1 2   # Task 1 with several training seeds

Task 1 trains the book's tiny character transformer (transformer_lab.char_transformer) twice on
the same 4,000 CloudWave comments, split and seed: with position embeddings and without them.
``use_positions=False`` is the package's version of commenting out ``+ self.pos(...)``.
Task 2 prints the self-attention weights of the untrained login / failed / again toy.
Task 3 (the memo) is prose: no code needed.
"""

import argparse
import inspect
import sys

import pandas as pd

from transformer_lab.attention import toy_self_attention
from transformer_lab.char_transformer import (
    load_praise_sample,
    majority_baseline,
    split_sample,
    train_and_score,
    train_praise_model,
)


def positions_experiment(seeds=(0,), n_comments=4000, epochs=None):
    """Task 1: test accuracy with and without position embeddings, next to the majority baseline.

    ``epochs=None`` trains for as many epochs as chapter 4 does (the package's default).
    """
    if epochs is None:
        epochs = inspect.signature(train_praise_model).parameters["epochs"].default
    split = split_sample(load_praise_sample(n=n_comments))
    baseline = majority_baseline(split.y_train, split.y_test)
    print(f"{len(split.x_train)} training and {len(split.x_test)} test comments, "
          f"{epochs} epoch{'s' if epochs != 1 else ''}")
    print(f"majority baseline (always the most common training label): {baseline:.3f}")
    for seed in seeds:
        with_positions = train_and_score(True, seed=seed, split=split, epochs=epochs)
        without_positions = train_and_score(False, seed=seed, split=split, epochs=epochs)
        print(f"seed {seed}: with positions {with_positions:.3f}, without {without_positions:.3f}, "
              f"difference {with_positions - without_positions:+.3f}")


def toy_attention_map(seed=0):
    """Task 2: the 3x3 weights of the untrained toy; each row is one token reading all three."""
    tokens = ["login", "failed", "again"]
    # Random 4-number embeddings and random Q/K/V matrices drawn from `seed`: nothing is trained.
    _, weights = toy_self_attention(tokens, width=4, seed=seed)
    print(f"toy self-attention weights (seed {seed}); rows read, columns are read from:")
    print(pd.DataFrame(weights.numpy(), index=tokens, columns=tokens).round(2).to_string())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=["positions", "toy", "all"], default="all")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="training seeds for Task 1")
    parser.add_argument("--comments", type=int, default=4000, help="comments in the sample (Task 1)")
    parser.add_argument("--epochs", type=int, default=None, help="training epochs (Task 1; default: as in chapter 4)")
    parser.add_argument("--toy-seed", type=int, default=0, help="seed of the toy's random matrices (Task 2)")
    args = parser.parse_args(argv)
    if args.task in ("positions", "all"):
        print("== Task 1: remove positions")
        positions_experiment(args.seeds, args.comments, args.epochs)
    if args.task in ("toy", "all"):
        print(("\n" if args.task == "all" else "") + "== Task 2: the 3-token attention map")
        toy_attention_map(args.toy_seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
