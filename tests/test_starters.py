"""The starter scripts run from the repository root, as the exercise pages tell students to.

The Week-20 starter trains two small models; here it runs on a small configuration (1,000 comments)
and its printed accuracies are compared with the package computing the same thing.
The homework starter must run untouched (every exercise 'not done yet', no traceback) and, once
its functions are written, run every demo.
"""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import torch

from transformer_lab.attention import toy_self_attention
from transformer_lab.char_transformer import (
    EPOCHS,
    load_praise_sample,
    majority_baseline,
    split_sample,
    train_and_score,
)
from transformer_lab.selfcheck import CHECKS

ROOT = Path(__file__).resolve().parents[1]
WEEK20 = Path("exercises") / "week-20" / "starter.py"
HOMEWORK = Path("exercises") / "homework" / "starter.py"


def run(script, *args):
    completed = subprocess.run([sys.executable, str(script), *map(str, args)], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    return completed.stdout


def test_week20_starter_prints_both_accuracies_and_the_baseline():
    # 1,000 comments and the package's epochs: small enough to be quick, large enough that the two
    # models end up with different accuracies, so a swapped pair of numbers would be caught.
    out = run(WEEK20, "--task", "positions", "--comments", 1000, "--seeds", 0)
    split = split_sample(load_praise_sample(n=1000))
    baseline = majority_baseline(split.y_train, split.y_test)
    with_positions = train_and_score(True, seed=0, split=split)
    without = train_and_score(False, seed=0, split=split)
    assert f"{with_positions:.3f}" != f"{without:.3f}"
    assert f"800 training and 200 test comments, {EPOCHS} epochs\n" in out
    assert f"majority baseline (always the most common training label): {baseline:.3f}" in out
    assert (f"seed 0: with positions {with_positions:.3f}, without {without:.3f}, "
            f"difference {with_positions - without:+.3f}") in out


def test_week20_starter_defaults_are_the_book_experiment():
    from transformer_lab.selfcheck import load_module

    starter = load_module(ROOT / WEEK20)
    assert starter.positions_experiment.__defaults__ == ((0,), 4000, None)  # None: the package's epochs
    out = run(WEEK20, "--help")
    assert "--comments" in out and "--seeds" in out


def test_week20_starter_prints_the_toy_map_of_the_lesson():
    out = run(WEEK20, "--task", "toy")
    tokens = ["login", "failed", "again"]
    _, weights = toy_self_attention(tokens, d_model=4, seed=0)
    table = pd.DataFrame(weights.numpy(), index=tokens, columns=tokens).round(2).to_string()
    assert out == "== Task 2: the 3-token attention map\n" \
        "toy self-attention weights (seed 0); rows read, columns are read from:\n" + table + "\n"


def test_untouched_homework_starter_runs_and_says_not_done():
    out = run(HOMEWORK)
    for check in CHECKS:
        assert f"[not done yet] {check.exercise}: {check.signature}" in out
    assert re.search(r"== Exercise 2: explore nn.MultiheadAttention\n.*2 heads: output \(1, 8, 16\), "
                     r"per-head weights \(1, 2, 8, 8\)", out, flags=re.DOTALL)
    assert re.search(r"== Exercise 3: [^\n]*\nencoder outputs shuffled along with the tokens: True\n"
                     r"not done yet: Exercise 3 \(masked_mean\)", out)
    # the prediction check uses the package's model, so it runs before masked_mean is written
    assert ("== Exercise 3: shuffle a set, predict\n"
            "SetClassifier logits unchanged by the shuffle (evaluation mode): True\n"
            "predicted class changed in 0 of 64 sets\n") in out
    for exercise in ("Exercise 7", "Exercise 8", "Exercise 9"):
        assert re.search(rf"== {exercise}: .*\nnot done yet: Exercise 6 \(train_bpe_tokenizer\)", out)


def test_homework_training_experiment_runs_small(tmp_path):
    plot = tmp_path / "loss.png"
    out = run(HOMEWORK, "--train", "--epochs", 1, "--n-train", 256, "--heads", 4, "--plot", plot)
    assert f"loss curves saved to {plot}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert "epochs=1, learning_rate=0.003, heads=4, 256 training sets, seed 42" in out
    assert re.search(r"mean baseline: validation accuracy 0\.\d{3} \(best epoch 1\)", out)
    assert re.search(r"transformer: validation accuracy 0\.\d{3} \(best epoch 1\)", out)
    assert "(finish Exercise 4 to see your accuracy() here too)" in out
    # each trained model is shuffled too: the baseline and the transformer
    assert out.count("  SetClassifier logits unchanged by the shuffle (evaluation mode): True\n"
                     "  predicted class changed in 0 of 64 sets\n") == 2


SOLUTIONS = {
    "attention": [
        "scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5",
        "weights = torch.softmax(scores.masked_fill(padding[:, None, :], float('-inf')), dim=-1)",
        "return weights @ v, weights",
    ],
    "masked_mean": ["keep = (~padding).unsqueeze(-1).to(x.dtype)", "return (x * keep).sum(1) / keep.sum(1)"],
    "accuracy": ["return ((logits > 0).float() == labels.float()).float().mean().item()"],
    "train_bpe_tokenizer": [
        "tokenizer = Tokenizer(models.BPE(unk_token='[UNK]'))",
        "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()",
        "trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=['[UNK]', '[PAD]'], show_progress=False)",
        "tokenizer.train_from_iterator(corpus, trainer)",
        "return tokenizer",
    ],
    "tokens_per_word": ["return {word: len(tokenizer.encode(word).tokens) for word in words}"],
    "embedding_parameters": ["return vocab_size * d"],
}


def test_finished_homework_starter_runs_every_demo(tmp_path):
    source = (ROOT / HOMEWORK).read_text(encoding="utf-8")
    for name, body in SOLUTIONS.items():
        # the stub's raise, on one line or wrapped by the formatter over several
        pattern = rf'    raise NotImplementedError\(\s*"Exercise \d+ \({name}\):[^"]*"\s*\)'
        assert len(re.findall(pattern, source)) == 1, name
        source = re.sub(pattern, "\n".join("    " + line for line in body).replace("\\", "\\\\"), source)
    finished = tmp_path / "starter.py"
    finished.write_text(source, encoding="utf-8")
    out = run(finished)
    assert f"{len(CHECKS)} passed (of {len(CHECKS)} checks)" in out
    assert "your attention equals nn.MultiheadAttention with one head and identity projections" in out
    assert "encoder outputs shuffled along with the tokens: True\nmasked mean unchanged by the shuffle: True" in out
    assert "vocabulary size: 80" in out and "5 words -> " in out
    assert re.search(r"'self-attention': \d+ token\(s\); in the corpus \d+x as a word", out)
    assert "vocab_size=50,000  ->  d=128: 6,400,000, d=512: 25,600,000, d=768: 38,400,000" in out
    assert "one encoder layer (d=512, 8 heads, d_ff=2048): 3,152,384" in out
    assert "not done yet" not in out and "raised" not in out


class FirstKey(torch.nn.Module):
    """A 'classifier' that reads the first position only: reordering the set changes its answer."""

    def __init__(self):
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, x, padding):
        return self.dropout(x[:, 0, 0])


def test_prediction_shuffle_check_catches_an_order_dependent_model(capsys):
    from transformer_lab.selfcheck import load_module

    starter = load_module(ROOT / HOMEWORK)
    model = FirstKey()
    starter.prediction_shuffle_check(model)
    out = capsys.readouterr().out
    assert not model.training, "the check must run the model in evaluation mode"
    assert "SetClassifier logits unchanged by the shuffle (evaluation mode): False\n" in out
    flipped = int(re.search(r"predicted class changed in (\d+) of 64 sets", out).group(1))
    assert flipped > 0
