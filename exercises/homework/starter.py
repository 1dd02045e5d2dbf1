"""Week 20 homework: the functions you write, and a runner that tries them out.

Run from the repository root:

    python exercises/homework/starter.py            # self-check, then Exercises 2, 3, 7, 8 and 9
    python exercises/homework/starter.py --train    # Exercise 5: train the baseline and the transformer
    python -m transformer_lab.selfcheck             # the self-check alone (checks this file by default)

Replace each ``raise NotImplementedError(...)`` with your code, in order: Exercise 1 first.
The self-check compares your functions with the book's and names the likely mistake when they
disagree. Do not import the answers from ``transformer_lab`` (that would check the book, not you).
The exercise page says what each exercise asks: exercises/homework/index.md.
"""

import argparse
import sys

import torch
from tokenizers import Tokenizer, models, pre_tokenizers, trainers  # noqa: F401  (Exercise 6)
from torch import nn

# --- Exercise 1 ----------------------------------------------------------------------------------


def attention(q, k, v, padding):
    """Scaled dot-product attention for one head, written by hand.

    q (B, Lq, D), k (B, Lk, D), v (B, Lk, Dv); padding (B, Lk) bool, True = ignore that key.
    Return (output, weights): output (B, Lq, Dv), weights (B, Lq, Lk), each row of weights
    summing to 1. Do not call a ready-made attention function.
    """
    raise NotImplementedError("Exercise 1 (attention): scores, mask with -inf, softmax over the keys, mix the values")


# --- Exercise 3 ----------------------------------------------------------------------------------


def masked_mean(x, padding):
    """Average the real tokens of each example: x (B, L, D), padding (B, L) True = padding -> (B, D).

    Leave padded tokens out of both the sum and the count. Every example has a real token.
    """
    raise NotImplementedError("Exercise 3 (masked_mean): mask, sum over the tokens, divide by the real count")


# --- Exercise 4 ----------------------------------------------------------------------------------


def accuracy(logits, labels):
    """Share of examples classified correctly, as a Python float.

    logits (N,) raw scores (a logit of 0 is a probability of 0.5), labels (N,) in {0, 1}.
    """
    raise NotImplementedError("Exercise 4 (accuracy): threshold the logits, compare, average, return a float")


# --- Exercise 6 ----------------------------------------------------------------------------------


def train_bpe_tokenizer(corpus, vocab_size):
    """Train and return a BPE ``tokenizers.Tokenizer`` on ``corpus`` (a list of strings).

    A BPE model with ``unk_token="[UNK]"`` (so unseen characters become [UNK] instead of
    vanishing), a Whitespace pre-tokenizer, and a BpeTrainer with ``vocab_size`` and the special
    tokens ["[UNK]", "[PAD]"] (in that order).
    """
    raise NotImplementedError("Exercise 6 (train_bpe_tokenizer): model, pre-tokenizer, trainer, train, return")


# --- Exercise 8 ----------------------------------------------------------------------------------


def tokens_per_word(tokenizer, words):
    """Return {word: number of tokens} for each word in ``words``, each word encoded on its own."""
    raise NotImplementedError("Exercise 8 (tokens_per_word): encode each word, count its tokens")


# --- Exercise 9 ----------------------------------------------------------------------------------


def embedding_parameters(vocab_size, d):
    """Trainable parameters of an embedding matrix with ``vocab_size`` rows of width ``d``."""
    raise NotImplementedError("Exercise 9 (embedding_parameters): how many numbers does the table hold?")


# =================================================================================================
# Below: the runner. You change the settings in CAPITALS (or pass them on the command line);
# the functions you write are all above this line.
# =================================================================================================

# Exercise 2: change one setting at a time, run again, and explain what changed.
NUM_HEADS = 2  # try 4
HEAD = 0  # which head to print; try another one
USE_PADDING_MASK = True  # try False

# Exercise 5: change exactly ONE of these, record it and its validation accuracy.
EPOCHS = 12
LEARNING_RATE = 3e-3
TRAIN_HEADS = 2


def try_exercise(title, step):
    """Run one exercise's demo: 'not done yet' or a one-line error instead of a traceback."""
    from transformer_lab.selfcheck import summarise_exception

    print(f"\n== {title}")
    try:
        step()
    except NotImplementedError as error:
        print(f"not done yet: {error}")
    except Exception as error:  # noqa: BLE001 - a student's bug is reported in one line
        print(f"raised {summarise_exception(error, __file__)}")


def explore_multihead_attention(num_heads=NUM_HEADS, head=HEAD, use_padding_mask=USE_PADDING_MASK):
    """Exercise 2: nn.MultiheadAttention against your attention, then one head of a random layer."""
    from transformer_lab.encoder import identity_attention
    from transformer_lab.set_task import make_sets

    x, padding, _ = make_sets(1, seed=11)  # one set: (1, 8, 2) with its padding mask (1, 8)
    print(f"one set: x {tuple(x.shape)}, {int((~padding).sum())} real tokens, {int(padding.sum())} padded")
    torch.manual_seed(20)
    layer = nn.MultiheadAttention(16, num_heads, dropout=0.0, batch_first=True)
    tokens = nn.Linear(2, 16)(x)  # embed each (key, value) pair into 16 numbers
    mask = padding if use_padding_mask else None
    z, per_head = layer(tokens, tokens, tokens, key_padding_mask=mask, need_weights=True, average_attn_weights=False)
    print(f"{num_heads} heads: output {tuple(z.shape)}, per-head weights {tuple(per_head.shape)}")
    labels = [f"t{i}" if keep else f"p{i}" for i, keep in enumerate((~padding[0]).tolist())]
    print(f"head {head} of the untrained layer (rows: queries, columns: keys; p = padding):")
    print("      " + " ".join(f"{label:>5}" for label in labels))
    for label, row in zip(labels, per_head[0, head].detach().tolist()):
        print(f"{label:>5} " + " ".join(f"{value:5.2f}" for value in row))
    library_out, library_weights = identity_attention(2)(x, x, x, key_padding_mask=padding)
    mine_out, mine_weights = attention(x, x, x, padding)
    torch.testing.assert_close(mine_out, library_out)
    torch.testing.assert_close(mine_weights, library_weights)
    print("your attention equals nn.MultiheadAttention with one head and identity projections")


def shuffle_check():
    """Exercise 3: shuffle the tokens of each set (and its mask with them) and pool with your masked_mean."""
    from transformer_lab.set_task import make_sets

    x, padding, _ = make_sets(4, seed=11)
    torch.manual_seed(30)
    embed = nn.Linear(2, 32)
    layer = nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, dropout=0.0, batch_first=True).eval()
    order = torch.randperm(x.shape[1])
    with torch.no_grad():
        encoded = layer(embed(x), src_key_padding_mask=padding)
        shuffled = layer(embed(x[:, order]), src_key_padding_mask=padding[:, order])
        print("encoder outputs shuffled along with the tokens:", torch.allclose(shuffled, encoded[:, order], atol=1e-5))
        pooled, pooled_shuffled = masked_mean(encoded, padding), masked_mean(shuffled, padding[:, order])
    print("masked mean unchanged by the shuffle:", torch.allclose(pooled, pooled_shuffled, atol=1e-5))
    gap = (encoded.mean(dim=1) - pooled).abs().max().item()
    print(f"largest difference between a plain .mean(dim=1) and your masked mean: {gap:.3f}")


def prediction_shuffle_check(model=None, n_sets=64, seed=31, indent=""):
    """Exercise 3: does shuffling the tokens of each set (and its mask with them) change the prediction?

    The package's SetClassifier pools with the package's masked mean (it has no slot for yours), so
    this checks the book's model: untrained by default, or the model you pass (``--train`` passes
    both trained models). Evaluation mode, so that no dropout could make two runs differ.
    """
    from transformer_lab.set_classifier import SetClassifier
    from transformer_lab.set_task import make_sets

    if model is None:
        torch.manual_seed(seed)
        model = SetClassifier(use_attention=True)
    model.eval()
    x, padding, _ = make_sets(n_sets, seed=13)
    order = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        logits = model(x, padding)
        shuffled = model(x[:, order], padding[:, order])
    flipped = int(((logits > 0) != (shuffled > 0)).sum())
    unchanged = torch.allclose(logits, shuffled, atol=1e-5)
    print(f"{indent}SetClassifier logits unchanged by the shuffle (evaluation mode): {unchanged}")
    print(f"{indent}predicted class changed in {flipped} of {n_sets} sets")


def run_tokenizer():
    """Exercise 7: train at vocab_size 80 and encode a sentence the corpus never contained."""
    from transformer_lab.tokenizer import TINY_CORPUS

    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), vocab_size=80)
    sentence = "the transformer decoder generates text"
    encoding = tokenizer.encode(sentence)
    print("vocabulary size:", tokenizer.get_vocab_size())
    print("tokens:", encoding.tokens)
    print("ids:   ", encoding.ids)
    print(f"{len(sentence.split())} words -> {len(encoding.tokens)} tokens")


def count_tokens_per_word():
    """Exercise 8: tokens per word next to how often each word occurs in the corpus."""
    from transformer_lab.tokenizer import TINY_CORPUS, word_occurrences

    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), vocab_size=80)
    words = ["cat", "dog", "attention", "tokenizer", "self-attention", "encodings"]
    for word, count in tokens_per_word(tokenizer, words).items():
        seen = word_occurrences(TINY_CORPUS, word)
        print(f"{word!r:>17}: {count} token(s); in the corpus {seen['as a word']}x as a word, "
              f"{seen['inside a word']}x inside a word")


def embedding_costs():
    """Exercise 9: the embedding table for this vocabulary and for 50,000 tokens."""
    from transformer_lab.encoder import encoder_layer_parameters
    from transformer_lab.tokenizer import TINY_CORPUS

    tiny = train_bpe_tokenizer(list(TINY_CORPUS), vocab_size=80).get_vocab_size()
    for vocab_size in (tiny, 50_000):
        counts = ", ".join(f"d={d}: {embedding_parameters(vocab_size, d):,}" for d in (128, 512, 768))
        print(f"vocab_size={vocab_size:,}  ->  {counts}")
    print(f"one encoder layer (d=512, 8 heads, d_ff=2048): {encoder_layer_parameters(512, 8, 2048):,}")


def one_change_experiment(epochs=EPOCHS, learning_rate=LEARNING_RATE, heads=TRAIN_HEADS, n_train=2048, seed=42,
                          plot_path=None):
    """Exercise 5: the mean-pooling baseline and the transformer, trained the same way.

    With ``plot_path`` the loss curves of both models are also saved there as a PNG.
    """
    from transformer_lab.reproducibility import seed_everything
    from transformer_lab.set_classifier import SetClassifier
    from transformer_lab.set_task import make_sets
    from transformer_lab.timing import format_wall_time
    from transformer_lab.training import train_classifier

    train_data, val_data = make_sets(n_train, seed=11), make_sets(512, seed=12)
    print(f"epochs={epochs}, learning_rate={learning_rate}, heads={heads}, {n_train} training sets, seed {seed}")
    histories = {}
    for name, use_attention in [("mean baseline", False), ("transformer", True)]:
        seed_everything(seed)  # same initial weights and batches for both models, as in chapter 3
        model = SetClassifier(use_attention, nhead=heads)
        result = train_classifier(model, train_data, val_data, epochs=epochs, learning_rate=learning_rate, seed=seed)
        print(f"{name}: validation accuracy {result.accuracy:.3f} (best epoch {result.best_epoch}), "
              f"{result.parameters:,} parameters, {format_wall_time(result.seconds)}")
        print("  loss per epoch (train / validation): "
              + ", ".join(f"{train:.3f}/{val:.3f}" for train, val in result.history))
        with torch.no_grad():
            logits = result.model(val_data[0], val_data[1])
        try:
            print(f"  your accuracy() on the same logits: {accuracy(logits, val_data[2]):.3f}")
        except NotImplementedError:
            print("  (finish Exercise 4 to see your accuracy() here too)")
        prediction_shuffle_check(result.model, indent="  ")
        histories[name] = result.history
    if plot_path:
        save_loss_curves(histories, plot_path)
        print(f"loss curves saved to {plot_path}")


def save_loss_curves(histories, path):
    """Exercise 5's figure: train and validation loss per epoch, one panel per model."""
    import matplotlib

    matplotlib.use("Agg")  # a script writes a file; no window needed
    import matplotlib.pyplot as plt

    from transformer_lab.plotting import use_book_style

    use_book_style()
    fig, axes = plt.subplots(1, len(histories), figsize=(10, 3.5), sharey=True)
    for ax, (name, history) in zip(axes, histories.items()):
        epochs = range(1, len(history) + 1)
        ax.plot(epochs, [train for train, _ in history], label="train (during updates)")
        ax.plot(epochs, [val for _, val in history], linestyle="--", label="validation (end of epoch)")
        ax.set(title=name, xlabel="epoch", ylabel="binary cross-entropy")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Try the homework functions; --train runs Exercise 5.")
    parser.add_argument("--train", action="store_true", help="run the Exercise 5 training experiment")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--learning-rate", type=float, default=LEARNING_RATE)
    parser.add_argument("--heads", type=int, default=TRAIN_HEADS)
    parser.add_argument("--n-train", type=int, default=2048, help="training sets (default 2048)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the initial weights and batches")
    parser.add_argument("--plot", metavar="PNG", help="with --train: also save the loss curves to this file")
    args = parser.parse_args(argv)
    if args.train:
        try_exercise("Exercise 5: one change, then compare",
                     lambda: one_change_experiment(args.epochs, args.learning_rate, args.heads, args.n_train, args.seed,
                                                   args.plot))
        return 0
    from transformer_lab.selfcheck import check_file, format_report

    print(format_report(check_file(__file__, display="exercises/homework/starter.py")))
    try_exercise("Exercise 2: explore nn.MultiheadAttention", explore_multihead_attention)
    try_exercise("Exercise 3: shuffle a set, pool it", shuffle_check)
    try_exercise("Exercise 3: shuffle a set, predict", prediction_shuffle_check)
    try_exercise("Exercise 7: run the tokenizer", run_tokenizer)
    try_exercise("Exercise 8: tokens per word", count_tokens_per_word)
    try_exercise("Exercise 9: embedding parameters", embedding_costs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
