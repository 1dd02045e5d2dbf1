"""transformer_lab.selfcheck.checks.tokenizer: the tokenizer probes, the unknown-character evidence, and
a probe word that repeats a token."""

import pytest

from selfcheck.mutants import bpe
from selfcheck.solutions import SOLUTION
from transformer_lab.selfcheck import PASSED, check_train_bpe_tokenizer
from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tokenizer import (
    COUNT_MISTAKES,
    PUBLIC_INPUTS,
    SMALL_TRAININGS,
    TRAINING_MISTAKES,
    UNSEEN_POOL,
    WORDS,
    _reachable,
    _smallest_encoding_note,
    check_tokens_per_word,
    drawn_inputs,
    tokenizer_inputs,
)
from transformer_lab.tokenizer import TINY_CORPUS, tokens_per_word, train_bpe_tokenizer

OTHER_CORPUS, OTHER_SIZE = PUBLIC_INPUTS.other_corpus, PUBLIC_INPUTS.sizes[0]
TOKENIZER_SIZES, UNSEEN_SENTENCE = PUBLIC_INPUTS.sizes, PUBLIC_INPUTS.unseen_sentence


@pytest.mark.parametrize("size", [40, 80])
def test_a_probe_word_repeats_a_token(size):
    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), size)
    assert any(
        len(set(tokenizer.encode(w).tokens)) < len(tokenizer.encode(w).tokens)
        for w in WORDS
    )


def test_every_count_mistake_gives_other_counts_on_the_larger_tokenizer():
    tokenizer = train_bpe_tokenizer(list(TINY_CORPUS), 80)
    right = tokens_per_word(tokenizer, WORDS)
    answers = [(m.message, m.variant(tokenizer, list(WORDS))) for m in COUNT_MISTAKES]
    for i, (message, answer) in enumerate(answers):
        assert answer != right, message
        assert all(answer != other for _, other in answers[i + 1 :]), message


def test_every_training_mistake_shows_on_one_of_the_probes():
    assert (
        train_bpe_tokenizer(list(OTHER_CORPUS), OTHER_SIZE).get_vocab_size() < OTHER_SIZE
    )  # runs out of pairs
    probes = [(list(TINY_CORPUS), size) for size in TOKENIZER_SIZES] + [
        (list(OTHER_CORPUS), OTHER_SIZE)
    ]
    for mistake in TRAINING_MISTAKES:
        assert any(
            mistake.variant(corpus, size).get_vocab()
            != train_bpe_tokenizer(corpus, size).get_vocab()
            for corpus, size in probes
        ), mistake.code


def test_a_model_without_unk_token_shows_the_vanished_characters():
    # The trainer learns the same vocabulary with or without unk_token; only encoding unseen
    # characters tells them apart: the reference writes [UNK], the other drops é and the emoji.
    result = check_train_bpe_tokenizer(
        lambda corpus, vocab_size: bpe(corpus, vocab_size, unk_token=None)
    )
    assert result.code == "missing_unk_token"
    assert (
        "'f', '[UNK]', 's'" in result.finding.expected
        and result.finding.expected.endswith("'[UNK]']")
    )
    assert "'f', 's'" in result.finding.received and "[UNK]" not in result.finding.received
    assert 'models.BPE(unk_token="[UNK]")' in result.finding.advice


def test_an_unforeseen_vocabulary_shows_the_smallest_training_that_goes_wrong():
    # max_token_length is in no mistake table: the message says where it first goes wrong
    result = check_train_bpe_tokenizer(
        lambda corpus, vocab_size: bpe(corpus, vocab_size, max_token_length=2)
    )
    assert result.code == "vocabulary_differs"
    assert (
        "smallest input where it goes wrong: corpus ['ab abc'], vocab_size=7: expected "
        "tokens ['[UNK]', '[PAD]', 'a', 'b', 'c', 'ab', 'abc'], received tokens "
        "['[UNK]', '[PAD]', 'a', 'b', 'c', 'ab']" in result.finding.mistake
    )


def test_smallest_trainings_run_from_the_smallest_and_end_on_a_probe():
    assert SMALL_TRAININGS[-1] == (OTHER_CORPUS, OTHER_SIZE)
    sizes = [sum(map(len, corpus)) for corpus, _ in SMALL_TRAININGS]
    assert sizes == sorted(sizes)
    for corpus, size in SMALL_TRAININGS:  # each one merges something
        assert train_bpe_tokenizer(list(corpus), size).get_vocab_size() > 2 + len(
            set("".join(corpus).replace(" ", ""))
        )


def test_an_unforeseen_encoding_shows_the_shortest_word_that_goes_wrong():
    reference = train_bpe_tokenizer(list(TINY_CORPUS), 80)

    class Reversed:  # a tokenizer that gives a word's tokens in reverse order
        def encode(self, text):
            encoding = reference.encode(text)
            return type("Encoding", (), {"tokens": encoding.tokens[::-1]})()

    # 'the' is one token, so the shortest word that goes wrong is 'text'
    assert _smallest_encoding_note(Reversed(), reference, UNSEEN_SENTENCE) == (
        " (smallest input where it goes wrong: 'text': expected ['te', 'x', 't'], "
        "received ['t', 'x', 'te'])"
    )


# -- hidden checks: inputs drawn afresh ------------------------------------------------------


def hidden_inputs():
    with answers.using(answers.HIDDEN):
        return tokenizer_inputs()


def test_hidden_inputs_keep_what_the_checks_rely_on():
    """Over many seeds (at 1bb8d3d about 1 draw in 25 had no capital in its second corpus)."""
    most = _reachable(TINY_CORPUS)
    # drawn_inputs' bound on what its second corpus can reach: 2 special tokens, 52 letters,
    # 60 merges; the first size is drawn between the two.
    assert 2 + 52 + 60 < most
    for seed in range(300):
        drawn = drawn_inputs(seed)
        first, second = drawn.sizes
        assert second < first <= most and first == drawn.sizes[0]
        assert _reachable(drawn.other_corpus) < first  # runs out of pairs before it
        assert any(c.isupper() for c in "".join(drawn.other_corpus)), seed
        assert any(c in UNSEEN_POOL for c in drawn.unseen_characters)
        assert not set(UNSEEN_POOL) & set("".join(TINY_CORPUS))
        small, large = drawn.count_sizes
        assert small < large <= most and len(set(drawn.words)) == len(drawn.words) == 7
        assert len(set(drawn.words) & set(" ".join(TINY_CORPUS).split())) == 4


def test_a_hidden_draw_is_its_seeds():
    assert drawn_inputs(12345) == drawn_inputs(12345) != drawn_inputs(2)


def test_two_hidden_draws_differ_from_each_other_and_from_the_public_inputs():
    first, second = hidden_inputs(), hidden_inputs()
    assert first != second and tokenizer_inputs() not in (first, second)


def solution(name: str):
    namespace: dict = {}
    exec(compile(SOLUTION, "solution.py", "exec"), namespace)
    return namespace[name]


def test_the_solution_passes_the_hidden_tokenizer_checks():
    with answers.using(answers.HIDDEN):
        assert check_train_bpe_tokenizer(solution("train_bpe_tokenizer")).status == PASSED
        assert check_tokens_per_word(solution("tokens_per_word")).status == PASSED


def test_hard_coded_public_counts_pass_only_the_public_check():
    """Counts looked up from the public inputs (by vocabulary size and word) pass the public
    check and fail the hidden one, whose words and sizes are new."""
    table = {
        (train_bpe_tokenizer(list(TINY_CORPUS), size).get_vocab_size(), word): count
        for size in (40, 80)
        for word, count in tokens_per_word(
            train_bpe_tokenizer(list(TINY_CORPUS), size), list(WORDS)
        ).items()
    }

    def looked_up(tokenizer, words):
        return {w: table.get((tokenizer.get_vocab_size(), w), 1) for w in words}

    assert check_tokens_per_word(looked_up).status == PASSED
    with answers.using(answers.HIDDEN):
        assert check_tokens_per_word(looked_up).status != PASSED
