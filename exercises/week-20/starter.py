"""Week 20: your code for Tasks 1, 2, 4, 5 and 6, and the settings of the experiments.

Run from the repository root:

    python exercises/week-20/starter.py                  # self-check every task, Task 2's table
    python exercises/week-20/starter.py --train          # Task 1: the controlled experiment
    python exercises/week-20/starter.py --train --test   # Task 1, last: the test split, once
    python exercises/week-20/starter.py --debug          # Task 4: the broken model, your repair
    python exercises/week-20/starter.py --train --sinusoidal   # Task 5 (stretch): a third model
    python exercises/week-20/starter.py --tokens         # Task 6 (stretch): BPE ids, not characters
    python -m transformer_lab.selfcheck --page week-20   # the self-check alone (this file)

Write your code where it says TODO; do not edit the package (the chapters and tests use it).
Task 3 (the memo) is prose: no code. The page says what each task asks: exercises/week-20/index.md.
"""

import sys

import torch  # noqa: F401  (your code uses it)

# --- Task 1: the settings of your controlled experiment ------------------------------------------
# Change ONE of these per run (or pass --comments, --window, --split-seed, --patience,
# --max-epochs, --seeds, --pairs), and write down what moved. Chapter 4's recipe, more comments.
TASK1_COMMENTS = 4000  # comments in Task 1's sample (chapter 4 drew 2000)
TASK1_SEEDS = (1, 2, 3)  # not seed 0: it chose TASK1_COMMENTS (the page says how)
N_PAIRS = 400  # mirrored pairs per set: one scored by every run, one only by --test
WINDOW = 48  # characters the model reads (Tasks 1 and 4 to 6)
SPLIT_SEED = 0  # which comments land in train, validation and test
PATIENCE = 10  # stop after this many epochs without a better validation loss (None: never)
MAX_EPOCHS = 100  # the most epochs a run may take
# Tasks 4 to 6 train on chapter 4's sample with chapter 4's seeds
SEEDS = (0, 1, 2)
N_COMMENTS = 2000

# --- Task 6 (stretch): tokens instead of characters --------------------------------------------
BPE_VOCAB = (
    400  # vocabulary of the byte-level BPE (chapter 5's kind), trained on this split
)
BPE_LENGTH = 8  # tokens the model reads (or pass --bpe-length, --bpe-vocab)

# --- Task 2: the toy sentence ----------------------------------------------------------------------
TOY_TOKENS = ("login", "failed", "again")  # the log line of the course's toy
TOY_SEED = 5  # seed of the random embeddings and matrices (try others with --toy-seed)


# --- Task 1 ------------------------------------------------------------------------------------------


def forward_without_positions(model, ids, padding):
    """The forward pass of chapter 4's PraiseClassifier ``model`` WITHOUT its position embedding
    (the self-check hands over the model's parts only: no forward, no switch to flip).

    ids (N, L) long character ids, padding (N, L) bool (True = padding) -> logits (N,).
    Use model.embed, model.encoder, model.head and transformer_lab.pooling.masked_mean.
    """
    # TODO Task 1: embed, encode with the padding mask, pool the real characters, score.
    raise NotImplementedError(
        "Task 1 (forward_without_positions): embed, encode with the padding mask, pool, score"
    )


# --- Task 2 ------------------------------------------------------------------------------------------


def toy_weights(embeddings, w_q, w_k):
    """Self-attention weights of the toy, with your own lines (no library attention function).

    embeddings E (n, d): one row per token; w_q, w_k (d, d). Returns (n, n): row i says how much
    token i reads from each token, and every row sums to 1.
    """
    # TODO Task 2: queries, keys, scaled scores, softmax over the right axis.
    raise NotImplementedError("Task 2 (toy_weights): queries, keys, scaled scores, softmax")


# --- Task 4 ------------------------------------------------------------------------------------------


def repaired_forward(model, ids, padding):
    """The forward of transformer_lab.broken_transformer.BrokenPraiseClassifier, repaired.

    model holds that model's parts (model.embed, model.pos, model.encoder, model.head; the
    self-check hands over no forward of their own); ids (N, L) long, padding (N, L) bool
    (True = padding) -> logits (N,). Keep its steps; fix only what is wrong.
    """
    # TODO Task 4: read the broken forward, find its three bugs, write the repaired one here.
    raise NotImplementedError(
        "Task 4 (repaired_forward): read the broken forward, then fix its three bugs"
    )


# --- Task 5 (stretch) --------------------------------------------------------------------------------


def sinusoidal_positions(length, d_model):
    """Fixed position vectors (length, d_model), nothing learned: row p, columns 2i and 2i + 1 hold
    sin(p / 10000^(2i / d_model)) and cos(p / 10000^(2i / d_model)). d_model is even."""
    # TODO Task 5 (stretch): one tensor operation per column family, no Python loop over positions.
    raise NotImplementedError(
        "Task 5 (sinusoidal_positions): positions, frequencies, sines and cosines"
    )


def forward_with_sinusoids(model, ids, padding):
    """Your Task 1 forward with sinusoidal_positions(L, D) added to the character embeddings
    (L = ids.shape[1], D = model.embed.embedding_dim); model.pos stays unused."""
    # TODO Task 5 (stretch): embed, add your sinusoids, encode, pool, score.
    raise NotImplementedError(
        "Task 5 (forward_with_sinusoids): embed, add the sinusoids, encode, pool, score"
    )


# --- Task 6 (stretch) --------------------------------------------------------------------------------


def encode_with_bpe(tokenizer, texts, length):
    """Each comment's first ``length`` BPE ids, right-padded with the tokenizer's [PAD] id.

    tokenizer: a tokenizers.Tokenizer; texts: list of N strings -> (N, length) long tensor.
    """
    # TODO Task 6 (stretch): encode, cut, pad, stack.
    raise NotImplementedError(
        "Task 6 (encode_with_bpe): encode each comment, cut, pad, stack"
    )


def main(argv=None):
    """Self-check this file, then run what the command line asks (the runner is in the package)."""
    from transformer_lab.week20_runs import main as run

    return run(globals(), argv)


if __name__ == "__main__":
    sys.exit(main())
