"""No answer to an exercise is on view before the student reaches its task.

For each task of the three exercise pages (Week 20, the homework, the by-hand sheet) this file
computes its answer, or the one sentence that gives it away, from the task's own inputs (the
starters' settings, the package, the by-hand sheet's glued values) and looks for it in the text
a reader sees on every page of the book:

- a chapter (or the intro) shows its prose, its visible code and the outputs recorded in its
  reference notebook (tests/references), with the glued numbers filled in; closed dropdowns
  ("open after Exercise N") do not count;
- an exercise page shows the same, except inside the task itself: everything before the task
  counts, closed hints and check boxes included (a student has opened them for earlier tasks),
  and after the task only what is open on load. Where the answer could sit in the task's own
  open text (a success line, a "Practises" pointer), the task's section counts too, without its
  closed dropdowns (``Answer.own_section``).

An outside review counted ten answers on view before their tasks; ``reviewed_answers`` names each one with
the page that showed it at 1bb8d3d.

No browser and no build are needed: ``tests/browser/test_browser_answers.py`` checks the
function bodies on the built HTML; this file checks the numbers, tables, shapes and readings.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

import book_pages

ROOT = Path(__file__).resolve().parents[1]
REFERENCES = ROOT / "tests" / "references"
WEEK_20 = "exercises/week-20/index.md"
HOMEWORK = "exercises/homework/index.md"
BY_HAND = "exercises/by-hand/index.md"
WEEK_20_STARTER = ROOT / "exercises" / "week-20" / "starter.py"
GLUE = re.compile(r"\{glue:(?:text|md)\}`([^`:]+)(?::[^`]*)?`")
LABEL = re.compile(r"^\(([A-Za-z0-9_-]+)\)=\s*$", re.MULTILINE)
DROPDOWN = re.compile(r"^(:{3,})\{dropdown\}.*?^\1\s*$", re.MULTILINE | re.DOTALL)


def toc_pages() -> list[str]:
    """Every page of the table of contents, as paths relative to the repository."""
    return [page.relative_to(ROOT).as_posix() for page in book_pages.toc_pages()]


def glued_values(notebook: dict) -> dict[str, str]:
    values = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            data = output.get("data", {})
            text = data.get("application/papermill.record/text/plain") or data.get(
                "application/papermill.record/text/markdown"
            )
            if name and text is not None:
                text = "".join(text) if isinstance(text, list) else text
                values[name] = text[1:-1] if text[:1] in "'\"" else text
    return values


@functools.cache
def page_parts(page: str) -> list[tuple[str, str]]:
    """The page as (kind, text) in reading order: kind is "prose", "code" or "output".

    Prose has its glued numbers filled in. Code and outputs hidden by the page's tags are left
    out; so are the book-keeping outputs of glue. A page without code has no reference and is
    read from its source.
    """
    reference = REFERENCES / Path(page).with_suffix(".ipynb")
    if not reference.exists():
        return [("prose", (ROOT / page).read_text(encoding="utf-8"))]
    notebook = json.loads(reference.read_text(encoding="utf-8"))
    glued = glued_values(notebook)
    parts = []
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append(("prose", GLUE.sub(lambda m: glued.get(m.group(1), "?"), source)))
            continue
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags:
            continue
        if "remove-input" not in tags:
            parts.append(("code", source))
        if "remove-output" in tags:
            continue
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook"):
                continue
            if output["output_type"] == "stream":
                parts.append(("output", "".join(output["text"])))
            elif "text/plain" in output.get("data", {}) and not any(
                kind.startswith("image/") for kind in output["data"]
            ):  # a figure's text is its repr (<Figure size ...>), not what the reader sees
                parts.append(("output", "".join(output["data"]["text/plain"])))
    return parts


def closed(text: str) -> str:
    """``text`` without its closed dropdowns (hints, checks, listings to open later)."""
    return DROPDOWN.sub("", text)


def visible_text(page: str, task: str | None = None, own_section: bool = False) -> str:
    """What a reader has seen of ``page`` before doing ``task`` (a label on this page), or on
    load when the task is elsewhere."""
    return seen_before(
        "\n".join(text for _, text in page_parts(page)), task, page, own_section
    )


def seen_before(
    text: str, task: str | None, page: str = "the page", own_section: bool = False
) -> str:
    """Outside the task's section: before it, everything (the earlier tasks' dropdowns were
    opened); after it, what is open on load. With no task, what is open on load. With
    ``own_section``, the task's section too, without its closed dropdowns."""
    if task is None:
        return closed(text)
    labels = list(LABEL.finditer(text))
    mine = [i for i, match in enumerate(labels) if match.group(1) == task]
    assert mine, f"{page} has no label ({task})="
    start = labels[mine[0]].start()
    end = labels[mine[0] + 1].start() if mine[0] + 1 < len(labels) else len(text)
    if own_section:
        return text[:start] + "\n" + closed(text[start:])
    return text[:start] + "\n" + closed(text[end:])


# --- the answers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    name: str
    what: str
    page: str
    task: str  # the label of the task's section
    patterns: tuple[str, ...]
    own_section: bool = False  # the task's own open text counts too


def number(value: int) -> str:
    """A count as a page could print it: 3,152,384, 3152384 or 3 152 384."""
    groups = f"{value:,}".split(",")
    return r"(?<![\d.,])" + r"[,\s\u202f]?".join(groups) + r"(?![\d])"


def sequence(values: list[str], gap: str = r"[\s,;|·\[\]'\"]+") -> str:
    return r"(?<![\w.])" + gap.join(re.escape(v) for v in values) + r"(?![\w])"


def shape(*sizes: int) -> str:
    return re.escape(str(tuple(sizes)))


def starter_setting(name: str):
    for node in ast.parse(WEEK_20_STARTER.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise KeyError(name)


@functools.cache
def by_hand_glue() -> dict[str, str]:
    reference = REFERENCES / "exercises" / "by-hand" / "index.ipynb"
    return glued_values(json.loads(reference.read_text(encoding="utf-8")))


def toy_rows(n_tokens: int, seed: int) -> list[list[str]]:
    from transformer_lab.attention import toy_self_attention

    _, weights = toy_self_attention(["t"] * n_tokens, d_model=4, seed=seed)
    return [[f"{value:.2f}" for value in row] for row in weights.tolist()]


def tiny_tokenizer(vocab_size: int = 80):
    from transformer_lab.tokenizer import TINY_CORPUS, train_bpe_tokenizer

    return train_bpe_tokenizer(list(TINY_CORPUS), vocab_size)


def week_20_answers() -> list[Answer]:
    tokens = starter_setting("TOY_TOKENS")
    seed = starter_setting("TOY_SEED")
    reader = re.escape(tokens[1])
    return [
        Answer(
            "week-20-2-table",
            f"a 3-token toy table like task 2's (seed {seed} and the seeds --toy-seed tries)",
            WEEK_20,
            "ex-week-20-attention-map",
            tuple(
                sequence(row, gap=r"\s+")
                for s in sorted({seed, *range(10)})
                for row in toy_rows(3, s)
            ),
        ),
        Answer(
            "week-20-2-reading",
            f"a reading of the {tokens[1]!r} row (which token it looks at, and why not)",
            WEEK_20,
            "ex-week-20-attention-map",
            (
                rf"[\"“]{reader}[\"”] (reads|looks at|attends to|puts|has learned)",
                rf"Read the [\"“]{reader}[\"”] row:",
                rf"story that [\"“]?{reader}",
            ),
        ),
        Answer(
            "week-20-3-memo",
            "ready-made memo sentences: what each architecture is good at, with its data set",
            WEEK_20,
            "ex-week-20-memo",
            (
                r"\|\s*Good at\s*\|",
                r"CloudWave data that fits",
                r"memo may cite",
                r"^\|\s*(CNN|RNN|Transformer|Gradient-boosted)[^\n]*data/\w+\.(csv|json)",
            ),
        ),
    ]


def homework_answers() -> list[Answer]:
    from transformer_lab.attention import causal_mask
    from transformer_lab.encoder import encoder_layer_parameters

    tiny = tiny_tokenizer(80)
    vocab = [token for token, _ in sorted(tiny.get_vocab().items(), key=lambda kv: kv[1])]
    from transformer_lab.tokenizer import TINY_CORPUS, alphabet

    merges = 80 - 2 - len(alphabet(TINY_CORPUS))
    from transformer_lab.homework_runs import EXERCISE_9_WORDS

    pieces = {w: tiny.encode(w).tokens for w in EXERCISE_9_WORDS}
    unseen = tiny.encode("the transformer decoder generates text").tokens
    grid = causal_mask(6) | torch_padding_columns(6, 2)
    drawn = ["".join("x" if b else "." for b in row) for row in grid.tolist()]
    return [
        Answer(
            "homework-2-masked-mean",
            "the pooled vectors of the prediction box",
            HOMEWORK,
            "ex-homework-masked-mean",
            (r"\[\[3(\.0*)?, 6(\.0*)?\]\]", r"\[\[302(\.0*)?, 304(\.0*)?\]\]"),
        ),
        Answer(
            "homework-4-shapes",
            "the shapes nn.MultiheadAttention returns for 2 and 4 heads on sets of 8 tokens",
            HOMEWORK,
            "ex-homework-mha",
            tuple(rf"\(\d+, {h}, 8, 8\)" for h in (2, 4)),
        ),
        Answer(
            "homework-7-counts",
            "the six embedding counts and the ratio to one encoder layer",
            HOMEWORK,
            "ex-homework-embedding-parameters",
            tuple(number(v * d) for v in (80, 50_000) for d in (128, 512, 768))
            + (
                rf"(?<![\d.]){50_000 * 768 / encoder_layer_parameters(512, 8, 2048):.0f}"
                r"\s*(times|×)",
            ),
        ),
        Answer(
            "homework-8-vocabulary",
            f"the vocabulary of 80: {merges} merges, its last tokens, [UNK] for café",
            HOMEWORK,
            "ex-homework-train-tokenizer",
            (
                rf"(?<!\d){merges} merges",
                sequence(vocab[-8:]),
                r"caf(é)?['\"]?[,\s]*['\"]?\[UNK\]|'c',\s*'a',\s*'f',\s*'\[UNK\]'",
            ),
        ),
        Answer(
            "homework-9-pieces",
            "how the six words of Exercise 9 split at 80",
            HOMEWORK,
            "ex-homework-tokens-per-word",
            tuple(sequence(p) for p in pieces.values() if len(p) > 1),
        ),
        Answer(
            "homework-10-unseen",
            "the tokens of Exercise 10's unseen sentence",
            HOMEWORK,
            "ex-homework-run-tokenizer",
            (sequence(unseen),),
        ),
        Answer(
            "homework-11-mask",
            "Exercise 11's drawn mask, and what left padding does to the first query",
            HOMEWORK,
            "ex-homework-causal-mask",
            (
                r"\s+".join(" ?".join(row) for row in drawn),
                r"\bleft\b[^.]{0,80}first query[^.]{0,80}only itself",
            ),
        ),
        Answer(
            "homework-4-unmasked-padding",
            "why all-zero padding still draws attention without the mask (the embedding's bias)",
            HOMEWORK,
            "ex-homework-mha",
            (r"zero input[^.]{0,60}(becomes|comes out)[^.]{0,60}\bbias\b",),
        ),
        Answer(
            "homework-12-shapes",
            "the folded shapes of Exercise 12 (B = 8, L = 8, D = 16, H = 4)",
            HOMEWORK,
            "ex-homework-mha-by-hand",
            (shape(32, 8, 4), shape(32, 8)),
        ),
    ]


def torch_padding_columns(length: int, padded: int):
    import torch

    padding = torch.arange(length) >= length - padded
    return padding[None, :].expand(length, length)


def by_hand_answers() -> list[Answer]:
    glued = by_hand_glue()
    from transformer_lab.attention import causal_mask

    length = int(glued["bh_2_2_length"])
    printed_mask = (
        re.escape(str(causal_mask(length).int()))
        .replace(r"\ ", r"\s*")
        .replace("\\\n", r"\s*")
    )
    vectors = ["bh_2_1_weights", "bh_2_1_output", "bh_2_1_forgot_weights"]
    return [
        Answer(
            "by-hand-1-1",
            "the embedding counts of exercise 1.1",
            BY_HAND,
            "by-hand-1-1",
            tuple(
                number(int(glued[n].replace(",", "")))
                for n in ("bh_1_1_emb_small", "bh_1_1_emb_large")
            ),
        ),
        Answer(
            "by-hand-2-1",
            "the weights and outputs of exercise 2.1",
            BY_HAND,
            "by-hand-2-1",
            tuple(
                sequence(
                    [v.strip() for v in glued[n].strip("[]").split(",") if v.strip() != "0"]
                )
                for n in vectors
            ),
        ),
        Answer(
            "by-hand-2-2",
            f"the causal grid of exercise 2.2 ({length} positions)",
            BY_HAND,
            "by-hand-2-2",
            (printed_mask,),
        ),
        Answer(
            "by-hand-2-3",
            "the shapes of exercise 2.3",
            BY_HAND,
            "by-hand-2-3",
            tuple(re.escape(glued[n]) for n in ("bh_2_3_split", "bh_2_3_weights")),
        ),
        Answer(
            "by-hand-3-2",
            "the parameter count of exercise 3.2",
            BY_HAND,
            "by-hand-3-2",
            (number(int(glued["bh_3_2_total"].replace(",", ""))),),
        ),
        Answer(
            "by-hand-3-3",
            "the parameter count of exercise 3.3",
            BY_HAND,
            "by-hand-3-3",
            (number(int(glued["bh_3_3_total"].replace(",", ""))),),
        ),
        Answer(
            "by-hand-3-4",
            "the parameter count of exercise 3.4's layer",
            BY_HAND,
            "by-hand-3-4",
            (number(int(glued["bh_3_4_count"].replace(",", ""))),),
        ),
    ]


def spaced(pattern: str) -> str:
    """``pattern`` with each space matching any run of whitespace (prose wraps anywhere)."""
    return pattern.replace(" ", r"\s+")


def reviewed_answers() -> list[Answer]:
    """The answers the review found on view before their tasks (at 1bb8d3d), one entry each; the
    comment names where each one was."""
    from transformer_lab.tokenizer import TINY_CORPUS, alphabet

    letters = len(alphabet(TINY_CORPUS))
    return [
        Answer(
            a.name,
            a.what,
            a.page,
            a.task,
            tuple(spaced(p) for p in a.patterns),
            a.own_section,
        )
        for a in [
            # 1. chapter 4: "The model without positions scores a net 0 in every run", the answer to
            #    Task 1's prediction (what net share will your model without positions score?)
            Answer(
                "review-week-20-1-net-0",
                "the net share of the model without positions on the mirrored pairs",
                WEEK_20,
                "ex-week-20-positions",
                (
                    r"without positions[^.]{0,40}\bscores? a net (share of )?0\b",
                    r"without positions[^.]{0,60}\bnet (share )?(of )?0 (in every run|however)",
                ),
            ),
            # 2. chapter 3's section "A rule that scores 100 %", and the homework's own pointer to
            #    it: the answer to Exercise 6's question whether a handcrafted rule solves the task
            Answer(
                "review-homework-6-rule",
                "that a handcrafted rule scores 100 % on the set task",
                HOMEWORK,
                "ex-homework-experiment",
                (
                    r"rule that scores 100\s?%",
                    r"rule (that )?(solves|gets)[^.]{0,40}(exactly|100)",
                ),
                own_section=True,
            ),
            # 3. chapter 5 printed the homework corpus's alphabet (and the vocabulary as special
            #    tokens + characters + merges): Exercise 8's merges were one subtraction away
            Answer(
                "review-homework-8-alphabet",
                f"the size of the homework corpus's alphabet ({letters} characters)",
                HOMEWORK,
                "ex-homework-train-tokenizer",
                (
                    rf"alphabet \({letters} characters\)",
                    rf"\+ {letters} characters",
                    rf"(?<![\d.,]){letters} (distinct |different )?characters",
                    r"after its section \"A corpus you can read",
                ),
                own_section=True,
            ),
            # 4. the homework's Exercise 5 success line: yes three times, NO with a plain mean
            Answer(
                "review-homework-5-success",
                "what the shuffle check prints with your functions and with a plain mean",
                HOMEWORK,
                "ex-homework-assemble",
                (r"`?\byes`? three times", r"`?\bNO`? for the pooled vector"),
                own_section=True,
            ),
            # 5. the Week-20 objectives (and the opening prediction, and the summary) listed Task 4's
            #    symptoms: an error on some batches, a score that moves with the batch, one class
            Answer(
                "review-week-20-4-symptoms",
                "the symptoms of Task 4's three bugs",
                WEEK_20,
                "ex-week-20-debug",
                (
                    r"(error|fails) on some batches",
                    r"score that changes with the comments beside it",
                    r"predictions that never change class",
                    r"silent bugs raise no error",
                ),
            ),
            # 6. chapter 1: which information a classifier of whole sets may see (the last question
            #    of the homework's Exercise 3)
            Answer(
                "review-homework-3-visibility",
                "which information a classifier of whole sets is allowed to see",
                HOMEWORK,
                "ex-homework-attention",
                (
                    r"every real token may (read|look at|see) every other real token",
                    r"shown the complete example",
                ),
            ),
            # 7. chapter 2: how much attention the padding gets without the mask (Exercise 4's
            #    prediction: will the real tokens give the padded positions any weight?)
            Answer(
                "review-homework-4-unmasked",
                "that the real tokens give the padding weight once the mask is removed",
                HOMEWORK,
                "ex-homework-mha",
                (
                    r"without (the )?(padding )?mask[^.\n]{0,60}\d+\s?% of",
                    r"without (the )?mask, (the )?real tokens hand the padding",
                ),
            ),
            # 8. the homework's Exercise 1 told the trap away: a logit of zero is a probability of 0.5
            Answer(
                "review-homework-1-threshold",
                "where Exercise 1's threshold sits on the logit scale",
                HOMEWORK,
                "ex-homework-accuracy",
                (r"logit of (zero|0) is a probability of 0\.5",),
                own_section=True,
            ),
        ]
    ]


@functools.cache
def answers() -> dict[str, Answer]:
    found = week_20_answers() + homework_answers() + by_hand_answers() + reviewed_answers()
    return {answer.name: answer for answer in found}


def leaks(answer: Answer) -> list[str]:
    """Where ``answer`` is on view: one excerpt per page."""
    found = []
    for page in toc_pages():
        mine = page == answer.page
        text = visible_text(
            page, answer.task if mine else None, mine and answer.own_section
        )
        for pattern in answer.patterns:
            match = re.search(pattern, text, re.MULTILINE | re.DOTALL)
            if match:
                around = text[max(0, match.start() - 60) : match.end() + 60]
                found.append(f"{page}: …{' '.join(around.split())}…")
                break
    return found


# --- the matcher on planted text -------------------------------------------------------------------


def test_visible_text_hides_closed_dropdowns_after_the_task_but_not_before():
    text = (
        "(ex-a)=\n## Task A\nask A\n:::{dropdown} Check\nANSWER-B\n:::\n"
        "(ex-b)=\n## Task B\nask B\n:::{dropdown} Check\nANSWER-B-HERE\n:::\n"
        "(ex-c)=\n## Task C\n:::{dropdown} Hint 1\nLATER\n:::\nopen LATER-OPEN\n"
    )
    seen = seen_before(text, "ex-b")
    assert "ANSWER-B\n" in seen  # an earlier task's check box was opened
    assert "ANSWER-B-HERE" not in seen  # the task's own section is excused
    assert "LATER-OPEN" in seen and "\nLATER\n" not in seen  # later: only what is open
    assert "ANSWER-B" not in seen_before(text, None)  # elsewhere: closed boxes hidden


def test_the_patterns_find_planted_answers():
    planted = {
        "week-20-2-table": "  ".join(toy_rows(3, 0)[1]),
        "week-20-2-reading": f'Read the "{starter_setting("TOY_TOKENS")[1]}" row: it puts',
        "week-20-3-memo": "| Architecture | Assumes | Good at | CloudWave data that fits |",
        "homework-4-shapes": "per head (6, 2, 8, 8)",
        "homework-4-unmasked-padding": "a zero input becomes the embedding's bias vector",
        "homework-11-mask": "pad an example on the *left* and its first query may read only itself",
        "by-hand-3-4": f"total parameters: {by_hand_glue()['bh_3_4_count'].replace(',', '')}",
        "review-week-20-1-net-0": "The model without positions scores a net 0 in every run",
        "review-homework-6-rule": "### A rule that scores 100 %",
        "review-homework-8-alphabet": "alphabet (26 characters): -abc",
        "review-homework-5-success": "and `NO` for the pooled vector and the logits",
        "review-week-20-4-symptoms": "(an error on some batches, a score that changes",
        "review-homework-3-visibility": "every real token may read every other real token",
        "review-homework-4-unmasked": "without mask, padding gets 47% of real tokens' attention",
        "review-homework-1-threshold": "and a logit of zero is a probability of 0.5.",
    }
    for name, text in planted.items():
        assert any(re.search(p, text, re.MULTILINE) for p in answers()[name].patterns), name
    # the task's own open text counts for own_section answers, its closed boxes never
    own = "(ex-a)=\nopen TOLD\n:::{dropdown} Check\nHIDDEN\n:::\n(ex-b)=\n"
    assert "TOLD" in seen_before(own, "ex-a", own_section=True)
    assert "HIDDEN" not in seen_before(own, "ex-a", own_section=True)
    assert "TOLD" not in seen_before(own, "ex-a")
    # teaching text that gives no answer away
    calm = "A row of weights sums to 1. (B, H, L, L) per head. The causal mask hides the future."
    for answer in answers().values():
        assert not any(re.search(p, calm, re.MULTILINE) for p in answer.patterns), (
            answer.name
        )


# --- the book ----------------------------------------------------------------------------------------


def test_exercise_6_does_not_rerun_chapter_3():
    """Chapter 3 prints its runs on split 0 with the book's seed; Exercise 6's default run,
    the same recipe on the same draw, would print the same lines."""
    from transformer_lab.homework_runs import DEFAULT_SPLIT

    assert DEFAULT_SPLIT != 0, (
        "Exercise 6's default run is chapter 3's (split 0): its answer is printed there"
    )


def test_the_review_counts_ten_answers():
    """The review found ten answers on view; each has its entry (one covers chapter 5's alphabet
    and the homework's pointer to it, one the objectives, prediction and summary of Week 20)."""
    found = reviewed_answers()
    assert len(found) == 8 and len({a.name for a in found}) == 8
    # with the two answers the existing entries already covered: Week 20's toy reading and memo
    assert {"week-20-2-reading", "week-20-3-memo"} <= set(answers())


def test_chapter_5_does_not_train_on_the_homework_corpus():
    """Exercise 8 asks how many merges 80 tokens leave on TINY_CORPUS: chapter 5's corpus has
    another alphabet, so its printed vocabulary is no subtraction away from the answer."""
    from transformer_lab.tokenizer import CHAPTER_CORPUS, TINY_CORPUS, alphabet

    source = (ROOT / "chapters" / "05-tokenizers.md").read_text(encoding="utf-8")
    assert "TINY_CORPUS" not in source
    assert len(alphabet(CHAPTER_CORPUS)) != len(alphabet(TINY_CORPUS))


def test_week_20_task_1_default_seeds_were_fixed_in_advance():
    """Seed 0 chose Task 1's sample size on its validation pairs: it is no default seed, the
    default trains three, and the page tells how the default was chosen before the run."""
    from transformer_lab.week20_runs import TASK1_SEEDS

    assert 0 not in TASK1_SEEDS and len(TASK1_SEEDS) >= 3
    assert starter_setting("TASK1_SEEDS") == TASK1_SEEDS
    text = (ROOT / WEEK_20).read_text(encoding="utf-8")
    section = text[
        text.index("(ex-week-20-positions)=") : text.index("(ex-week-20-attention-map)=")
    ]
    disclosure = section.index("**How the defaults were chosen.**")
    assert disclosure < section.index(":::{dropdown} Hint 1")
    assert "seed 0" not in closed(section[section.index(":::{dropdown} Check") :]).lower()


def test_week_20_task_2_is_the_clients_toy():
    """Seed 000 asks for the toy *login / failed / again*: "which token does 'failed' look at?"."""
    assert starter_setting("TOY_TOKENS") == ("login", "failed", "again")


@pytest.mark.parametrize("name", sorted(answers()))
def test_no_answer_is_on_view_before_its_task(name):
    answer = answers()[name]
    assert answer.patterns, f"{name}: no pattern to look for"
    found = leaks(answer)
    assert not found, (
        f"{answer.what} ({answer.page}#{answer.task}) is on view:\n" + "\n".join(found)
    )
