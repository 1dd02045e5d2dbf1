"""What ``exercises/homework/starter.py`` runs: the self-check, then every exercise's example on
the student's own functions, and Exercise 6's training (``--train``).

The starter holds only the student's functions and the settings they change (CAPITALS); its
``main`` calls :func:`main` here with its own module, which this module calls ``S``. Exercise 6
follows the book's protocol: the one change is judged on a validation split; the test split is
scored only on request (``--test``), once, after the last choice.
"""

from __future__ import annotations

import argparse
import types
import warnings
from collections.abc import Sequence

import torch
from torch import nn

from transformer_lab.selfcheck.checks.registry import HOMEWORK
from transformer_lab.selfcheck.execution import dot_t_spy, silenced_terminal, uses_dot_t
from transformer_lab.set_classifier import LEARNING_RATE, MAX_EPOCHS, NHEAD, PATIENCE, SEED
from transformer_lab.week20_runs import as_namespace, check_in_subprocess

# Exercise 6 runs chapter 3's recipe (set_classifier's constants, set_task.make_split); the
# starter's CAPITALS are tested equal to them.
S: types.ModuleType = types.ModuleType("starter")  # the student's starter, set by main()
# Exercise 6 trains on a draw of the sets chapter 3 did not use: chapter 3 prints its runs on
# split 0, and the same recipe on the same draw would print the same lines before the student ran.
DEFAULT_SPLIT = 1
# Exercise 9's words: not chapter 5's six; token-pair is hyphenated like its self-attention, but
# the chapter never splits it.
EXERCISE_9_WORDS = ("the", "token", "every", "sentence", "queries", "token-pair")


def try_exercise(title, step):
    """Run one exercise's demo: 'not done yet' or a one-line error instead of a traceback."""
    from transformer_lab.selfcheck import summarise_exception

    print(f"\n== {title}")
    try:
        step()
    except NotImplementedError as error:
        print(f"not done yet: {error}")
    except Exception as error:  # noqa: BLE001 - a student's bug is reported in one line
        print(f"raised {summarise_exception(error, S.__file__)}")


def yes_no(flag):
    return "yes" if flag else "NO"


def accuracy_example():
    """Exercise 1: the prediction box's logits and labels."""
    logits, labels = torch.tensor([2.0, 0.3, -0.2]), torch.tensor([1.0, 0.0, 0.0])
    result = S.accuracy(logits, labels)
    shown = f"{result:.4f}" if type(result) is float else repr(result)
    print(
        f"logits 2.0, 0.3, -0.2 with labels 1, 0, 0: accuracy() returns {shown} ({type(result).__name__})"
    )


def masked_mean_example():
    """Exercise 2: three tokens, the third one padding (the prediction box's example)."""
    x = torch.tensor([[[2.0, 4.0], [4.0, 8.0], [900.0, 900.0]]])
    pooled = S.masked_mean(x, torch.tensor([[False, False, True]]))
    print(
        f"tokens [2, 4], [4, 8] and padding [900, 900]: masked_mean gives {pooled.tolist()}"
    )


def attention_example():
    """Exercise 3: all-zero queries and keys, values 2, 4 and 100, the third key masked."""
    q, k = torch.zeros(1, 2, 3), torch.zeros(1, 3, 3)
    v = torch.tensor([[[2.0], [4.0], [100.0]]])
    with warnings.catch_warnings(record=True) as caught, dot_t_spy() as seen:
        warnings.simplefilter("always")
        output, weights = S.attention(q, k, v, torch.tensor([[False, False, True]]))
        dot_t = uses_dot_t(S.attention, caught) or bool(seen)
    shapes = (tuple(output.shape), tuple(weights.shape))
    if shapes != ((1, 2, 1), (1, 2, 3)):
        # PyTorch warns once per process: the spy notes every .T of a tensor that is not 2-D
        if dot_t:
            print(
                "warning: your attention used .T on a 3-D tensor, which reverses all three "
                "axes (and is deprecated); use k.transpose(-2, -1)"
            )
        print(
            f"output {shapes[0]} and weights {shapes[1]}, expected (1, 2, 1) and (1, 2, 3): "
            "one output per query and one weight per key; check the transpose of k"
        )
        return
    print(
        f"outputs for the two queries: {[round(value, 4) for value in output.flatten().tolist()]}"
    )
    print(
        f"weights of the first query:  {[round(value, 4) for value in weights[0, 0].tolist()]}"
    )


def explore_multihead_attention(num_heads=None, head=None, use_padding_mask=None):
    """Exercise 4: nn.MultiheadAttention against your attention, then one head of a random layer."""
    from transformer_lab.encoder import identity_attention
    from transformer_lab.set_task import make_sets

    num_heads = S.NUM_HEADS if num_heads is None else num_heads
    head = S.HEAD if head is None else head
    use_padding_mask = S.USE_PADDING_MASK if use_padding_mask is None else use_padding_mask

    x, padding, _ = make_sets(1, seed=11)  # one set: (1, 8, 2) with its padding mask (1, 8)
    print(
        f"one set: x {tuple(x.shape)}, {int((~padding).sum())} real tokens, {int(padding.sum())} padded"
    )
    torch.manual_seed(20)
    layer = nn.MultiheadAttention(16, num_heads, dropout=0.0, batch_first=True)
    tokens = nn.Linear(2, 16)(x)  # embed each (key, value) pair into 16 numbers
    mask = padding if use_padding_mask else None
    z, per_head = layer(
        tokens,
        tokens,
        tokens,
        key_padding_mask=mask,
        need_weights=True,
        average_attn_weights=False,
    )
    print(
        f"{num_heads} heads: output {tuple(z.shape)}, per-head weights {tuple(per_head.shape)}"
    )
    labels = [f"t{i}" if keep else f"p{i}" for i, keep in enumerate((~padding[0]).tolist())]
    print(
        f"head {head} of the untrained layer (rows: queries, columns: keys; p = padding):"
    )
    print("      " + " ".join(f"{label:>5}" for label in labels))
    for label, row in zip(labels, per_head[0, head].detach().tolist()):
        print(f"{label:>5} " + " ".join(f"{value:5.2f}" for value in row))
    library_out, library_weights = identity_attention(2)(x, x, x, key_padding_mask=padding)
    mine_out, mine_weights = S.attention(x, x, x, padding)
    same = torch.allclose(mine_out, library_out, atol=1e-5) and torch.allclose(
        mine_weights, library_weights, atol=1e-5
    )
    print(
        f"your attention equals nn.MultiheadAttention with one head and identity projections: {yes_no(same)}"
    )


def your_set_classifier(use_attention=True, heads=NHEAD, seed=30, my_multi_head=False):
    """Chapter 3's set classifier built around YOUR attention and masked_mean (Exercises 5, 6)."""
    from transformer_lab.set_classifier import build_set_classifier

    def your_multi_head(
        x, padding, mha
    ):  # the output; the layer has no use for the weights
        return S.multi_head_attention(x, padding, mha)[0]

    extra = (
        {"multi_head_fn": your_multi_head}
        if my_multi_head
        else {"attention_fn": S.attention}
    )
    return build_set_classifier(
        "transformer" if use_attention else "mean baseline",
        seed,
        nhead=heads,
        pool_fn=S.masked_mean,
        **(extra if use_attention else {}),
    )


TOLERANCE = 1e-4


def shuffle_check(model=None, n_sets=64, seed=31, indent=""):
    """Exercise 5: the same sets, tokens shuffled and four more padding positions: what changes?

    The model is the set classifier around your attention and masked_mean (untrained by default;
    --train passes the trained ones). Evaluation mode, so no dropout could make two runs differ.
    """
    from transformer_lab.set_task import make_sets

    # Another length changes the order of floating-point sums inside the layer: differences of
    # about 1e-5 are rounding; a pooling that counts padding moves by tenths.
    model = (model or your_set_classifier()).eval()
    x, padding, _ = make_sets(n_sets, seed=13)
    order = torch.randperm(x.shape[1], generator=torch.Generator().manual_seed(seed))
    extra = 4  # the same sets, written with four more padding positions at the end
    moved_x = torch.cat([x[:, order], torch.zeros(n_sets, extra, 2)], dim=1)
    moved_padding = torch.cat(
        [padding[:, order], torch.ones(n_sets, extra, dtype=torch.bool)], dim=1
    )
    with torch.no_grad():
        logits, moved_logits = model(x, padding), model(moved_x, moved_padding)
        if model.encoder is not None:
            encoded = model.encoder(model.embed(x), src_key_padding_mask=padding)
            moved = model.encoder(model.embed(moved_x), src_key_padding_mask=moved_padding)
            real = ~padding[:, order]
            follows = torch.allclose(
                moved[:, :8][real], encoded[:, order][real], atol=TOLERANCE, rtol=TOLERANCE
            )
            print(
                f"{indent}encoder outputs of the real tokens move with the tokens: {yes_no(follows)}"
            )
        else:
            encoded = model.embed(x)
            moved = model.embed(moved_x)
        pooled, moved_pooled = (
            model.pool_fn(encoded, padding),
            model.pool_fn(moved, moved_padding),
        )
        plain = (moved.mean(dim=1) - encoded.mean(dim=1)).abs().max().item()
    print(
        f"{indent}your masked_mean of them is unchanged: "
        f"{yes_no(torch.allclose(pooled, moved_pooled, atol=TOLERANCE, rtol=TOLERANCE))}"
    )
    print(f"{indent}a plain .mean(dim=1) instead would move by up to {plain:.3f}")
    flipped = int(((logits > 0) != (moved_logits > 0)).sum())
    print(
        f"{indent}logits unchanged: {yes_no(torch.allclose(logits, moved_logits, atol=TOLERANCE, rtol=TOLERANCE))}; "
        f"predicted class changed in {flipped} of {n_sets} sets"
    )


def one_change_experiment(
    patience=PATIENCE,
    learning_rate=LEARNING_RATE,
    heads=NHEAD,
    split=DEFAULT_SPLIT,
    seed=SEED,
    plot_path=None,
    my_multi_head=False,
    test=False,
    max_epochs=MAX_EPOCHS,
):
    """Exercise 6: the mean-pooling baseline and the transformer, trained the same way (chapter
    3's recipe, early stopping on validation) on YOUR attention, masked_mean and accuracy, judged
    on the validation sets. With ``plot_path`` the loss curves are saved as a PNG; with ``test``
    both kept models are scored, once and together, on the sealed test sets."""
    from transformer_lab.metrics import accuracy as book_accuracy
    from transformer_lab.protocol import SealedTest
    from transformer_lab.set_classifier import train_set_classifier
    from transformer_lab.set_task import make_split
    from transformer_lab.timing import format_wall_time

    train_data, val_data, test_data = make_split(split)
    sealed = SealedTest(*test_data)
    print(
        f"patience={patience}, learning_rate={learning_rate}, heads={heads}, split {split}, "
        f"seed {seed}, at most {max_epochs} epochs"
        + (", your multi_head_attention" if my_multi_head else "")
    )
    histories, models = {}, {}
    for name, use_attention in [("mean baseline", False), ("transformer", True)]:
        # the same seed: the same initial weights and batches for both models, as in chapter 3
        model = your_set_classifier(use_attention, heads, seed, my_multi_head)
        result = train_set_classifier(
            model,
            train_data,
            val_data,
            seed,
            epochs=max_epochs,
            learning_rate=learning_rate,
            patience=patience,
            accuracy_fn=S.accuracy,
        )
        with torch.no_grad():
            book = book_accuracy(result.model(val_data[0], val_data[1]), val_data[2])
        print(
            f"{name}: validation accuracy {result.accuracy:.3f} by your accuracy() ({book:.3f} by the book's), "
            f"best epoch {result.best_epoch} of {len(result.history)}, {result.parameters:,} parameters, "
            f"{format_wall_time(result.seconds)}"
        )
        print(
            "  loss per epoch (train / validation): "
            + ", ".join(f"{train:.3f}/{val:.3f}" for train, val in result.history)
        )
        shuffle_check(result.model, indent="  ")
        histories[name], models[name] = result.history, result.model
    if test:

        def scores(x, padding, y):
            with torch.no_grad():
                return {name: book_accuracy(m(x, padding), y) for name, m in models.items()}

        for name, score in sealed.score(scores).items():
            print(f"{name}: test accuracy {score:.3f} (the sealed test sets, scored once)")
    if plot_path:
        save_loss_curves(histories, plot_path)
        print(f"loss curves saved to {plot_path}")


def save_loss_curves(histories, path):
    """Exercise 6's figure: train and validation loss per epoch, one panel per model."""
    import matplotlib

    matplotlib.use("Agg")  # a script writes a file; no window needed
    import matplotlib.pyplot as plt

    from transformer_lab.plotting import use_book_style

    use_book_style()
    fig, axes = plt.subplots(1, len(histories), figsize=(10, 3.5), sharey=True)
    for ax, (name, history) in zip(axes, histories.items()):
        epochs = range(1, len(history) + 1)
        ax.plot(epochs, [train for train, _ in history], label="train (during updates)")
        ax.plot(
            epochs,
            [val for _, val in history],
            linestyle="--",
            label="validation (end of epoch)",
        )
        ax.set(title=name, xlabel="epoch", ylabel="binary cross-entropy")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def embedding_costs():
    """Exercise 7: embedding tables for three widths, against one encoder layer."""
    from transformer_lab.encoder import encoder_layer_parameters

    for vocab_size in (80, 50_000):
        counts = ", ".join(
            f"d={d}: {S.embedding_parameters(vocab_size, d):,}" for d in (128, 512, 768)
        )
        print(f"vocab_size={vocab_size:,}  ->  {counts}")
    print(
        f"one encoder layer (d=512, 8 heads, d_ff=2048): {encoder_layer_parameters(512, 8, 2048):,}"
    )


def trained_tokenizer():
    from transformer_lab.tokenizer import TINY_CORPUS

    with silenced_terminal():  # the trainer's progress bar would print blank lines
        return S.train_bpe_tokenizer(list(TINY_CORPUS), vocab_size=80)


def tokenizer_example():
    """Exercise 8: your tokenizer's size, its special tokens, and what becomes of unseen characters."""
    tokenizer = trained_tokenizer()
    print("vocabulary size:", tokenizer.get_vocab_size())
    print(
        'token_to_id("[UNK]"):',
        tokenizer.token_to_id("[UNK]"),
        '  token_to_id("[PAD]"):',
        tokenizer.token_to_id("[PAD]"),
    )
    # the emoji is written as an escape: a console without it still prints the tokens
    print(
        'encode("caf\u00e9 \\U0001f642").tokens:',
        tokenizer.encode("caf\u00e9 \U0001f642").tokens,
    )


def print_tokens_per_word(tokenizer, words: Sequence[str]) -> None:
    """Each word's token count (your ``tokens_per_word``) next to how often the corpus holds it."""
    from transformer_lab.tokenizer import TINY_CORPUS, word_occurrences

    for word, count in S.tokens_per_word(tokenizer, list(words)).items():
        seen = word_occurrences(TINY_CORPUS, word)
        print(
            f"{word!r:>17}: {count} token(s); in the corpus {seen['as a word']}x as a word, "
            f"{seen['inside a word']}x inside a word"
        )


def count_tokens_per_word():
    """Exercise 9: tokens per word next to how often each word occurs in the corpus."""
    tokenizer = trained_tokenizer()
    print("vocabulary size:", tokenizer.get_vocab_size())
    print_tokens_per_word(tokenizer, EXERCISE_9_WORDS)


def run_tokenizer():
    """Exercise 10: a sentence the corpus never contained, and the price of this vocabulary."""
    tokenizer = trained_tokenizer()
    sentence = "the transformer decoder generates text"
    encoding = tokenizer.encode(sentence)
    print("tokens:", encoding.tokens)
    print("ids:   ", encoding.ids)
    print(f"{len(sentence.split())} words -> {len(encoding.tokens)} tokens")
    print("each word on its own:")
    print_tokens_per_word(tokenizer, sentence.split())
    vocab_size = tokenizer.get_vocab_size()
    counts = ", ".join(
        f"d={d}: {S.embedding_parameters(vocab_size, d):,}" for d in (128, 512, 768)
    )
    print(f"this vocabulary's embedding table (vocab_size={vocab_size}): {counts}")


def causal_mask_example():
    """Exercise 11: your mask for one padded example, against the blocking of the book's attention."""
    from transformer_lab.attention import attention as book_attention

    padding = torch.tensor(
        [[False, False, False, False, True, True], [False, False, True, True, True, True]]
    )
    mask = S.causal_padding_mask(padding)
    print(f"padding {tuple(padding.shape)} -> mask {tuple(mask.shape)} {mask.dtype}")
    print("example 0 (x = blocked; rows: queries, columns: keys):")
    for row in mask[0].tolist():
        print("    " + " ".join("x" if blocked else "." for blocked in row))
    generator = torch.Generator().manual_seed(0)
    q, k = (
        torch.randn(2, 6, 4, generator=generator),
        torch.randn(2, 6, 4, generator=generator),
    )
    _, weights = book_attention(q, k, k, padding, causal=True)
    same = tuple(mask.shape) == (2, 6, 6) and torch.equal(mask.bool(), weights == 0)
    print(
        f"blocks exactly what the book's attention blocks with padding and causal=True: {yes_no(same)}"
    )


def multi_head_example():
    """Exercise 12: your multi_head_attention (output and every head's weights) against
    nn.MultiheadAttention with the same weights."""
    from transformer_lab.set_task import make_sets

    x, padding, _ = make_sets(8, seed=14)
    torch.manual_seed(40)
    tokens = nn.Linear(2, 16)(x).detach()
    for heads in (1, 4):
        mha = nn.MultiheadAttention(16, heads, batch_first=True).eval()
        with torch.no_grad():
            mha.in_proj_bias.normal_()  # non-zero biases, so a forgotten bias shows
            mha.out_proj.bias.normal_()
            expected = mha(
                tokens, tokens, tokens, key_padding_mask=padding, average_attn_weights=False
            )
            mine = S.multi_head_attention(tokens, padding, mha)
        if not (isinstance(mine, (tuple, list)) and len(mine) == 2):
            print(
                f"{heads} head(s): expected a pair (output, weights), yours is {type(mine).__name__}"
            )
            continue
        for part, want, got in zip(("output", "weights"), expected, mine):
            if tuple(got.shape) != tuple(want.shape):
                print(
                    f"{heads} head(s), {part}: expected shape {tuple(want.shape)}, "
                    f"yours {tuple(got.shape)}"
                )
                continue
            gap = (got - want).abs().max().item()
            verdict = "equal" if gap < 1e-5 else "DIFFERENT"
            print(
                f"{heads} head(s), {part}: {verdict} to nn.MultiheadAttention (largest "
                f"difference {'below 1e-5' if gap < 1e-5 else f'{gap:.4f}'})"
            )


def main(starter: dict | types.ModuleType, argv: Sequence[str] | None = None) -> int:
    """The starter's main: the self-check and every example, or Exercise 6 with ``--train``.
    Returns the exit status: 1 while a check has not passed, else 0 (``--train``: 0)."""
    global S
    S = starter = as_namespace(starter)
    parser = argparse.ArgumentParser(
        description="Try the homework functions; --train runs Exercise 6."
    )
    parser.add_argument("--train", action="store_true", help="run Exercise 6's experiment")
    # the starter's PATIENCE = None stands for chapter 3's, kept in one home: set_classifier
    patience = PATIENCE if starter.PATIENCE is None else starter.PATIENCE
    parser.add_argument("--patience", type=int, default=patience)
    parser.add_argument("--learning-rate", type=float, default=starter.LEARNING_RATE)
    parser.add_argument("--heads", type=int, default=starter.TRAIN_HEADS)
    parser.add_argument(
        "--split",
        type=int,
        default=DEFAULT_SPLIT,
        help="which draw of the three splits (chapter 3's is 0)",
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help="initial weights and batches"
    )
    parser.add_argument("--max-epochs", type=int, default=MAX_EPOCHS, help="a cap only")
    parser.add_argument("--plot", metavar="PNG", help="with --train: save the loss curves")
    parser.add_argument(
        "--my-multi-head",
        action="store_true",
        help="with --train: your multi_head_attention (Exercise 12) runs the heads",
    )
    parser.add_argument(
        "--test",
        action="store_true",
        help="with --train: also score the sealed test sets (once, after your last choice)",
    )
    args = parser.parse_args(argv)
    if args.train:
        try_exercise(
            "Exercise 6: train on your functions, then change one thing",
            lambda: one_change_experiment(
                args.patience,
                args.learning_rate,
                args.heads,
                args.split,
                args.seed,
                args.plot,
                args.my_multi_head,
                args.test,
                args.max_epochs,
            ),
        )
        return 0
    status, _ = check_in_subprocess(
        starter.__file__, "exercises/homework/starter.py", HOMEWORK
    )
    for title, step in [
        ("Exercise 1: the prediction box's example", accuracy_example),
        ("Exercise 2: the prediction box's example", masked_mean_example),
        ("Exercise 3: the prediction box's example", attention_example),
        ("Exercise 4: explore nn.MultiheadAttention", explore_multihead_attention),
        ("Exercise 5: the same sets, shuffled and padded further", shuffle_check),
        ("Exercise 7: embedding tables", embedding_costs),
        ("Exercise 8: your tokenizer", tokenizer_example),
        ("Exercise 9: tokens per word", count_tokens_per_word),
        ("Exercise 10: an unseen sentence, and the price of the vocabulary", run_tokenizer),
        ("Exercise 11 (stretch): a causal mask with padding", causal_mask_example),
        ("Exercise 12 (stretch): multi-head attention by hand", multi_head_example),
    ]:
        try_exercise(title, step)
    # as `python -m transformer_lab.selfcheck` and the Week-20 starter do: 1 while a check has
    # not passed (the examples still run, so a student sees every one of them)
    return 0 if status == 0 else 1
