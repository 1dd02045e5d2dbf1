"""Every graded answer of the book, where it belongs, and how to recognise it in a page's text.

One entry per answer a student must produce: the function bodies of the functions the exercise
pages ask for, the printed outputs of the tasks, the worked numbers of the by-hand sheet. Each
names the task it belongs to (its page and the label of its section) and holds regular
expressions that match the answer as a page could show it: a line of its code, its numbers.
``tests/browser/test_browser_answers.py`` fails when any of them is *visible on load* (outside
every closed dropdown) anywhere in the built book except inside its own task's section.

Computed answers are never typed here: the by-hand sheet's numbers are read from the glue values
its committed reference notebook records, the tokens and tables from the package.

``known_leaks`` lists, per answer, the pages where the answer is still on view at the time of
writing and whose owner has been told (the page and the helper who fixes it). The browser test
reports those as expected failures, and fails as soon as one of them no longer leaks (delete the
entry then), so the list cannot rot.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from book_pages import ROOT

HOMEWORK = "exercises/homework/index.html"
WEEK_20 = "exercises/week-20/index.html"
BY_HAND = "exercises/by-hand/index.html"
BY_HAND_REFERENCE = ROOT / "tests" / "references" / "exercises" / "by-hand" / "index.ipynb"


def starter_setting(starter: Path, name: str):
    """The value of a CAPITAL setting at the top of a starter script (read, not run)."""
    for node in ast.parse(starter.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise KeyError(f"{starter} sets no {name}")


# Week 20's task 2 prints the toy's table for its starter's tokens and seed by default.
WEEK_20_STARTER = ROOT / "exercises" / "week-20" / "starter.py"
WEEK_20_TOY_TOKENS = starter_setting(WEEK_20_STARTER, "TOY_TOKENS")
WEEK_20_TOY_SEED = starter_setting(WEEK_20_STARTER, "TOY_SEED")
UNSEEN_SENTENCE = "the transformer decoder generates text"  # homework exercise 10


@dataclass(frozen=True)
class Answer:
    """One graded answer: what it is, the task it belongs to, and how it shows in text."""

    name: str
    what: str
    page: str  # the built page of the task, relative to the HTML root
    anchor: str  # the label of the task's section (``(ex-...)=`` in the source)
    patterns: tuple[str, ...]  # regular expressions, searched with re.DOTALL
    known_leaks: dict[str, str] = field(
        default_factory=dict
    )  # page -> who fixes it, and how

    def compiled(self) -> list[re.Pattern]:
        return [re.compile(pattern, re.DOTALL) for pattern in self.patterns]


@dataclass
class PageText:
    """The text a reader sees on load, and where each labelled section starts and ends in it."""

    text: str
    sections: dict[str, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Leak:
    page: str
    excerpt: str


def find_leaks(answer: Answer, pages: dict[str, PageText], context: int = 60) -> list[Leak]:
    """Every place where ``answer`` is visible outside its own task's section, one per page."""
    leaks = []
    for page, seen in pages.items():
        allowed = seen.sections.get(answer.anchor) if page == answer.page else None
        for pattern in answer.compiled():
            hits = [
                match
                for match in pattern.finditer(seen.text)
                if allowed is None or not (allowed[0] <= match.start() < allowed[1])
            ]
            if hits:
                start, end = hits[0].span()
                excerpt = seen.text[max(0, start - context) : end + context]
                leaks.append(Leak(page, " ".join(excerpt.split())))
                break
    return leaks


MARK = re.compile(r"⟦([SE])(\d+)⟧")


def parse_marked(marked: str, ids: dict[str, int]) -> PageText:
    """Turn the probe's text (with ⟦S3⟧ … ⟦E3⟧ around section 3) into a ``PageText``."""
    text, starts, ends, position, cursor = [], {}, {}, 0, 0
    for match in MARK.finditer(marked):
        text.append(marked[cursor : match.start()])
        position += match.start() - cursor
        (starts if match.group(1) == "S" else ends)[int(match.group(2))] = position
        cursor = match.end()
    text.append(marked[cursor:])
    length = position + len(marked) - cursor
    sections = {
        label: (starts[index], ends.get(index, length))
        for label, index in ids.items()
        if index in starts
    }
    return PageText("".join(text), sections)


# --- helpers that build patterns from computed answers --------------------------------------------


def number_pattern(value: str) -> str:
    """A number as a page could print it: 3,152,384 also as 3152384 or 3 152 384."""
    digits = value.replace(",", "")
    if digits.isdigit() and len(digits) > 3:
        groups = value.split(",") if "," in value else [value]
        spaced = r"[,\s\u202f]?".join(re.escape(group) for group in groups)
        return rf"(?<![\d.,]){spaced}(?![\d])"
    return rf"(?<![\d.]){re.escape(value)}(?![\d])"


def sequence_pattern(values: list[str], gap: str = r"[\s,;|·\[\]'\"]+") -> str:
    """Values in order, separated only by spaces, commas, brackets or table rules."""
    return r"(?<![\w.])" + gap.join(re.escape(v) for v in values) + r"(?![\w])"


@functools.cache
def by_hand_glue() -> dict[str, str]:
    """The by-hand sheet's glued values, read from its committed reference notebook."""
    notebook = json.loads(BY_HAND_REFERENCE.read_text(encoding="utf-8"))
    values = {}
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            text = output.get("data", {}).get("application/papermill.record/text/plain")
            if name and text is not None:
                values[name] = text[1:-1] if text[:1] in "'\"" else text
    return values


def vector_numbers(glued: str) -> list[str]:
    """[0.665, 0.245, 0.090, 0] -> ['0.665', '0.245', '0.090']: the distinctive entries."""
    return [v.strip() for v in glued.strip("[]").split(",") if v.strip() not in {"0", ""}]


def toy_table_rows(tokens: tuple[str, ...], seed: int) -> list[list[str]]:
    """Week 20 task 2's answer: the rows of the toy's weights table, at 2 decimals."""
    from transformer_lab.attention import toy_self_attention

    _, weights = toy_self_attention(list(tokens), d_model=4, seed=seed)
    return [[f"{value:.2f}" for value in row] for row in weights.tolist()]


def unseen_sentence_tokens() -> list[str]:
    """Homework exercise 10's answer: the tokens of its unseen sentence at 80 tokens."""
    from transformer_lab.tokenizer import TINY_CORPUS, train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), 80)
    return tokenizer.encode(UNSEEN_SENTENCE).tokens


# --- the answers -------------------------------------------------------------------------------


def answers() -> list[Answer]:
    glued = by_hand_glue()
    toy_rows = toy_table_rows(WEEK_20_TOY_TOKENS, WEEK_20_TOY_SEED)
    return [
        # Homework (exercises/homework/index.md).
        Answer(
            "homework-1-accuracy",
            "the body of accuracy(): threshold the logits, compare with the labels, mean",
            HOMEWORK,
            "ex-homework-accuracy",
            (
                r"\(\s*logits\s*>\s*[0-9.]+\s*\)\s*(\.float\(\)|\.to\([^)]*\))?\s*==\s*labels",
                r"\(\s*logits\s*>\s*[0-9.]+\s*\)\s*\.(float|to)\(",
            ),
        ),
        Answer(
            "homework-2-masked-mean",
            "the body of masked_mean(): mask, sum over the tokens, divide by the real count",
            HOMEWORK,
            "ex-homework-masked-mean",
            (
                r"\(\s*~\s*padding\s*\)\s*\.unsqueeze\(\s*-1\s*\)",
                r"\(\s*~\s*padding\s*\)\s*\.sum\(\s*dim\s*=\s*1\s*,\s*keepdim",
                r"\(\s*x\s*\*\s*keep\s*\)\s*\.sum\(\s*dim\s*=\s*1\s*\)",
                r"\.sum\(\s*dim\s*=\s*1\s*\)\s*/\s*counts?\b",
            ),
        ),
        Answer(
            "homework-3-attention",
            "the body of attention(): scaled scores, -inf mask before the softmax over keys, mix",
            HOMEWORK,
            "ex-homework-attention",
            (
                r"@\s*\w+\.transpose\(\s*-2\s*,\s*-1\s*\)\s*/\s*math\.sqrt",
                r"torch\.softmax\(\s*scores\b",
                r"masked_fill\(\s*\w+\[\s*:\s*,\s*None\s*,\s*:\s*\]\s*,\s*float\(\s*['\"]-inf",
            ),
        ),
        Answer(
            "homework-7-embedding-parameters",
            "embedding_parameters() and its printed counts (80 and 50,000 tokens at d = 128/512/768)",
            HOMEWORK,
            "ex-homework-embedding-parameters",
            (
                r"vocab_size\s*[×*x]\s*d\b",
                number_pattern("6,400,000"),
                number_pattern("25,600,000"),
                number_pattern("38,400,000"),
                r"(?<![\d.])38\.4\s*M\b",
            ),
        ),
        Answer(
            "homework-8-train-bpe-tokenizer",
            "the recipe of train_bpe_tokenizer(): BPE with [UNK], Whitespace, BpeTrainer, specials",
            HOMEWORK,
            "ex-homework-train-tokenizer",
            (
                r"BPE\(\s*unk_token",
                r"unk_token\s*=\s*['\"]\[UNK\]['\"]",
                r"\bWhitespace\b",
                r"BpeTrainer\(",
                r"train_from_iterator\(",
                r"special_tokens\s*=\s*\[\s*['\"]\[UNK\]['\"]\s*,\s*['\"]\[PAD\]",
            ),
        ),
        Answer(
            "homework-9-tokens-per-word",
            "the body of tokens_per_word(): encode each word alone, count its tokens",
            HOMEWORK,
            "ex-homework-tokens-per-word",
            (
                r"len\(\s*\w+\.encode\(\s*\w+[^()]*\)\.(tokens|ids)\s*\)",
                r"\.encode\(\s*(w|word)\s*\)\.tokens\b",
            ),
        ),
        Answer(
            "homework-10-unseen-sentence",
            f"the tokens of {UNSEEN_SENTENCE!r} at a vocabulary of 80",
            HOMEWORK,
            "ex-homework-run-tokenizer",
            (sequence_pattern(unseen_sentence_tokens()),),
        ),
        Answer(
            "homework-11-causal-padding-mask",
            "the body of causal_padding_mask(): the upper triangle or the padded key columns",
            HOMEWORK,
            "ex-homework-causal-mask",
            (
                r"triu\(\s*diagonal\s*=\s*1\s*\)[^|\n]{0,40}\|",
                r"\[\s*None[\s,:]*\]\s*\|\s*padding\[\s*:\s*,\s*None\s*,\s*:\s*\]",
            ),
        ),
        Answer(
            "homework-12-multi-head-attention",
            "the body of multi_head_attention(): project, fold the heads, attend, unfold",
            HOMEWORK,
            "ex-homework-mha-by-hand",
            (
                r"in_proj_weight\s*,\s*\w+\.in_proj_bias\s*\)\s*\.chunk\(",
                r"padding\.repeat_interleave\(",
                r"masked_fill\(\s*padding\[\s*:\s*,\s*None\s*,\s*None\s*,\s*:\s*\]",
            ),
        ),
        # Week 20 (exercises/week-20/index.md).
        Answer(
            "week-20-1-no-positions",
            "the body of NoPositions.forward(): PraiseClassifier.forward without the positions",
            WEEK_20,
            "ex-week-20-positions",
            (
                r"self\.encoder\(\s*x\s*,\s*src_key_padding_mask\s*=\s*padding\s*\)",
                r"self\.head\(\s*masked_mean\(",
            ),
        ),
        Answer(
            "week-20-2-toy-weights",
            "the body of toy_weights(): queries and keys from W_q and W_k, scaled, softmaxed",
            WEEK_20,
            "ex-week-20-attention-map",
            (r"@\s*w_q\b", r"\bq\s*@\s*k\.T\b"),
        ),
        Answer(
            "week-20-2-toy-table",
            f"the printed weights of task 2's default run ({', '.join(WEEK_20_TOY_TOKENS)}, "
            f"seed {WEEK_20_TOY_SEED})",
            WEEK_20,
            "ex-week-20-attention-map",
            tuple(sequence_pattern(row, gap=r"\s+") for row in toy_rows),
        ),
        Answer(
            "week-20-4-sinusoidal-positions",
            "the body of sinusoidal_positions(): angles from 10000 ** (-2i/D), sines, cosines",
            WEEK_20,
            "ex-week-20-sinusoidal",
            (
                r"\*\*\s*\(\s*-\s*torch\.arange\(\s*0\s*,\s*d_model\s*,\s*2",
                r"\[\s*:\s*,\s*0::2\s*\]\s*=\s*torch\.sin",
            ),
        ),
        # The by-hand sheet (exercises/by-hand/index.md): its worked answers.
        Answer(
            "by-hand-1-1-embedding",
            "the embedding counts of exercise 1.1",
            BY_HAND,
            "by-hand-1-1",
            (number_pattern(glued["bh_1_1_emb_large"]),),
        ),
        Answer(
            "by-hand-2-1-attention",
            "the weights and outputs of exercise 2.1, with and without the mask",
            BY_HAND,
            "by-hand-2-1",
            tuple(
                sequence_pattern(vector_numbers(glued[name]))
                for name in (
                    "bh_2_1_weights",
                    "bh_2_1_output",
                    "bh_2_1_forgot_weights",
                    "bh_2_1_forgot_output",
                )
            ),
        ),
        Answer(
            "by-hand-3-1-pre-norm-blocks",
            "the blocks of the pre-norm layer in order (norm1 before self_attn and dropout1)",
            BY_HAND,
            "by-hand-3-1",
            (r"\bnorm1\b.{0,40}?\bself_attn\b.{0,40}?\bdropout1\b",),
        ),
        Answer(
            "by-hand-3-3-encoder-layer",
            "the parameter count of exercise 3.3 (d = 512, d_ff = 2048) and its parts",
            BY_HAND,
            "by-hand-3-3",
            (
                number_pattern(glued["bh_3_3_total"]),
                number_pattern(glued["bh_3_3_attention"]),
                number_pattern(glued["bh_3_3_feed_forward"]),
                rf"(?<![\d.]){re.escape(glued['bh_3_3_total_m'])}\s*(M\b|million)",
                rf"(?<![\d.]){re.escape(glued['bh_3_3_ff_share'].rstrip('%'))}\s*%"
                r"[^.]{0,80}feed-forward",
            ),
        ),
        Answer(
            "by-hand-3-4-pre-norm-formula",
            "the pre-norm layer's output of exercise 3.4",
            BY_HAND,
            "by-hand-3-4",
            (r"self_attn\(\s*norm1\(", r"\bnorm1\(\s*x\s*\)"),
        ),
    ]
