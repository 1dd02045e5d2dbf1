"""Exercises 6 and 8: ``train_bpe_tokenizer(corpus, vocab_size)`` and ``tokens_per_word(tokenizer, words)``.

The reference module is imported inside the checks: it loads the Rust ``tokenizers`` library,
which a self-check of the attention exercise alone does not need.
"""

from __future__ import annotations

import functools
import numbers
import operator
import random
from dataclasses import dataclass

from transformer_lab.selfcheck.checks import answers
from transformer_lab.selfcheck.checks.tensors import Evidence, checker, smallest_input_note
from transformer_lab.selfcheck.core import Mistake, article, fail, fail_if_none
from transformer_lab.selfcheck.execution import StudentFunction, type_name
from transformer_lab.selfcheck.transport import bounded_repr

ADVICE = 'build tokenizer = Tokenizer(models.BPE(unk_token="[UNK]")), train it, and `return tokenizer`'


def _ref():
    from transformer_lab import tokenizer

    return tokenizer


@dataclass(frozen=True)
class TokenizerInputs:
    """What the two tokenizer checks train on and encode: two ``sizes`` on ``TINY_CORPUS`` (the
    first more than ``other_corpus``, which has capitals, can reach), text to encode after
    training (``unseen_characters`` holds characters the corpus never contained), and the
    ``words`` to count with tokenizers of the two ``count_sizes`` (the smaller first)."""

    sizes: tuple[int, int]
    other_corpus: tuple[str, ...]
    unseen_sentence: str
    unseen_characters: str
    words: tuple[str, ...]
    count_sizes: tuple[int, int]


# "banana" repeats a token under both probe tokenizers (b, an, an, a), so counting distinct
# tokens gives another number; "cat", "dog" and "attention" are whole tokens of the larger one.
WORDS = ("cat", "dog", "attention", "tokenizer", "self-attention", "encodings", "banana")
PUBLIC_INPUTS = TokenizerInputs(
    # Both reachable on the tiny corpus, so the size must follow the argument; the first is
    # more than the other corpus can reach: every pair seen there, even once, is merged.
    sizes=(80, 40),
    # Capitals (which TINY_CORPUS lacks) show a corpus lower-cased before training.
    other_corpus=(
        "Zebras quietly jump over lazy foxes",
        "quiet zebras jump",
        "Lazy foxes never jump",
    ),
    unseen_sentence="the transformer decoder generates text",
    # 'é' and the emoji never occur in TINY_CORPUS: the reference encodes each of them as [UNK].
    unseen_characters="the cat café serves tea 🙂",
    words=WORDS,
    count_sizes=(40, 80),
)
# The smallest trainings first, for a "differs" message that names the smallest corpus and
# vocab_size on which the learned vocabulary goes wrong (a student can redo it by hand).
SMALL_TRAININGS = (
    (("ab ab",), 5),
    (("ab abc",), 7),
    (("the cat", "The hat"), 10),
    (("low lower lowest", "new newer"), 16),
    (PUBLIC_INPUTS.other_corpus, PUBLIC_INPUTS.sizes[0]),
)


# Characters TINY_CORPUS never contains (a fresh unseen-characters text takes two of them).
UNSEEN_POOL = "éüñßø€🙂🚀"
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _reachable(corpus) -> int:
    """The largest vocabulary the reference reaches on ``corpus`` (every pair merged)."""
    return _ref().train_bpe_tokenizer(list(corpus), 100_000).get_vocab_size()


def _fresh_word(draw: random.Random, letters, shortest: int, longest: int, taken=()) -> str:
    """A made-up word not in ``taken``: a word that happens to exist grows by a letter until it
    is longer than every taken word, so this ends without redrawing."""
    word = "".join(draw.choice(letters) for _ in range(draw.randint(shortest, longest)))
    while word in taken:
        word += draw.choice(letters)
    return word


def tokenizer_inputs() -> TokenizerInputs:
    """The public inputs; or (hidden checks) :func:`drawn_inputs` from a seed drawn afresh."""
    if answers.mode() != answers.HIDDEN:
        return PUBLIC_INPUTS
    return drawn_inputs(answers.fresh_seed(0))


def drawn_inputs(seed: int) -> TokenizerInputs:
    """Inputs drawn from ``seed`` with the properties the checks rely on, each one by
    construction (no draw is rejected and redrawn):

    - the second corpus has a capital: one of its words, chosen by the draw, is capitalised (and
      each other one with chance 0.3);
    - it runs out of pairs before the first size: its 3 lines of 2-4 words of 3-6 letters reach
      at most 2 special tokens + 52 letters + 60 merges (each merge shortens a word, and 12
      words of 6 letters can be shortened 60 times) = 114 tokens, and the first size is drawn
      above what it reaches; TINY_CORPUS reaches more (``_reachable``, 183 today), which
      ``test_tokenizer.py`` checks;
    - the two sizes and the two counting sizes are reachable on TINY_CORPUS, in order;
    - the unseen sentence mixes the corpus's words and made-up ones; the unseen characters hold
      two characters TINY_CORPUS never contains;
    - seven distinct words to count: four of the corpus, three made up and new."""
    draw = random.Random(seed)
    ref = _ref()
    corpus = list(ref.TINY_CORPUS)
    known = sorted({word for line in corpus for word in line.split()})
    letters = [c for c in ref.alphabet(corpus) if c in LETTERS]
    most, fewest = _reachable(corpus), ref.minimum_vocab_size(corpus)
    counts = [draw.randint(2, 4) for _ in range(3)]
    capital = draw.randrange(sum(counts))
    made_up = [
        word.capitalize() if n == capital or draw.random() < 0.3 else word
        for n, word in enumerate(
            _fresh_word(draw, LETTERS, 3, 6) for _ in range(sum(counts))
        )
    ]
    starts = [sum(counts[:n]) for n in range(3)]
    other = tuple(" ".join(made_up[a : a + n]) for a, n in zip(starts, counts))
    other_most = _reachable(other)
    first = draw.randint(max(other_most + 1, fewest + 10), most)
    second = draw.randint(fewest + 3, first - 5)
    small = draw.randint(fewest + 3, (fewest + most) // 2)
    large = draw.randint(small + 15, most)
    sentence = [draw.choice(known) for _ in range(3)]
    sentence += [_fresh_word(draw, letters, 3, 8) for _ in range(2)]
    draw.shuffle(sentence)
    strange = draw.sample(UNSEEN_POOL, 2)
    characters = [draw.choice(known), _fresh_word(draw, letters, 2, 4) + strange[0]]
    characters += [draw.choice(known), strange[1]]
    words = draw.sample(known, 4)
    for _ in range(3):
        words.append(_fresh_word(draw, letters, 3, 9, words))
    return TokenizerInputs(
        sizes=(first, second),
        other_corpus=other,
        unseen_sentence=" ".join(sentence),
        unseen_characters=" ".join(characters),
        words=tuple(words),
        count_sizes=(small, large),
    )


# --- Exercise 8: training -----------------------------------------------------------------


def _train(student: StudentFunction, corpus, vocab_size: int):
    """The student's tokenizer trained on ``corpus``; fails unless it is a Tokenizer."""
    from tokenizers import Tokenizer, trainers

    result = student.call(list(corpus), vocab_size, quiet=True).result
    if isinstance(result, Tokenizer):
        return result
    expected = "a trained tokenizers.Tokenizer"
    no_return = "the returned value is None: the function has no `return`"
    fail_if_none(result, expected, ADVICE, no_return)
    category = getattr(result, "category", "")  # an Opaque stand-in from a worker
    code, what = "not_a_tokenizer", "is not a tokenizers.Tokenizer"
    if isinstance(result, trainers.Trainer) or category == "trainer":
        code, what = "returned_trainer", "is the trainer, not the tokenizer"
    fail(code, f"the returned value {what}", expected, type_name(result), ADVICE)


def _pieces(pre_tokenizer, text: str) -> list[str]:
    return [piece for piece, _ in pre_tokenizer.pre_tokenize_str(text)]


def _vocab_difference(student, reference) -> tuple[str, str]:
    expected, received = set(reference.get_vocab()), set(student.get_vocab())
    missing, extra = sorted(expected - received)[:6], sorted(received - expected)[:6]
    if not missing and not extra:  # the same tokens, learned in another order
        want, got = _tokens_by_id(reference), _tokens_by_id(student)
        first = next(i for i, (a, b) in enumerate(zip(want, got)) if a != b)
        return (
            f"{len(expected)} tokens; ids {first}-{first + 3}: {want[first : first + 4]}",
            f"the same tokens in another order; ids {first}-{first + 3}: "
            f"{got[first : first + 4]}",
        )
    including = f", including {missing}" if missing else ""
    return (
        f"{len(expected)} tokens{including}",
        f"{len(received)} tokens"
        + (f", including {extra}" if extra else "")
        + (f", without {missing}" if missing else ""),
    )


def _check_structure(student, reference, inputs: TokenizerInputs) -> None:
    """Special tokens, pre-tokenizer and normalizer, compared with the reference tokenizer."""
    ref = _ref()
    missing = [token for token in ref.SPECIAL_TOKENS if student.token_to_id(token) is None]
    if missing:
        fail(
            "missing_special_tokens",
            f"the special token(s) {', '.join(missing)} are not in the vocabulary",
            ", ".join(f"{t} (id {reference.token_to_id(t)})" for t in ref.SPECIAL_TOKENS),
            f"{', '.join(missing)} missing",
            f"BpeTrainer(vocab_size=vocab_size, special_tokens={list(ref.SPECIAL_TOKENS)})",
        )
    ids = {token: student.token_to_id(token) for token in ref.SPECIAL_TOKENS}
    expected_ids = {token: reference.token_to_id(token) for token in ref.SPECIAL_TOKENS}
    if ids != expected_ids:
        fail(
            "special_token_ids",
            "the special tokens have other ids (list them in this order so they come first)",
            ", ".join(f"{t}={i}" for t, i in expected_ids.items()),
            ", ".join(f"{t}={i}" for t, i in ids.items()),
            f"special_tokens={list(ref.SPECIAL_TOKENS)}",
        )
    # Bert's pre-tokenizer (each punctuation mark its own piece) also cuts at whitespace and
    # punctuation, as the exercise asks, and gives the same pieces here and on every probe.
    example = "self-attention, again"
    expected_pieces = _pieces(reference.pre_tokenizer, example)
    if student.pre_tokenizer is None:
        spanning = sorted(token for token in student.get_vocab() if " " in token)[:4]
        fail(
            "missing_pre_tokenizer",
            "there is no pre-tokenizer, so BPE merges across spaces",
            f"Whitespace pre-tokenizer: {example!r} -> {expected_pieces}",
            f"no pre-tokenizer: tokens with spaces in them, such as {spanning}",
            "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace() before training",
        )
    received_pieces = _pieces(student.pre_tokenizer, example)
    if received_pieces != expected_pieces:
        fail(
            "wrong_pre_tokenizer",
            f"the pre-tokenizer is {type(student.pre_tokenizer).__name__}, not Whitespace",
            f"Whitespace: {example!r} -> {expected_pieces}",
            f"{type(student.pre_tokenizer).__name__}: {example!r} -> "
            + bounded_repr(received_pieces, 120),
            "tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()",
        )
    last_word = inputs.unseen_sentence.split()[-1]
    if student.post_processor is not None:
        fail(
            "extra_post_processor",
            f"the tokenizer has a post-processor ({type(student.post_processor).__name__}): it "
            "adds tokens to every encoding that the text does not contain",
            f"{last_word!r} -> {reference.encode(last_word).tokens}",
            f"-> {student.encode(last_word).tokens}",
            "remove the post_processor line (and any TemplateProcessing)",
        )
    if student.normalizer is not None:
        fail(
            "extra_normalizer",
            f"the tokenizer has a normalizer ({type(student.normalizer).__name__}); the exercise "
            "asks for none, so text is split exactly as written",
            "tokenizer.normalizer is None",
            f"tokenizer.normalizer = {type(student.normalizer).__name__}(...)",
            "remove the normalizer line",
        )


# Marks of word pieces that plain BPE does not make: (option, which tokens it marks, message,
# expected).
WORD_MARKS = [
    (
        "continuing_subword_prefix",
        str.startswith,
        "the tokens that continue a word are marked with {mark} (continuing_subword_prefix, "
        "WordPiece's convention): each character then has two tokens, with and without "
        "the mark, and the vocabulary fills up with them",
        "no continuing_subword_prefix: 'attention' -> ['attention'], pieces unmarked",
    ),
    (
        "end_of_word_suffix",
        str.endswith,
        "the last piece of every word is marked with {mark} (end_of_word_suffix, as in "
        "the original BPE paper): a word's ending gets tokens of its own",
        "no end_of_word_suffix: pieces unmarked",
    ),
]


def _check_model_options(student) -> None:
    """Options of models.BPE (or of the trainer, which sets them on the model) that the
    exercise's plain BPE does not have: word-piece marks and BPE dropout."""
    model = student.model
    for option, marked, message, expected in WORD_MARKS:
        mark = getattr(model, option, None)
        if mark:
            tokens = sorted(t for t in student.get_vocab() if marked(t, mark))[:4]
            fail(
                option,
                message.format(mark=bounded_repr(mark, 40)),
                expected,
                f"{option}={bounded_repr(mark, 40)}: tokens such as {bounded_repr(tokens, 120)}",
                f"remove {option} from BPE(...) and BpeTrainer(...)",
            )
    dropout = getattr(model, "dropout", None)
    if dropout:
        fail(
            "bpe_dropout",
            f"the BPE model has dropout={dropout:g}: it skips merges at random, so the same "
            "word is encoded differently from one call to the next",
            'models.BPE(unk_token="[UNK]") with no dropout: one encoding per text',
            f"models.BPE(..., dropout={dropout:g})",
            "remove dropout=...: BPE dropout is a training-time augmentation, not a tokenizer",
        )


def _tokens_by_id(tokenizer) -> list[str]:
    vocab = tokenizer.get_vocab()
    return sorted(vocab, key=vocab.get)


def _smallest_training_note(student: StudentFunction) -> str:
    """:func:`smallest_input_note` over ``SMALL_TRAININGS``: the first corpus and vocab_size on
    which the student's vocabulary differs from the reference's."""
    from tokenizers import Tokenizer

    return smallest_input_note(
        student,
        _ref().train_bpe_tokenizer,
        [(list(corpus), size) for corpus, size in SMALL_TRAININGS],
        lambda got, want: (
            isinstance(got, Tokenizer) and got.get_vocab() == want.get_vocab()
        ),
        lambda corpus, size: f"corpus {corpus}, vocab_size={size}",
        lambda tokenizer: (
            f"tokens {_tokens_by_id(tokenizer)}"
            if isinstance(tokenizer, Tokenizer)
            else bounded_repr(tokenizer, 80)
        ),
        quiet=True,
    )


def _smallest_encoding_note(student, reference, sentence: str) -> str:
    """' (smallest input where it goes wrong: 'text': expected [...], received [...])' for the
    shortest word of ``sentence`` (then the sentence) that the two tokenizers encode apart."""
    words = sorted(set(sentence.split()), key=lambda w: (len(w), w))
    for text in [*words, sentence]:
        expected, received = reference.encode(text).tokens, student.encode(text).tokens
        if expected != received:
            return (
                f" (smallest input where it goes wrong: {text!r}: expected {expected}, "
                f"received {bounded_repr(received, 200)})"
            )
    return ""


def _check_unknown_characters(student, reference, text: str) -> None:
    """Characters the corpus never contained (in ``text``) must become [UNK], not vanish from
    the encoding."""
    ref = _ref()
    expected = reference.encode(text).tokens
    received = student.encode(text).tokens
    strange = ", ".join(c for c in dict.fromkeys(text) if c in UNSEEN_POOL)
    if received == expected:
        return
    advice = f'Tokenizer(models.BPE(unk_token="{ref.UNKNOWN_TOKEN}")): the model needs to know its unknown token'
    unk_token = getattr(student.model, "unk_token", None)
    shown = Evidence(f"{text!r} -> {expected}", f"-> {received}")
    if received == [token for token in expected if token != ref.UNKNOWN_TOKEN]:
        shown.fail(
            "missing_unk_token",
            f"the BPE model has no unk_token: characters the corpus never contained "
            f"({strange}) vanish from the encoding instead of becoming {ref.UNKNOWN_TOKEN}",
            advice,
        )
    if unk_token is not None and unk_token != ref.UNKNOWN_TOKEN:
        shown.fail(
            "wrong_unk_token",
            f"the BPE model's unk_token is {bounded_repr(unk_token, 40)}, not "
            f"{ref.UNKNOWN_TOKEN!r}",
            advice,
        )


def _trained_with(corpus, vocab_size: int, extra_size: int = 0, **options):
    """A variant: the reference recipe trained on the same corpus, with ``extra_size`` added to
    the trainer's vocab_size and the trainer's ``options``."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    ref = _ref()
    tokenizer = Tokenizer(models.BPE(unk_token=ref.UNKNOWN_TOKEN))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size + extra_size,
        special_tokens=list(ref.SPECIAL_TOKENS),
        show_progress=False,
        **options,
    )
    tokenizer.train_from_iterator(list(corpus), trainer)
    return tokenizer


TRAINING_MISTAKES: list[Mistake] = [
    Mistake(
        "min_frequency",
        "the trainer skipped pairs seen only once (min_frequency), so fewer merges were learned",
        "BpeTrainer(vocab_size=vocab_size, special_tokens=[...]) with no min_frequency",
        functools.partial(_trained_with, min_frequency=2),
    ),
    Mistake(
        "subtracted_special_tokens",
        "the trainer was given vocab_size - 2: its vocab_size already "
        "includes the special tokens",
        "BpeTrainer(vocab_size=vocab_size, ...)",
        functools.partial(_trained_with, extra_size=-2),
    ),
    Mistake(
        "added_special_tokens",
        "the trainer was given vocab_size + 2: its vocab_size already includes the special "
        "tokens, they do not come on top",
        "BpeTrainer(vocab_size=vocab_size, ...)",
        functools.partial(_trained_with, extra_size=2),
    ),
    Mistake(
        "lowercased_corpus",
        "the corpus was lower-cased before training, so capitals never reach the "
        "vocabulary (the exercise asks for text split exactly as written)",
        "train on the corpus as given: no .lower(), no normalizer",
        lambda corpus, size: _ref().train_bpe_tokenizer([t.lower() for t in corpus], size),
    ),
    Mistake(
        "deduplicated_corpus",
        "the trainer saw each distinct word once (a set of words), so BPE lost the word "
        "frequencies that decide which pair is merged first",
        "train on the texts themselves: tokenizer.train_from_iterator(corpus, trainer)",
        lambda corpus, size: _ref().train_bpe_tokenizer(
            sorted(set(" ".join(corpus).split())), size
        ),
    ),
]


def _same_vocabulary(student, variant) -> bool:
    return student.get_vocab() == variant.get_vocab()


def _differs_by(trained, reference, corpus, size: int, shown: Evidence) -> None:
    """``trained`` differs from ``reference``: fail with the option that explains it, if one does."""
    mistakes = [
        m
        for m in TRAINING_MISTAKES
        if not _same_vocabulary(reference, m.variant(corpus, size))
    ]
    shown.diagnose(trained, mistakes, (corpus, size), _same_vocabulary)


@checker("Exercise 8", "train_bpe_tokenizer(corpus, vocab_size)")
def check_train_bpe_tokenizer(student_function: StudentFunction) -> None:
    """Check ``train_bpe_tokenizer(corpus, vocab_size)`` against the package's version."""
    ref = _ref()
    inputs = tokenizer_inputs()
    corpus = list(ref.TINY_CORPUS)
    sizes = {
        size: (
            _train(student_function, corpus, size),
            ref.train_bpe_tokenizer(corpus, size),
        )
        for size in inputs.sizes
    }
    student, reference = sizes[inputs.sizes[0]]
    model = type(student.model).__name__
    if model != "BPE":
        fail(
            "wrong_model",
            f"the model is {model}, not BPE",
            'Tokenizer(models.BPE(unk_token="[UNK]"))',
            f"Tokenizer(models.{model}(...))",
            "byte-pair encoding is models.BPE, trained with trainers.BpeTrainer",
        )
    if student.get_vocab_size() <= len(ref.SPECIAL_TOKENS):
        fail(
            "untrained",
            "the tokenizer was never trained (its vocabulary is empty)",
            f"{reference.get_vocab_size()} tokens after training",
            f"{student.get_vocab_size()} tokens",
            "tokenizer.train_from_iterator(corpus, trainer)",
        )
    _check_model_options(student)
    got = {size: pair[0].get_vocab_size() for size, pair in sizes.items()}
    want = {size: pair[1].get_vocab_size() for size, pair in sizes.items()}
    shown = Evidence(
        *(
            ", ".join(f"vocab_size={s} -> {n} tokens" for s, n in c.items())
            for c in (want, got)
        )
    )
    if set(got.values()) == {ref.minimum_vocab_size(corpus)}:
        shown.fail(
            "no_merges",
            "no merge was learned: the vocabulary is only the single characters (was the trainer "
            "given one string, so that it saw one character at a time?)",
            "tokenizer.train_from_iterator(corpus, trainer) with the list of texts itself",
        )
    if got != want:
        for size, (trained, reference_at_size) in sizes.items():
            if got[size] != want[size]:
                _differs_by(trained, reference_at_size, corpus, size, shown)
        same = len(set(got.values())) == 1
        shown.fail(
            "ignores_vocab_size" if same else "vocab_size_differs",
            "the vocabulary size does not follow the vocab_size argument"
            if same
            else "the vocabulary size differs from what vocab_size asks for"
            + _smallest_training_note(student_function),
            "pass the argument on: BpeTrainer(vocab_size=vocab_size, ...)",
        )
    _check_structure(student, reference, inputs)
    # A small corpus runs out of pairs before sizes[0]: the vocabulary stops short of it.
    other_corpus, other_size = list(inputs.other_corpus), inputs.sizes[0]
    other = _train(student_function, other_corpus, other_size)
    other_reference = ref.train_bpe_tokenizer(other_corpus, other_size)
    if not _same_vocabulary(other, other_reference):
        shown = Evidence(*_vocab_difference(other, other_reference))
        if _same_vocabulary(other, sizes[other_size][0]):
            shown.fail(
                "ignores_corpus",
                "the tokenizer learned the same vocabulary from a different corpus: it does "
                "not train on the corpus argument (a global corpus?)",
                "tokenizer.train_from_iterator(corpus, trainer) with the function's own corpus argument",
            )
        _differs_by(other, other_reference, other_corpus, other_size, shown)
    for size, (trained, reference_at_size) in [
        *sizes.items(),
        (other_size, (other, other_reference)),
    ]:
        if _same_vocabulary(trained, reference_at_size):
            continue
        shown = Evidence(*_vocab_difference(trained, reference_at_size))
        alphabet = {t for t in reference_at_size.get_vocab() if len(t) == 1}
        missing = sorted(alphabet - set(trained.get_vocab()))
        if missing:
            shown.fail(
                "missing_characters",
                f"characters of the corpus are missing from the vocabulary "
                f"({', '.join(map(repr, missing[:6]))}): was the alphabet limited (limit_alphabet)?",
                "BpeTrainer(vocab_size=vocab_size, special_tokens=[...]) keeps every "
                "character it sees; no limit_alphabet",
            )
        shown.fail(
            "vocabulary_differs",
            f"with vocab_size={size} the learned vocabulary differs from the reference"
            + _smallest_training_note(student_function),
            'BPE(unk_token="[UNK]") model, Whitespace pre-tokenizer, BpeTrainer with vocab_size and '
            "the two special tokens; no other options",
        )
    _check_unknown_characters(student, reference, inputs.unseen_characters)
    sentence = inputs.unseen_sentence
    tokens = student.encode(sentence).tokens
    expected_tokens = reference.encode(sentence).tokens
    if tokens != expected_tokens:
        fail(
            "encoding_differs",
            "the vocabulary matches but encoding gives other tokens"
            + _smallest_encoding_note(student, reference, sentence),
            f"{sentence!r} -> {expected_tokens}",
            f"-> {tokens}",
            "do not add a normalizer, post-processor or dropout",
        )


# --- Exercise 9: tokens per word ----------------------------------------------------------


def _counts(function):
    return lambda tokenizer, words: {w: function(tokenizer, w) for w in words}


COUNT_MISTAKES: list[Mistake] = [
    Mistake(
        "counted_characters",
        "characters were counted instead of tokens (len(word))",
        "encode the word and count its tokens: len(tokenizer.encode(word).tokens)",
        _counts(lambda t, w: len(w)),
    ),
    Mistake(
        "counted_words",
        "every word got 1: words were counted, not the tokens BPE splits them into",
        "len(tokenizer.encode(word).tokens) for each word on its own",
        _counts(lambda t, w: 1),
    ),
    Mistake(
        "counted_pieces",
        "the pre-tokenizer's pieces were counted, not the BPE tokens",
        "len(tokenizer.encode(word).tokens)",
        _counts(lambda t, w: len(_ref().pre_tokenize(w))),
    ),
    Mistake(
        "counted_distinct_tokens",
        "distinct tokens were counted (a set), so a token that occurs twice in a "
        "word counted once",
        "count every token: len(tokenizer.encode(word).tokens), without set(...)",
        _counts(lambda t, w: len(set(t.encode(w).tokens))),
    ),
    Mistake(
        "counted_whole_list",
        "every word got the token count of the whole list encoded at once",
        "encode each word on its own inside the loop",
        lambda t, words: {w: len(t.encode(" ".join(words)).ids) for w in words},
    ),
    Mistake(
        "stored_token_id",
        "a token id was stored instead of the number of tokens",
        "len(tokenizer.encode(word).ids): the length, not an id",
        _counts(lambda t, w: t.encode(w).ids[0]),
    ),
    Mistake(
        "guessed_from_vocabulary",
        "the counts were guessed from the vocabulary (1 for a word in it, else one "
        "token per character) instead of encoding the word",
        "encode each word: BPE merges inside words that are not in the vocabulary too",
        _counts(lambda t, w: 1 if w in t.get_vocab() else len(w)),
    ),
    Mistake(
        "guessed_from_vocabulary",
        "the counts were guessed from the vocabulary (1 for a word in it, else 2) "
        "instead of encoding the word",
        "encode each word and count its tokens",
        _counts(lambda t, w: 1 if w in t.get_vocab() else 2),
    ),
]


def _check_values(result: dict, expected: dict, tokenizer) -> None:
    """The values must be whole numbers; name what they are instead."""
    bad = {
        w: v
        for w, v in result.items()
        if isinstance(v, bool) or not isinstance(v, numbers.Integral)
    }
    if not bad:
        return
    word, value = next(iter(bad.items()))
    shown = Evidence(f"{word!r}: {expected[word]}", f"{word!r}: {bounded_repr(value, 100)}")
    listed = isinstance(value, (list, tuple))
    if listed and all(isinstance(t, str) for t in value):
        shown.fail(
            "stored_tokens",
            "the tokens themselves (a list) were stored instead of their number",
            "store len(tokenizer.encode(word).tokens)",
        )
    if listed and all(isinstance(t, numbers.Integral) for t in value):
        shown.fail(
            "stored_token_ids",
            "the token ids (a list) were stored instead of their number",
            "store len(tokenizer.encode(word).ids)",
        )
    if value is None and all(v == tokenizer.token_to_id(w) for w, v in result.items()):
        shown.fail(
            "used_token_to_id",
            "the value stored is tokenizer.token_to_id(word): an id (None for a word that is "
            "not one token), not a count",
            "len(tokenizer.encode(word).tokens)",
        )
    shown.fail(
        "values_not_counts",
        f"the values are not whole numbers (e.g. {word!r}: {type_name(value)})",
        "store an int: the number of tokens",
    )


def _check_once(student: StudentFunction, tokenizer, words) -> None:
    expected = _ref().tokens_per_word(tokenizer, words)
    returned = student.call(tokenizer, list(words))
    given, result = returned.args[1], returned.result
    if given != list(words):
        fail(
            "changed_input",
            "the function changed the list of words it was given",
            list(words),
            given,
            "build a new dict; do not modify `words`",
        )
    fail_if_none(result, expected, "return the dict")
    if isinstance(result, (list, tuple)):
        same = list(result) == list(expected.values())
        fail(
            "returned_list",
            "a list came back instead of a dict {word: number of tokens}"
            + (" (the numbers are right)" if same else ""),
            expected,
            list(result),
            "return {word: count for ...}, a dict keyed by the words",
        )
    if not isinstance(result, dict):
        kind = type_name(result)
        fail(
            "not_a_dict",
            f"{article(kind)} came back instead of a dict",
            expected,
            bounded_repr(result, 120),
            "return {word: count for ...}",
        )
    if set(result) != set(words):
        fail(
            "wrong_keys",
            "the dict's keys are not the words that were passed in",
            sorted(expected),
            sorted(map(str, result))[:10],
            "use each word itself as the key",
        )
    _check_values(result, expected, tokenizer)
    result = {w: int(v) for w, v in result.items()}
    if result == expected:
        return
    shown = Evidence(expected, result)
    shown.diagnose(result, COUNT_MISTAKES, (tokenizer, list(words)), operator.eq)
    wrong = [word for word in words if result[word] != expected[word]]
    shortest = min(wrong, key=lambda word: (len(word), word))
    shown.fail(
        "counts_differ",
        "some counts differ from encoding each word on its own (the shortest word that goes "
        f"wrong: {shortest!r}, expected {expected[shortest]}, received {result[shortest]}; "
        f"{len(wrong)} of {len(words)} words wrong)",
        "len(tokenizer.encode(word).tokens) for each word, with the tokenizer passed in",
    )


@checker("Exercise 9", "tokens_per_word(tokenizer, words)")
def check_tokens_per_word(student: StudentFunction) -> None:
    """Check ``tokens_per_word(tokenizer, words) -> {word: count}`` with two reference tokenizers."""
    ref = _ref()
    inputs = tokenizer_inputs()
    words = inputs.words
    corpus = list(ref.TINY_CORPUS)
    small, large = (ref.train_bpe_tokenizer(corpus, s) for s in inputs.count_sizes)
    _check_once(student, large, words)
    expected_small = ref.tokens_per_word(small, list(words))
    result = student.call(small, list(words)).result
    if (
        isinstance(result, dict)
        and result == ref.tokens_per_word(large, list(words)) != expected_small
    ):
        fail(
            "ignores_tokenizer",
            "the counts do not change with the tokenizer passed in (a global tokenizer?)",
            f"with a vocabulary of {inputs.count_sizes[0]}: {expected_small}",
            result,
            "use the function's `tokenizer` argument",
        )
    _check_once(student, small, words)
