"""No graded answer is on view, on load, anywhere in the book outside its own task.

The answers and where they belong are listed once, in ``book_answers.py``. Each page of the table
of contents is read as a reader's browser shows it on load (the ``visit`` fixture's one load:
innerText, so text inside a closed dropdown does not count; the alt text of every image on view
counts as text). An answer found anywhere but inside its own task's section fails the test, with
the page and the words around it.

The first tests check the matcher itself, without a browser: a planted answer — the book's own
reference code, an old leak — is found; the same text in the task's own section, or not on view,
is not.
"""

from __future__ import annotations

import inspect
import re

import pytest

from book_answers import (
    BY_HAND,
    HOMEWORK,
    WEEK_20,
    Answer,
    PageText,
    answers,
    by_hand_glue,
    find_leaks,
    parse_marked,
)
from book_pages import toc_pages
from book_site import page_html

ANSWERS = answers()
BY_NAME = {answer.name: answer for answer in ANSWERS}
PAGES = [page_html(page) for page in toc_pages()]


def body(function) -> str:
    """A function's source without its signature and docstring: what a leak would show."""
    source = inspect.getsource(function)
    return re.sub(r'^.*?""".*?"""', "", source, count=1, flags=re.DOTALL)


# --- the matcher, without a browser -----------------------------------------------------------


def planted() -> dict[str, list[str]]:
    """For each answer, texts that show it: reference code, old leaks, its printed output."""
    from transformer_lab_instructor import references as _reference

    from transformer_lab.attention import attention
    from transformer_lab.char_transformer import PraiseClassifier
    from transformer_lab.metrics import accuracy
    from transformer_lab.pooling import masked_mean
    from transformer_lab.tokenizer import (
        embedding_parameters,
        tokens_per_word,
        train_bpe_tokenizer,
    )

    glued = by_hand_glue()
    return {
        "homework-1-accuracy": [
            body(accuracy),
            "return ((logits > 0).float() == labels).float().mean()",  # homework demo
            "correct = ((logits > 0.5).float() == labels)",  # chapter 3's old bug cell
        ],
        "homework-2-masked-mean": [body(masked_mean), "keep = (~padding).unsqueeze(-1)"],
        "homework-3-attention": [
            body(attention),
            # chapter 1's old cell on masking after the softmax
            "scores = x @ x.transpose(-2, -1) / math.sqrt(x.shape[-1])\n"
            "after = torch.softmax(scores, dim=-1).masked_fill(padding[:, None, :], 0.0)",
        ],
        "homework-7-embedding-parameters": [
            body(embedding_parameters) + " # vocab_size × d",
            "so `vocab_size × d` parameters",
            "production (50,000)  6,400,000  25,600,000  38,400,000",
        ],
        "homework-8-train-bpe-tokenizer": [
            body(train_bpe_tokenizer),
            'a BPE model with unk_token="[UNK]", the Whitespace pre-tokenizer',
        ],
        "homework-9-tokens-per-word": [
            body(tokens_per_word),
            '"pieces": {w: " · ".join(tiny.encode(w).tokens) for w in words},',
        ],
        "homework-10-unseen-sentence": [
            _tokens(),
        ],
        "homework-11-causal-padding-mask": [body(_reference.causal_padding_mask)],
        "homework-12-multi-head-attention": [body(_reference.multi_head_attention)],
        "week-20-1-no-positions": [body(PraiseClassifier.forward)],
        "week-20-2-toy-weights": [
            "_, weights = attention(x @ w_q, x @ w_k, x @ w_v)",  # chapter 1's old listing
            "q = embeddings @ w_q\nscores = q @ k.T / math.sqrt(4)",
        ],
        "week-20-2-toy-table": [_toy_table_text()],
        "week-20-4-sinusoidal-positions": [
            # the book's former reference, now only in the instructor's edition
            "frequency = base ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)\n"
            "table[:, 0::2] = torch.sin(position * frequency)",
        ],
        "by-hand-1-1-embedding": [f"holds {glued['bh_1_1_emb_large']} parameters"],
        "by-hand-2-1-attention": [f"the weights are {glued['bh_2_1_weights']}"],
        "by-hand-3-1-pre-norm-blocks": [
            "| 1 | `norm1` (norm) | ... |\n| 2 | `self_attn` | ...\n| 3 | `dropout1`"
        ],
        "by-hand-3-3-encoder-layer": [
            "total parameters: 3,152,384",
            "has 3152384 parameters",
            f"about {glued['bh_3_3_total_m']} M parameters",
            f"{glued['bh_3_3_ff_share']} of them in the feed-forward block",
        ],
        "by-hand-3-4-pre-norm-formula": [
            "h = x + dropout1(self_attn(norm1(x))),   out = h + dropout2(linear2(…norm2(h)…))"
        ],
    }


def _tokens() -> str:
    from book_answers import unseen_sentence_tokens

    return str(unseen_sentence_tokens())


def _toy_table_text() -> str:
    from book_answers import WEEK_20_TOY_SEED, WEEK_20_TOY_TOKENS, toy_table_rows

    rows = toy_table_rows(WEEK_20_TOY_TOKENS, WEEK_20_TOY_SEED)
    return "\n".join(
        f"{token}  " + "  ".join(row) for token, row in zip(WEEK_20_TOY_TOKENS, rows)
    )


def test_every_answer_has_a_planted_example():
    assert set(planted()) == set(BY_NAME), (
        "each answer needs planted text its matcher must find"
    )


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_a_planted_answer_is_found_on_an_earlier_page(name):
    answer = BY_NAME[name]
    for text in planted()[name]:
        page = PageText(f"Some chapter prose.\n{text}\nMore prose.")
        leaks = find_leaks(answer, {"chapters/01-soft-join.html": page})
        assert [leak.page for leak in leaks] == ["chapters/01-soft-join.html"], (
            f"{name}: the planted text was not recognised:\n{text}"
        )


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_answer_inside_its_own_task_is_allowed_but_not_before_or_after(name):
    answer = BY_NAME[name]
    text = planted()[name][0]
    task = "Task statement, hints, worked answer.\n"

    def page_with(before: str, inside: str, after: str) -> PageText:
        start = len(before)
        end = start + len(task) + len(inside)
        return PageText(before + task + inside + after, {answer.anchor: (start, end)})

    assert (
        find_leaks(answer, {answer.page: page_with("Intro.\n", text, "\nSummary.")}) == []
    )
    assert find_leaks(answer, {answer.page: page_with(f"Intro.\n{text}\n", "", "Summary.")})
    assert find_leaks(answer, {answer.page: page_with("Intro.\n", "", f"Summary: {text}")})
    # On another page the task's own section does not excuse anything.
    elsewhere = "chapters/02-encoder-layer.html"
    assert find_leaks(answer, {elsewhere: page_with("Intro.\n", text, "")})


def test_text_that_teaches_without_answering_is_not_a_leak():
    teaching = PageText(
        "A = softmax(QK^T / sqrt(d_k)), Z = AV; the mask sets padded scores to -inf before the "
        "softmax. _, unmasked_weights = attention(x, x, x)\nafter[:, :, padding[0]] = 0.0\n"
        "shapes = pd.DataFrame(...) self_attn.in_proj_weight (48, 16) 768\n"
        "print(pd.DataFrame(masked_weights[0].numpy(), columns=keys).round(3))\n"
        "with an unknown token: ['the', 'cat', 'caf', '[UNK]'] pieces: word_pieces(tiny, words)\n"
        "one encoder layer of the same width: d = 1,024 12,596,224\n"
        "x goes through self_attn (multi-head attention) and dropout1, then norm1 (LayerNorm)\n"
        "h = block.norm1(tokens + block.dropout1(attended))"
    )
    found = {
        answer.name: find_leaks(answer, {"chapters/01-soft-join.html": teaching})
        for answer in ANSWERS
    }
    assert not any(found.values()), {name: leaks for name, leaks in found.items() if leaks}


def test_marked_text_gives_each_section_its_span():
    marked = "intro ⟦S0⟧Exercise 1 body⟦S1⟧ nested ⟦E1⟧⟦E0⟧ summary"
    parsed = parse_marked(marked, {"ex-one": 0, "ex-nested": 1, "not-on-view": 7})
    assert parsed.text == "intro Exercise 1 body nested  summary"
    start, end = parsed.sections["ex-one"]
    assert parsed.text[start:end] == "Exercise 1 body nested "
    start, end = parsed.sections["ex-nested"]
    assert parsed.text[start:end] == " nested "
    assert "not-on-view" not in parsed.sections


def test_every_answer_belongs_to_a_page_of_the_book():
    assert {answer.page for answer in ANSWERS} == {HOMEWORK, WEEK_20, BY_HAND}
    assert {answer.page for answer in ANSWERS} <= set(PAGES)
    for answer in ANSWERS:
        assert set(answer.known_leaks) <= set(PAGES), answer.name
        assert isinstance(answer, Answer) and answer.patterns


# --- the built book ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def book_text(visit) -> dict[str, PageText]:
    texts = {}
    for relative in PAGES:
        probe = visit(relative).visible_sections
        texts[relative] = parse_marked(probe["text"], probe["ids"])
    return texts


@pytest.mark.browser
def test_every_task_section_is_found_on_its_page(book_text):
    missing = [
        f"{answer.name}: no section labelled {answer.anchor!r} on view in {answer.page}"
        for answer in ANSWERS
        if answer.anchor not in book_text[answer.page].sections
    ]
    assert not missing, "\n".join(missing)


@pytest.mark.browser
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_no_answer_is_visible_outside_its_task(book_text, name):
    answer = BY_NAME[name]
    leaks = find_leaks(answer, book_text)
    unexpected = [leak for leak in leaks if leak.page not in answer.known_leaks]
    assert not unexpected, (
        f"{answer.what} ({answer.page}#{answer.anchor}) is on view:\n"
        + "\n".join(f"  {leak.page}: …{leak.excerpt}…" for leak in unexpected)
    )
    fixed = sorted(set(answer.known_leaks) - {leak.page for leak in leaks})
    assert not fixed, (
        f"{name}: no longer on view in {fixed}: delete these from its known_leaks in "
        "tests/browser/book_answers.py"
    )
    if leaks:
        pytest.xfail(
            "known leaks, each with its owner: "
            + "; ".join(
                f"{page}: {answer.known_leaks[page]}" for page in sorted(answer.known_leaks)
            )
        )
