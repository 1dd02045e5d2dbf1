"""transformer_lab.homework_runs: what the homework starter runs on a student's functions.

The whole starter (its self-check, every example and Exercise 6's training) is exercised end to
end in tests/test_starters.py; these tests pin the pieces on small inputs, with the book's own
functions standing in for a student's.
"""

from __future__ import annotations

import types

import pytest

import transformer_lab.homework_runs as runs
from transformer_lab.metrics import accuracy
from transformer_lab.pooling import masked_mean


@pytest.fixture
def starter(monkeypatch):
    """A stand-in starter module: the book's accuracy and masked_mean, from this file."""
    module = types.ModuleType("starter")
    module.__file__ = __file__
    module.accuracy, module.masked_mean = accuracy, masked_mean
    monkeypatch.setattr(runs, "S", module)
    return module


def test_an_unfinished_exercise_is_not_done_yet_and_a_bug_is_one_line(starter, capsys):
    def unfinished():
        raise NotImplementedError("Exercise 2: write masked_mean")

    def buggy():
        raise ZeroDivisionError("division by zero")

    runs.try_exercise("Exercise 2", unfinished)
    runs.try_exercise("Exercise 3", buggy)
    out = capsys.readouterr().out
    assert "== Exercise 2\nnot done yet: Exercise 2: write masked_mean" in out
    assert "== Exercise 3\nraised ZeroDivisionError" in out
    assert "Traceback" not in out


def test_the_examples_print_what_the_prediction_boxes_ask_about(starter, capsys):
    runs.accuracy_example()
    runs.masked_mean_example()
    out = capsys.readouterr().out
    assert "accuracy() returns 0.6667 (float)" in out
    assert "masked_mean gives [[3.0, 6.0]]" in out


def test_a_masked_mean_that_counts_padding_shows_in_the_example(starter, capsys):
    starter.masked_mean = lambda x, padding: x.mean(dim=1)
    runs.masked_mean_example()
    assert "[[302.0, 304.0]]" in capsys.readouterr().out


def test_yes_no():
    assert (runs.yes_no(True), runs.yes_no(False)) == ("yes", "NO")


def test_exercise_10_prints_each_word_with_its_tokens_and_corpus_counts(starter, capsys):
    from transformer_lab import tokenizer as book

    starter.train_bpe_tokenizer = book.train_bpe_tokenizer
    starter.tokens_per_word = book.tokens_per_word
    starter.embedding_parameters = book.embedding_parameters
    runs.run_tokenizer()
    out = capsys.readouterr().out
    trained = book.train_bpe_tokenizer(list(book.TINY_CORPUS), 80)
    sentence = "the transformer decoder generates text".split()
    for word, count in book.tokens_per_word(trained, sentence).items():
        seen = book.word_occurrences(book.TINY_CORPUS, word)
        line = (
            f"{word!r}: {count} token(s); in the corpus {seen['as a word']}x as a word, "
            f"{seen['inside a word']}x inside a word"
        )
        assert line in out, line
    assert out.index("words -> ") < out.index("each word on its own:")
