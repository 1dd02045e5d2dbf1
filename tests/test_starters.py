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

import pytest

import transformer_lab.homework_runs as runs
from transformer_lab.attention import toy_self_attention
from transformer_lab.selfcheck import ALL_CHECKS, CHECKS, load_module
from transformer_lab.selfcheck.checks.registry import WEEK20_CHECKS
from transformer_lab.set_classifier import PATIENCE

ROOT = Path(__file__).resolve().parents[1]
WEEK20 = Path("exercises") / "week-20" / "starter.py"
HOMEWORK = Path("exercises") / "homework" / "starter.py"


def run(script, *args, status=0):
    completed = subprocess.run(
        [sys.executable, str(script), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == status, completed.stdout + completed.stderr
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
    "forward_without_positions": [
        "from transformer_lab.pooling import masked_mean",
        "x = model.encoder(model.embed(ids), src_key_padding_mask=padding)",
        "return model.head(masked_mean(x, padding)).squeeze(-1)",
    ],
    "toy_weights": [
        "q, k = embeddings @ w_q, embeddings @ w_k",
        "return torch.softmax(q @ k.T / q.shape[-1] ** 0.5, dim=-1)",
    ],
    "repaired_forward": [
        "from transformer_lab.pooling import masked_mean",
        "x = model.embed(ids) + model.pos(torch.arange(ids.shape[1]))[None]",
        "x = model.encoder(x.transpose(0, 1), src_key_padding_mask=padding).transpose(0, 1)",
        "return model.head(masked_mean(x, padding)).squeeze(-1)",
    ],
    "encode_with_bpe": [
        "pad = tokenizer.token_to_id('[PAD]')",
        "rows = [tokenizer.encode(text).ids[:length] for text in texts]",
        "return torch.tensor([r + [pad] * (length - len(r)) for r in rows], dtype=torch.long)",
    ],
    "sinusoidal_positions": [
        "angle = torch.arange(length)[:, None] * 10000.0 ** (-torch.arange(0, d_model, 2) / d_model)",
        "return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)",
    ],
    "forward_with_sinusoids": [
        "from transformer_lab.pooling import masked_mean",
        "x = model.embed(ids) + sinusoidal_positions(ids.shape[1], model.embed.embedding_dim)",
        "x = model.encoder(x, src_key_padding_mask=padding)",
        "return model.head(masked_mean(x, padding)).squeeze(-1)",
    ],
}
# A stub may be wrapped over several lines by `ruff format`: match the whole raise statement.
WEEK20_STUB = r'( +)raise NotImplementedError\(\s*"Task \d \({name}\):[^"]*"\s*\)'


@pytest.fixture(scope="module")
def week20_solved(tmp_path_factory):
    return solve(WEEK20, WEEK20_SOLUTIONS, tmp_path_factory.mktemp("week20"), WEEK20_STUB)


def test_untouched_week20_starter_says_not_done_and_exits_1():
    out = run(WEEK20, status=1)  # as python -m transformer_lab.selfcheck does
    for check in WEEK20_CHECKS:
        status = "not attempted" if check.optional else "not done yet"
        assert f"[{status}] {check.exercise}: {check.signature}" in out
    assert "Task 2: the attention map" not in out
    assert not re.search(r"\b(yes|True|passed|equal)\b", out)


@pytest.fixture(scope="module")
def week20_wrong_on_the_test_split(week20_solved, tmp_path_factory):
    """The finished starter with Task 2 wrong, asked for Task 1 on the test split: one process
    for two tests (a failing check sets the exit status; the runs asked for still run)."""
    wrong = tmp_path_factory.mktemp("week20_wrong") / "starter.py"
    text = week20_solved.read_text(encoding="utf-8")
    assert "q.shape[-1] ** 0.5, dim=-1)" in text
    wrong.write_text(
        text.replace("q.shape[-1] ** 0.5, dim=-1)", "q.shape[-1] ** 0.5, dim=0)")
    )
    return run(wrong, "--train", "--test", "--max-epochs", 1, "--seeds", 0, status=1)


def test_a_failing_week20_check_makes_the_starter_exit_1(week20_wrong_on_the_test_split):
    assert "[FAILED] Task 2" in week20_wrong_on_the_test_split


def test_finished_week20_starter_passes_prints_the_table_and_runs_the_experiment(
    week20_solved,
):
    out = run(
        week20_solved,
        *(
            "--train",
            "--sinusoidal",
            "--debug",
            "--tokens",
            "--max-epochs",
            1,
            "--seeds",
            0,
            1,
        ),
    )
    for check in WEEK20_CHECKS:
        assert f"[passed] {check.exercise}: {check.signature}" in out
    # Task 2: the course's toy, login / failed / again (chapter 1 teaches with another one)
    week20 = load_module(ROOT / WEEK20)
    assert week20.TOY_TOKENS == ("login", "failed", "again")
    table = toy_self_attention(list(week20.TOY_TOKENS), d_model=4, seed=week20.TOY_SEED)[1]
    first_row = r"\s+".join(f"{v:.2f}" for v in table[0].tolist())
    assert re.search(rf"{week20.TOY_TOKENS[0]}\s+{first_row}", out)
    # Task 1: validation split and pairs by default, the three models, two seeds, the gaps
    # with their intervals per seed and over the seeds, and what the run can detect
    assert "scored on the validation split" in out and "the validation pairs" in out
    for seed in (0, 1):
        for model in ("with", "yours", "sines"):
            assert re.search(rf"^\s+{seed}\s+{model}\s+1\s+0\.\d+\s", out, re.MULTILINE)
        for part in ("all", "needs order", "pairs net"):
            assert re.search(rf"seed {seed}, {part}: [+-]\d\.\d{{3}} \(95 % CI", out)
    assert re.search(r"^  pairs net: [+-]0\.\d{3} \(95 % CI", out, re.MULTILINE)
    assert re.search(r"what one seed can detect .* 0\.140 in net share on 400 pairs", out)
    assert re.search(r"over 2 seeds, at the spread of their gaps: all \d", out)
    # Task 4: the broken model stops with its error, the repair trains
    assert re.search(r"broken: raised ValueError .*all padding", out)
    assert re.search(
        r"repaired: training loss per epoch 0\.\d{3}; validation accuracy 0\.", out
    )


def test_week20_test_split_only_on_request(week20_wrong_on_the_test_split):
    out = week20_wrong_on_the_test_split
    assert "scored on the test split" in out and "the test pairs" in out
    assert "validation split" not in out and "validation pairs" not in out


def test_week20_starter_is_short_and_its_settings_are_chapter_4s_recipe():
    from transformer_lab import char_transformer

    source = (ROOT / WEEK20).read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 150
    week20 = load_module(ROOT / WEEK20)
    assert week20.WINDOW == char_transformer.LENGTH
    assert week20.PATIENCE == char_transformer.PATIENCE
    assert week20.MAX_EPOCHS == char_transformer.MAX_EPOCHS
    assert week20.N_COMMENTS == char_transformer.SAMPLE_SIZE
    assert week20.SEEDS == tuple(seed for _, seed in char_transformer.RUNS)
    from transformer_lab import week20_runs

    # Task 1's own settings: chapter 4's recipe on a larger sample, with the package's pairs
    assert (
        week20.TASK1_COMMENTS,
        week20.TASK1_SEEDS,
        week20.N_PAIRS,
        week20.SPLIT_SEED,
    ) == (
        week20_runs.TASK1_COMMENTS,
        week20_runs.TASK1_SEEDS,
        week20_runs.TASK1_PAIRS,
        week20_runs.TASK1_SPLIT_SEED,
    )
    assert week20.TASK1_COMMENTS != char_transformer.SAMPLE_SIZE

    assert (week20.BPE_VOCAB, week20.BPE_LENGTH) == (
        week20_runs.TASK6_BPE_VOCAB,
        week20_runs.TASK6_BPE_LENGTH,
    )
    # the CAPITALS come first, then the functions, then a short main
    assert source.index("TASK1_COMMENTS =") < source.index("def forward_without_positions")
    main = source[source.index("def main(") :]
    assert len(main.splitlines()) <= 10


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
        "out, weights = attention(fold(q), fold(k), fold(v), padding.repeat_interleave(H, dim=0))",
        "out = out.reshape(B, H, L, D // H).transpose(1, 2).reshape(B, L, D)",
        "return mha.out_proj(out), weights.reshape(B, H, L, L)",
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
    "Exercise 8: your tokenizer",
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
    out = run(HOMEWORK, status=1)  # as python -m transformer_lab.selfcheck does
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
        == "logits 2.0, 0.3, -0.2 with labels 1, 0, 0: accuracy() returns 0.6667 (float)"
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
    # Exercise 8: what its success line names
    assert re.search(
        r"vocabulary size: 80\ntoken_to_id\(\"\[UNK\]\"\): 0 +token_to_id\(\"\[PAD\]\"\): 1\n"
        r"encode\(.*\)\.tokens: \[.*'\[UNK\]', '\[UNK\]'\]",
        found[EXAMPLES[6]],
    )
    assert "vocabulary size: 80" in found[EXAMPLES[7]]
    assert re.search(
        r"'token-pair': \d+ token\(s\); in the corpus \d+x as a word",
        found[EXAMPLES[7]],
    )
    assert (
        "5 words -> " in found[EXAMPLES[8]]
        and "(vocab_size=80): d=128: 10,240" in found[EXAMPLES[8]]
    )
    assert found[EXAMPLES[9]].endswith(
        "blocks exactly what the book's attention blocks with padding and causal=True: yes"
    )
    assert found[EXAMPLES[10]] == (
        "1 head(s), output: equal to nn.MultiheadAttention (largest difference below 1e-5)\n"
        "1 head(s), weights: equal to nn.MultiheadAttention (largest difference below 1e-5)\n"
        "4 head(s), output: equal to nn.MultiheadAttention (largest difference below 1e-5)\n"
        "4 head(s), weights: equal to nn.MultiheadAttention (largest difference below 1e-5)"
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
    runs.S = load_module(tmp_path / "plain.py")
    runs.try_exercise(EXAMPLES[4], runs.shuffle_check)
    text = sections(capsys.readouterr().out)[EXAMPLES[4]]
    assert "your masked_mean of them is unchanged: NO" in text
    assert "logits unchanged: NO" in text


def test_homework_training_runs_on_the_students_functions(homework_solved, tmp_path):
    plot = tmp_path / "loss.png"
    out = run(
        homework_solved,
        *("--train", "--max-epochs", 1, "--learning-rate", 0.003, "--heads", 4),
        *("--plot", plot, "--my-multi-head", "--test"),
    )
    assert f"loss curves saved to {plot}" in out
    assert plot.read_bytes().startswith(b"\x89PNG")
    assert (
        f"patience={PATIENCE}, learning_rate=0.003, heads=4, split 1, seed 42, at most 1 epochs, "
        "your multi_head_attention" in out
    )
    for name in ("mean baseline", "transformer"):
        match = re.search(
            rf"{name}: validation accuracy (0\.\d{{3}}) by your accuracy\(\) \((0\.\d{{3}}) by the "
            rf"book's\), best epoch 1 of 1",
            out,
        )
        assert match and match.group(1) == match.group(2), name
    assert (
        out.count("  logits unchanged: yes; predicted class changed in 0 of 64 sets\n") == 2
    )
    # the sealed test split, scored once for both models, after the validation runs
    assert re.search(r"transformer: test accuracy 0\.\d{3} \(the sealed test sets", out)
    assert out.count("test accuracy") == 2


def test_homework_training_really_calls_the_students_functions(homework_solved):
    starter = load_module(homework_solved)
    calls = {"attention": 0, "masked_mean": 0, "accuracy": 0}
    for name in calls:
        original = getattr(starter, name)

        def counted(*args, _original=original, _name=name):
            calls[_name] += 1
            return _original(*args)

        setattr(starter, name, counted)
    runs.S = starter
    runs.one_change_experiment(max_epochs=1)
    assert all(count > 0 for count in calls.values()), calls
    assert calls["accuracy"] == 2  # one score per model


def test_untouched_homework_training_says_not_done(capsys):
    # in-process: test_homework_training_runs_on_the_students_functions runs --train as a process
    starter = load_module(ROOT / HOMEWORK)
    assert starter.main(["--train", "--max-epochs", "1"]) == 0
    out = capsys.readouterr().out
    # the baseline trains first, and it pools with the student's masked_mean
    assert out.endswith(
        "not done yet: Exercise 2 (masked_mean): mask, sum over the tokens, divide by the real count\n"
    )


def test_exercise_3s_example_rejects_k_T_on_a_3d_tensor(homework_solved, capsys):
    """k.T on (B, Lk, D) reverses all three axes: the example must not print six 'outputs'."""
    source = homework_solved.read_text(encoding="utf-8")
    broken = source.replace("q @ k.transpose(-2, -1)", "q @ k.T")
    assert broken != source
    path = homework_solved.parent / "k_t.py"
    path.write_text(broken, encoding="utf-8")
    runs.S = load_module(path)
    runs.try_exercise(EXAMPLES[2], runs.attention_example)
    captured = capsys.readouterr()
    text = sections(captured.out)[EXAMPLES[2]]
    assert "outputs for the two queries" not in text
    assert "expected (1, 2, 1) and (1, 2, 3)" in text and ".T on a 3-D tensor" in text
    assert "UserWarning" not in captured.err


def test_homework_starter_is_short_and_its_settings_are_the_recipe():
    source = (ROOT / HOMEWORK).read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 150
    starter = load_module(ROOT / HOMEWORK)
    from transformer_lab import set_classifier

    # the patience is not restated: None stands for set_classifier.PATIENCE (one home)
    assert starter.PATIENCE is None
    assert (starter.LEARNING_RATE, starter.TRAIN_HEADS) == (
        set_classifier.LEARNING_RATE,
        set_classifier.NHEAD,
    )
    assert source.index("PATIENCE =") < source.index("def accuracy(")
    assert len(source[source.index("def main(") :].splitlines()) <= 10
