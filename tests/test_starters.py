"""The starter scripts run from the repository root, as the exercise pages tell students to.

Untouched, each starter runs quickly and reports every task as 'not done yet' (never a traceback,
never a reassuring 'yes'); with reference solutions injected in place of the NotImplementedError
lines, every check passes and every demo runs. The Week-20 checks are also fed known-wrong
versions and must name the mistake.

Starting Python with torch costs more than most checks, so each command line runs as a process
once, with tests sharing its output, and a demo whose outcome does not depend on the command line
runs in-process.
"""

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from transformer_lab.attention import toy_self_attention
from transformer_lab.char_transformer import LENGTH, PAD_ID, PraiseClassifier
from transformer_lab.pooling import masked_mean as book_masked_mean
from transformer_lab.selfcheck import ALL_CHECKS, CHECKS, load_module

ROOT = Path(__file__).resolve().parents[1]
WEEK20 = Path("exercises") / "week-20" / "starter.py"
HOMEWORK = Path("exercises") / "homework" / "starter.py"


def run(script, *args):
    completed = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    return completed.stdout


def solve(starter, solutions, tmp_path, pattern):
    """A copy of ``starter`` with each stub line replaced by its reference solution."""
    source = (ROOT / starter).read_text(encoding="utf-8")
    for name, body in solutions.items():
        stub = pattern.format(name=re.escape(name))
        assert len(re.findall(stub, source)) == 1, name
        indent = re.search(stub, source).group(1)
        source = re.sub(
            stub, "\n".join(indent + line for line in body).replace("\\", "\\\\"), source
        )
    finished = tmp_path / "starter.py"
    finished.write_text(source, encoding="utf-8")
    return finished


# --- Week 20 --------------------------------------------------------------------------------------

WEEK20_SOLUTIONS = {
    "NoPositions.forward": [
        "if padding is None:",
        "    padding = ids == PAD_ID",
        "from transformer_lab.pooling import masked_mean",
        "x = self.encoder(self.embed(ids), src_key_padding_mask=padding)",
        "return self.head(masked_mean(x, padding)).squeeze(-1)",
    ],
    "toy_weights": [
        "q, k = embeddings @ w_q, embeddings @ w_k",
        "return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1)",
    ],
    "sinusoidal_positions": [
        "angle = torch.arange(length)[:, None] * 10000.0 ** (-torch.arange(0, d_model, 2) / d_model)",
        "return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)",
    ],
    "SinusoidalPositions.forward": [
        "from transformer_lab.pooling import masked_mean",
        "padding = ids == PAD_ID if padding is None else padding",
        "x = self.embed(ids) + sinusoidal_positions(ids.shape[1], self.embed.embedding_dim)",
        "x = self.encoder(x, src_key_padding_mask=padding)",
        "return self.head(masked_mean(x, padding)).squeeze(-1)",
    ],
}
# A stub may be wrapped over several lines by `ruff format`: match the whole raise statement.
WEEK20_STUB = r'( +)raise NotImplementedError\(\s*"Task \d \({name}\):[^"]*"\s*\)'


@pytest.fixture(scope="module")
def week20(tmp_path_factory):
    return load_module(ROOT / WEEK20)


@pytest.fixture(scope="module")
def week20_solved(tmp_path_factory):
    return solve(WEEK20, WEEK20_SOLUTIONS, tmp_path_factory.mktemp("week20"), WEEK20_STUB)


@pytest.fixture(scope="module")
def week20_solved_output(week20_solved):
    """One run of the finished starter with every option: checks, toy table and training."""
    return run(
        week20_solved,
        *("--toy-seed", 1, "--sinusoidal"),
        *("--train", "--comments", 600, "--epochs", 12, "--split-seed", 3),
    )


def test_untouched_week20_starter_says_not_done(week20, capsys):
    # --sinusoidal and --train each add to the plain run, so one process runs all three; the
    # plain command runs once more in-process, for what it prints without them.
    out = run(WEEK20, "--sinusoidal", "--train")
    assert "[not done yet] Task 4 (stretch): sinusoidal_positions(length, d_model)" in out
    assert (
        "[not done yet] Task 4 (stretch): SinusoidalPositions.forward(ids, padding=None)"
        in out
    )
    assert out.endswith("finish NoPositions.forward first: the check above must pass\n")
    assert week20.main([]) == 0
    plain = capsys.readouterr().out
    for text in (plain, out):
        assert text.startswith(
            "== Checks\n[not done yet] Task 1: NoPositions.forward(ids, padding=None)\n"
        )
        assert "[not done yet] Task 2: toy_weights(embeddings, w_q, w_k)" in text
        assert "passed" not in text and "Task 2: the 3-token attention map" not in text


def test_finished_week20_starter_passes_and_prints_the_table(week20_solved_output):
    out = week20_solved_output
    assert "[passed] Task 4 (stretch): sinusoidal_positions(length, d_model)" in out
    assert (
        "[passed] Task 4 (stretch): SinusoidalPositions.forward(ids, padding=None)" in out
    )
    assert "[passed] Task 1: NoPositions.forward(ids, padding=None)" in out
    assert "[passed] Task 2: toy_weights(embeddings, w_q, w_k)" in out
    tokens = ["login", "failed", "again"]
    table = pd.DataFrame(
        toy_self_attention(tokens, d_model=4, seed=1)[1].numpy(),
        index=tokens,
        columns=tokens,
    )
    assert (
        "your toy self-attention weights (seed 1); rows read, columns are read from:\n"
        + table.round(2).to_string()
        + "\n"
    ) in out


def test_week20_training_uses_the_students_model(week20_solved_output):
    from transformer_lab.char_transformer import (
        load_praise_sample,
        majority_baseline,
        split_sample,
        train_and_score,
    )

    out = week20_solved_output
    split = split_sample(load_praise_sample(n=600), seed=3)
    with_positions = train_and_score(True, seed=0, split=split, epochs=12)
    without = train_and_score(
        False, seed=0, split=split, epochs=12
    )  # the package's own variant
    # At this size the two variants score differently, so a starter that trained the model with
    # positions in place of the student's could not print the line checked below.
    assert with_positions != without
    assert (
        f"480 training and 120 test comments, split seed 3, window {LENGTH} characters"
        in out
    )
    assert (
        f"majority baseline (always the most common training label): "
        f"{majority_baseline(split.y_train, split.y_test):.3f}" in out
    )
    assert (
        f"seed 0: with positions {with_positions:.3f}, yours without {without:.3f}, "
        f"difference {with_positions - without:+.3f}"
    ) in out


def test_week20_order_flipped_pair_gets_one_score_without_positions(week20_solved, capsys):
    starter = load_module(week20_solved)
    starter.MY_PAIR = ("not slow, now fast", "not fast, now slow")
    starter.positions_experiment(seeds=(0,), n_comments=300, epochs=1, sinusoidal=True)
    out = capsys.readouterr().out
    assert re.search(
        r"seed 0: with positions 0\.\d{3}, yours without 0\.\d{3}, difference [+-]0\.\d{3}; "
        r"your sinusoids 0\.\d{3} \(",
        out,
    )
    yours = re.search(r"yours: P\(praise\) (0\.\d+) for .*, (0\.\d+) for ", out)
    assert yours and yours.group(1) == yours.group(2)
    assert re.search(
        r"sines: P\(praise\) 0\.\d+ for 'not slow, now fast', 0\.\d+ for 'not fast, now slow'",
        out,
    )
    assert re.search(
        r" with: P\(praise\) 0\.\d+ for 'not slow, now fast', 0\.\d+ for 'not fast, now slow'",
        out,
    )
    starter.MY_PAIR = ("not slow", "not fast")
    starter.score_pair({}, 32)
    assert "do not hold the same characters" in capsys.readouterr().out


class StillPositions(PraiseClassifier):
    pass  # the package's forward, positions and all


class NoPaddingMask(PraiseClassifier):
    def forward(self, ids, padding=None):
        x = self.encoder(self.embed(ids))
        return self.head(book_masked_mean(x, ids == PAD_ID)).squeeze(-1)


class PlainMean(PraiseClassifier):
    def forward(self, ids, padding=None):
        x = self.encoder(self.embed(ids), src_key_padding_mask=ids == PAD_ID)
        return self.head(x.mean(dim=1)).squeeze(-1)


class NoSqueeze(PraiseClassifier):
    def forward(self, ids, padding=None):
        padding = ids == PAD_ID
        x = self.encoder(self.embed(ids), src_key_padding_mask=padding)
        return self.head(book_masked_mean(x, padding))


class OrderSensitive(PraiseClassifier):
    def forward(
        self, ids, padding=None
    ):  # positions by another route: a weight per position
        padding = ids == PAD_ID
        x = self.embed(ids) * torch.linspace(1, 2, ids.shape[1])[None, :, None]
        x = self.encoder(x, src_key_padding_mask=padding)
        return self.head(book_masked_mean(x, padding)).squeeze(-1)


@pytest.mark.parametrize(
    "model_class, mistake",
    [
        (StillPositions, "the position embedding is still added"),
        (NoPaddingMask, "padding leaks into the result"),
        (PlainMean, "padding leaks into the result"),
        (NoSqueeze, "the output is not one logit per comment"),
        (OrderSensitive, "your model still sees the order of the characters"),
    ],
)
def test_week20_check_names_the_mistake_in_a_forward(week20, model_class, mistake):
    status, finding, *_ = week20.check_no_positions(model_class)
    assert status == "FAILED" and finding == f"Likely mistake: {mistake}"


def test_week20_check_accepts_a_correct_forward_and_reports_a_crash(week20, week20_solved):
    assert load_module(week20_solved).check_no_positions() == ("passed",)

    class Crashes(PraiseClassifier):
        def forward(self, ids, padding=None):
            return self.embed(ids) @ torch.ones(3, 3)

    status, line = week20.check_no_positions(Crashes)
    assert status == "raised an error" and line.startswith("RuntimeError")


def scores(embeddings, w_q, w_k):
    return (embeddings @ w_q) @ (embeddings @ w_k).T


@pytest.mark.parametrize(
    "toy, mistake",
    [
        (
            lambda e, q, k: torch.softmax(scores(e, q, k) / 2, dim=0),
            "softmax over the queries",
        ),
        (
            lambda e, q, k: torch.softmax(scores(e, k, q) / 2, dim=-1),
            "queries and keys swapped",
        ),
        (lambda e, q, k: torch.softmax(scores(e, q, k), dim=-1), "no scaling"),
        (
            lambda e, q, k: torch.softmax(scores(e, q, k) / 4, dim=-1),
            "divided by d instead of sqrt(d)",
        ),
        (lambda e, q, k: torch.softmax(e @ e.T / 2, dim=-1), "no projections"),
        (lambda e, q, k: scores(e, q, k) / 2, "the rows do not sum to 1"),
        (lambda e, q, k: torch.softmax(scores(e, q, k) / 3, dim=-1), "another formula"),
        (
            lambda e, q, k: torch.softmax(scores(e, q, k) / 2, dim=-1)[:2],
            "not a (3, 3) tensor",
        ),
    ],
)
def test_week20_check_names_the_mistake_in_a_toy_table(week20, toy, mistake):
    status, finding, *_ = week20.check_toy_weights(toy)
    assert status == "FAILED" and finding.startswith(f"Likely mistake: {mistake}"), finding
    assert week20.check_toy_weights(
        lambda e, q, k: torch.softmax(scores(e, q, k) / 2, dim=-1)
    ) == ("passed",)


def test_week20_check_rejects_a_library_attention_call(week20):
    def library(embeddings, w_q, w_k):
        q, k = (embeddings @ w_q)[None], (embeddings @ w_k)[None]
        return torch.nn.functional.scaled_dot_product_attention(q, k, k)[0]

    status, finding, *_ = week20.check_toy_weights(library)
    assert status == "FAILED" and "library attention call" in finding


def book_sinusoids(length, d_model):
    from transformer_lab.char_transformer import sinusoidal_positions

    return sinusoidal_positions(length, d_model)


@pytest.mark.parametrize(
    "table, mistake",
    [
        (
            lambda L, D: torch.stack(
                [book_sinusoids(L, D)[:, 1::2], book_sinusoids(L, D)[:, 0::2]], -1
            ).flatten(1),
            "sines and cosines swapped",
        ),
        (
            lambda L, D: torch.cat(
                [book_sinusoids(L, D)[:, :2], book_sinusoids(L, 2 * D)[:, 2:D]], dim=1
            ),
            "the slower clocks are off",
        ),
        (lambda L, D: book_sinusoids(L, D).T, "the table has the wrong shape"),
        (lambda L, D: book_sinusoids(L, D) * 2, "another formula"),
    ],
)
def test_week20_check_names_the_mistake_in_a_sinusoid_table(week20, table, mistake):
    status, finding, *_ = week20.check_sinusoidal_table(table)
    assert status == "FAILED" and finding.startswith(f"Likely mistake: {mistake}"), finding
    assert week20.check_sinusoidal_table(book_sinusoids) == ("passed",)


class LearnedTable(PraiseClassifier):
    pass  # adds self.pos, the learned table, instead of the sinusoids


class NoPositionsAtAll(NoPaddingMask):
    def forward(self, ids, padding=None):
        padding = ids == PAD_ID
        x = self.encoder(self.embed(ids), src_key_padding_mask=padding)
        return self.head(book_masked_mean(x, padding)).squeeze(-1)


class SinusoidsScaled(PraiseClassifier):
    def forward(self, ids, padding=None):
        padding = ids == PAD_ID
        x = self.embed(ids) + 0.5 * book_sinusoids(ids.shape[1], self.embed.embedding_dim)
        x = self.encoder(x, src_key_padding_mask=padding)
        return self.head(book_masked_mean(x, padding)).squeeze(-1)


@pytest.mark.parametrize(
    "model_class, mistake",
    [
        (LearnedTable, "the learned table self.pos is added"),
        (NoPositionsAtAll, "no positions reach the model"),
        (SinusoidsScaled, "another computation"),
    ],
)
def test_week20_check_names_the_mistake_in_a_sinusoidal_model(
    week20, week20_solved, model_class, mistake
):
    status, finding, *_ = week20.check_sinusoidal_model(model_class)
    assert status == "FAILED" and finding.startswith(f"Likely mistake: {mistake}"), finding
    assert load_module(week20_solved).check_sinusoidal_model() == ("passed",)


# --- Homework -------------------------------------------------------------------------------------

SOLUTIONS = {
    "attention": [
        "scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5",
        "weights = torch.softmax(scores.masked_fill(padding[:, None, :], float('-inf')), dim=-1)",
        "return weights @ v, weights",
    ],
    "masked_mean": [
        "keep = (~padding).unsqueeze(-1).to(x.dtype)",
        "return (x * keep).sum(1) / keep.sum(1)",
    ],
    "accuracy": ["return ((logits > 0).float() == labels.float()).float().mean().item()"],
    "train_bpe_tokenizer": [
        "tokenizer = Tokenizer(models.BPE(unk_token='[UNK]'))",
        "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()",
        "trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=['[UNK]', '[PAD]'], show_progress=False)",
        "tokenizer.train_from_iterator(corpus, trainer)",
        "return tokenizer",
    ],
    "tokens_per_word": [
        "return {word: len(tokenizer.encode(word).tokens) for word in words}"
    ],
    "embedding_parameters": ["return vocab_size * d"],
    "causal_padding_mask": [
        "length = padding.shape[1]",
        "future = torch.ones(length, length, dtype=torch.bool).triu(diagonal=1)",
        "return future[None] | padding[:, None, :]",
    ],
    "multi_head_attention": [
        "B, L, D = x.shape",
        "H = mha.num_heads",
        "q, k, v = nn.functional.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)",
        "fold = lambda t: t.reshape(B, L, H, D // H).transpose(1, 2).reshape(B * H, L, D // H)",
        "out, _ = attention(fold(q), fold(k), fold(v), padding.repeat_interleave(H, dim=0))",
        "return mha.out_proj(out.reshape(B, H, L, D // H).transpose(1, 2).reshape(B, L, D))",
    ],
}
HOMEWORK_STUB = r'( +)raise NotImplementedError\(\s*"Exercise \d+ \({name}\):[^"]*"\s*\)'
EXAMPLES = [
    "Exercise 1: the prediction box's example",
    "Exercise 2: the prediction box's example",
    "Exercise 3: the prediction box's example",
    "Exercise 4: explore nn.MultiheadAttention",
    "Exercise 5: the same sets, shuffled and padded further",
    "Exercise 7: embedding tables",
    "Exercise 9: tokens per word",
    "Exercise 10: an unseen sentence, and the price of the vocabulary",
    "Exercise 11 (stretch): a causal mask with padding",
    "Exercise 12 (stretch): multi-head attention by hand",
]


@pytest.fixture(scope="module")
def homework_solved(tmp_path_factory):
    return solve(HOMEWORK, SOLUTIONS, tmp_path_factory.mktemp("homework"), HOMEWORK_STUB)


def sections(out):
    """{title: text} for the '== title' sections the homework starter prints."""
    parts = re.split(r"^== (.+)$", out, flags=re.MULTILINE)
    return {title: text.strip("\n") for title, text in zip(parts[1::2], parts[2::2])}


def test_the_stretch_stubs_have_the_signatures_the_self_check_expects():
    import inspect

    starter = load_module(ROOT / HOMEWORK)
    assert str(inspect.signature(starter.causal_padding_mask)) == "(padding)"
    assert str(inspect.signature(starter.multi_head_attention)) == "(x, padding, mha)"
    for name in ("causal_padding_mask", "multi_head_attention"):
        with pytest.raises(NotImplementedError, match=rf"Exercise \d+ \({name}\)"):
            getattr(starter, name)(
                *[None] * len(inspect.signature(getattr(starter, name)).parameters)
            )


def test_untouched_homework_starter_runs_and_says_not_done():
    out = run(HOMEWORK)
    for check in CHECKS:
        assert f"[not done yet] {check.exercise}: {check.signature}" in out
    found = sections(out)
    assert list(found) == EXAMPLES
    # Exercise 4's exploration uses only the library until the comparison with your attention
    assert re.search(
        r"2 heads: output \(1, 8, 16\), per-head weights \(1, 2, 8, 8\)", found[EXAMPLES[3]]
    )
    for title, text in found.items():
        assert text.splitlines()[-1].startswith("not done yet: Exercise"), title
    # nothing reassuring before the student has written anything
    assert not re.search(r"\b(yes|True|passed|equal)\b", out)


def test_finished_homework_starter_runs_every_demo(homework_solved):
    out = run(homework_solved)
    # the solved copy answers the two stretch exercises too, so every check runs and passes
    assert f"{len(ALL_CHECKS)} passed (of {len(ALL_CHECKS)} checks)" in out
    found = sections(out)
    assert (
        found[EXAMPLES[0]]
        == "logits 2.0, 0.3, -0.2 with labels 1, 0, 0: accuracy() returns 0.6666666865348816 (float)"
    )
    assert (
        found[EXAMPLES[1]]
        == "tokens [2, 4], [4, 8] and padding [900, 900]: masked_mean gives [[3.0, 6.0]]"
    )
    assert found[EXAMPLES[2]] == (
        "outputs for the two queries: [3.0, 3.0]\n"
        "weights of the first query:  [0.5, 0.5, 0.0]"
    )
    assert found[EXAMPLES[3]].endswith(
        "your attention equals nn.MultiheadAttention with one head and identity projections: yes"
    )
    assert re.fullmatch(
        r"encoder outputs of the real tokens move with the tokens: yes\n"
        r"your masked_mean of them is unchanged: yes\n"
        r"a plain \.mean\(dim=1\) instead would move by up to 0\.\d{3}\n"
        r"logits unchanged: yes; predicted class changed in 0 of 64 sets",
        found[EXAMPLES[4]],
    )
    assert (
        "vocab_size=50,000  ->  d=128: 6,400,000, d=512: 25,600,000, d=768: 38,400,000"
        in found[EXAMPLES[5]]
    )
    assert "one encoder layer (d=512, 8 heads, d_ff=2048): 3,152,384" in found[EXAMPLES[5]]
    assert "vocabulary size: 80" in found[EXAMPLES[6]]
    assert re.search(
        r"'self-attention': \d+ token\(s\); in the corpus \d+x as a word",
        found[EXAMPLES[6]],
    )
    assert (
        "5 words -> " in found[EXAMPLES[7]]
        and "(vocab_size=80): d=128: 10,240" in found[EXAMPLES[7]]
    )
    assert found[EXAMPLES[8]].endswith(
        "blocks exactly what the book's attention blocks with padding and causal=True: yes"
    )
    assert found[EXAMPLES[9]] == (
        "1 head(s): equal to nn.MultiheadAttention (largest difference below 1e-5)\n"
        "4 head(s): equal to nn.MultiheadAttention (largest difference below 1e-5)"
    )
    assert "not done yet" not in out and "raised" not in out and "NO" not in out


def test_shuffle_check_fails_an_unmasked_mean(homework_solved, tmp_path, capsys):
    source = homework_solved.read_text(encoding="utf-8")
    plain = source.replace(
        "    return (x * keep).sum(1) / keep.sum(1)", "    return x.mean(dim=1)"
    )
    assert plain != source
    (tmp_path / "plain.py").write_text(plain, encoding="utf-8")
    # Exercise 5's demo alone, in-process: the rest of the file is the finished starter, run above
    starter = load_module(tmp_path / "plain.py")
    starter.try_exercise(EXAMPLES[4], starter.shuffle_check)
    text = sections(capsys.readouterr().out)[EXAMPLES[4]]
    assert "your masked_mean of them is unchanged: NO" in text
    assert "logits unchanged: NO" in text


def test_homework_training_runs_on_the_students_functions(homework_solved, tmp_path):
    plot = tmp_path / "loss.png"
    out = run(
        homework_solved,
        "--train",
        "--epochs",
        1,
        "--learning-rate",
        0.003,
        "--n-train",
        256,
        "--heads",
        4,
        "--plot",
        plot,
        "--my-multi-head",
    )
    assert f"loss curves saved to {plot}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert (
        "epochs=1, learning_rate=0.003, heads=4, 256 training sets, seed 42, your multi_head_attention"
        in out
    )
    for name in ("mean baseline", "transformer"):
        match = re.search(
            rf"{name}: validation accuracy (0\.\d{{3}}) by your accuracy\(\) \((0\.\d{{3}}) by the "
            rf"book's\), best epoch 1",
            out,
        )
        assert match and match.group(1) == match.group(2), name
    assert (
        out.count("  logits unchanged: yes; predicted class changed in 0 of 64 sets\n") == 2
    )


def test_homework_training_really_calls_the_students_functions(homework_solved):
    starter = load_module(homework_solved)
    calls = {"attention": 0, "masked_mean": 0, "accuracy": 0}
    for name in calls:
        original = getattr(starter, name)

        def counted(*args, _original=original, _name=name):
            calls[_name] += 1
            return _original(*args)

        setattr(starter, name, counted)
    starter.one_change_experiment(epochs=1, n_train=128)
    assert all(count > 0 for count in calls.values()), calls
    assert calls["accuracy"] == 2  # one score per model


def test_untouched_homework_training_says_not_done(capsys):
    # in-process: test_homework_training_runs_on_the_students_functions runs --train as a process
    starter = load_module(ROOT / HOMEWORK)
    assert starter.main(["--train", "--epochs", "1", "--n-train", "128"]) == 0
    out = capsys.readouterr().out
    # the baseline trains first, and it pools with the student's masked_mean
    assert out.endswith(
        "not done yet: Exercise 2 (masked_mean): mask, sum over the tokens, divide by the real count\n"
    )
