"""Byte-pair-encoding (BPE) tokenizers trained with Hugging Face ``tokenizers``, and their cost.

Two flavours are trained here:

- ``train_bpe_tokenizer``: **character-level** BPE. A ``Whitespace`` pre-tokenizer first cuts the
  text into words and punctuation runs (whitespace is dropped); BPE then starts from the Unicode
  characters it saw and merges the most frequent adjacent pair inside those words, again and again.
  A character never seen in training becomes ``[UNK]``.
- ``train_byte_level_bpe_tokenizer``: **byte-level** BPE (GPT-2 style). A ``ByteLevel``
  pre-tokenizer turns the UTF-8 bytes of the text into 256 printable stand-in characters (a space
  becomes ``Ġ``) and keeps the space inside the next word. BPE starts from all 256 bytes, so any
  text can be encoded without ``[UNK]``, and decoding gives the text back exactly.

A *word* in this module is one piece produced by the ``Whitespace`` pre-tokenizer (a run of letters
and digits, or a run of punctuation), because that is the unit BPE merges within.
"""

import json
import math
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

# One tokenizer thread (TOKENIZERS_PARALLELISM=false) is part of the canonical numeric mode that
# ``reproducibility`` sets when the package is imported, before this module runs.
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from transformer_lab.validation import is_int, require_counts, require_int, require_texts  # noqa: E402

# A corpus small enough to read in one glance: with a vocabulary of 80 the merges stay visible.
# Pets are frequent, transformer vocabulary is mixed, some words appear exactly once.
TINY_CORPUS = (
    "the cat sat on the mat and the dog slept by the door",
    "a cat and a dog can share one sofa",
    "my cat ignores the dog all day",
    "attention lets every token look at every other token",
    "self-attention compares each word with the whole sentence",
    "the tokenizer cuts raw text into subword tokens",
    "attention weights come from queries and keys",
    "position encodings tell the model where each token sits",
    "the encoder reads the whole input at once",
    "byte pair encoding merges the most frequent pair of symbols",
)
# Chapter 5's corpus: the homework's plus one line of release notes. Its alphabet, and so its
# merge count at any vocabulary size, differs from TINY_CORPUS's, which Exercise 8 asks for.
CHAPTER_CORPUS = TINY_CORPUS + ("version 2.1 ships in q3, plus 12 new symbols!",)

SPECIAL_TOKENS = ("[UNK]", "[PAD]")
WHITESPACE = pre_tokenizers.Whitespace()
UNKNOWN_TOKEN = SPECIAL_TOKENS[0]
BYTE_LEVEL_SPECIAL_TOKENS = ("[PAD]",)
BYTE_ALPHABET_SIZE = 256
# Word-frequency bins (lowest, highest count; None = no upper end) for tokens_per_word_by_frequency.
FREQUENCY_BINS = ((1, 1), (2, 4), (5, 19), (20, 99), (100, None))
CHARACTER_CLASSES = (
    "lowercase letters",
    "capital letters",
    "other letters",
    "digits",
    "ASCII punctuation",
    "other punctuation",
    "symbols",
    "other",
)


def check_corpus(corpus: Iterable[str], name: str = "corpus") -> list[str]:
    """Return ``corpus`` as a list after checking it is a non-empty collection of strings.

    Any iterable of texts works (list, tuple, pandas Series); a single string does not.
    """
    texts = require_texts(name, corpus)
    if not any(text.strip() for text in texts):
        raise ValueError(
            f"{name} holds only empty or whitespace texts: there is nothing to train on"
        )
    return texts


def check_vocab_size(vocab_size: int, minimum: int, why: str) -> None:
    """Raise unless ``vocab_size`` is an int of at least ``minimum`` (``why`` explains the bound)."""
    require_int("vocab_size", vocab_size)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size={vocab_size} is too small: it must be at least {minimum} ({why})"
        )


def pre_tokenize(text: str) -> list[str]:
    """Split ``text`` into the words BPE merges within, exactly as the ``Whitespace`` pre-tokenizer does.

    >>> pre_tokenize("self-attention, again")
    ['self', '-', 'attention', ',', 'again']
    """
    return [piece for piece, _ in WHITESPACE.pre_tokenize_str(text)]


def word_frequencies(corpus: Iterable[str]) -> Counter[str]:
    """Count every pre-tokenized word of ``corpus``: the counts the BPE trainer starts from."""
    texts = check_corpus(corpus)
    return Counter(word for text in texts for word in pre_tokenize(text))


def pair_frequencies(corpus: Iterable[str]) -> Counter[tuple[str, str]]:
    """Adjacent character pairs inside the words of ``corpus``, each counted once per occurrence.

    This is the table BPE's first merge is chosen from: the most common pair becomes a token.
    """
    pairs: Counter[tuple[str, str]] = Counter()
    for word, count in word_frequencies(corpus).items():
        for pair in zip(word, word[1:]):
            pairs[pair] += count
    return pairs


def word_occurrences(corpus: Iterable[str], word: str) -> dict[str, int]:
    """How often ``word`` occurs in ``corpus``, counting space-separated words (edge punctuation stripped).

    Returns ``{"as a word": n, "inside a word": m}``: ``n`` words equal ``word``, ``m >= n`` contain it
    (``"attention"`` is inside ``"self-attention"``).
    """
    texts = check_corpus(corpus)
    if not isinstance(word, str) or not word.strip():
        raise ValueError(f"word must be a non-empty str, got {word!r}")
    spaced = [token.strip(string.punctuation) for text in texts for token in text.split()]
    return {
        "as a word": sum(token == word for token in spaced),
        "inside a word": sum(word in token for token in spaced),
    }


def alphabet(corpus: Iterable[str]) -> list[str]:
    """The distinct characters character-level BPE starts from (whitespace excluded), sorted."""
    characters = set("".join(check_corpus(corpus)))
    # A lone character survives the pre-tokenizer unless it is whitespace (by the library's own rule).
    return sorted(c for c in characters if WHITESPACE.pre_tokenize_str(c))


def character_classes(characters: Iterable[str]) -> dict[str, list[str]]:
    """Sort single ``characters`` (e.g. an ``alphabet``) into the classes of ``CHARACTER_CLASSES``.

    Returns every class, in that order, each with its characters in input order (possibly none).
    ASCII punctuation is ``string.punctuation``; other punctuation and symbols (emoji among them)
    follow the Unicode categories ``P*`` and ``S*``.

    >>> character_classes(["a", "B", "7", "-", "’", "👍"])["other punctuation"]
    ['’']
    """
    characters = require_texts("characters", characters, allow_empty=True)
    classes: dict[str, list[str]] = {name: [] for name in CHARACTER_CLASSES}
    for character in characters:
        if len(character) != 1:
            raise ValueError(f"each character must be a str of length 1, got {character!r}")
        category = unicodedata.category(character)
        letter_classes = {"Ll": "lowercase letters", "Lu": "capital letters"}
        if character.isalpha():
            name = letter_classes.get(category, "other letters")
        elif character.isdigit():
            name = "digits"
        elif character in string.punctuation:
            name = "ASCII punctuation"
        elif category.startswith("P"):
            name = "other punctuation"
        elif category.startswith("S"):
            name = "symbols"
        else:
            name = "other"
        classes[name].append(character)
    return classes


def minimum_vocab_size(corpus: Iterable[str]) -> int:
    """Smallest vocabulary ``train_bpe_tokenizer`` accepts: the alphabet plus the special tokens."""
    return len(alphabet(corpus)) + len(SPECIAL_TOKENS)


def check_bpe_arguments(
    corpus: Iterable[str], vocab_size: int, unk_token: str | None = UNKNOWN_TOKEN
) -> list[str]:
    """The corpus as a list, after checking ``train_bpe_tokenizer``'s arguments.

    ``unk_token`` must be ``[UNK]`` or ``None``; ``vocab_size`` must hold the special tokens and
    every distinct character of the corpus (the vocabulary before the first merge).
    """
    if unk_token is not None and unk_token != UNKNOWN_TOKEN:
        raise ValueError(f"unk_token must be {UNKNOWN_TOKEN!r} or None, got {unk_token!r}")
    texts = check_corpus(corpus)
    characters = len(alphabet(texts))
    check_vocab_size(
        vocab_size,
        characters + len(SPECIAL_TOKENS),
        f"{characters} distinct characters in the corpus + {len(SPECIAL_TOKENS)} special tokens",
    )
    return texts


def train_bpe_tokenizer(
    corpus: Iterable[str], vocab_size: int, unk_token: str | None = UNKNOWN_TOKEN
) -> Tokenizer:
    """Train a character-level BPE tokenizer on ``corpus`` with at most ``vocab_size`` tokens.

    Model ``BPE(unk_token="[UNK]")``, ``Whitespace`` pre-tokenizer, ``BpeTrainer`` with the
    special tokens ``[UNK]`` (id 0) and ``[PAD]`` (id 1). The vocabulary is the special tokens, then
    the alphabet, then one new token per merge, so ``vocab_size`` must at least hold the first two.
    The result may be smaller than ``vocab_size`` when no pair is left to merge.

    ``unk_token=None`` builds ``BPE()`` with no unknown token (same vocabulary and merges): its
    ``encode`` then silently drops every character outside the alphabet. Only for showing that.
    """
    texts = check_bpe_arguments(corpus, vocab_size, unk_token)
    tokenizer = Tokenizer(models.BPE(unk_token=unk_token) if unk_token else models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def train_byte_level_bpe_tokenizer(corpus: Iterable[str], vocab_size: int) -> Tokenizer:
    """Train a byte-level BPE tokenizer (GPT-2 style) on ``corpus`` with at most ``vocab_size`` tokens.

    ``ByteLevel`` pre-tokenizer and decoder, all 256 byte symbols in the starting alphabet and one
    special token, ``[PAD]``. No ``[UNK]`` is needed: every string is a sequence of bytes. The
    vocabulary must at least hold the 256 bytes and the special token. No space is added before
    the first word (as in GPT-2), so ``decode(encode(text).ids) == text`` exactly.
    """
    texts = check_corpus(corpus)
    check_vocab_size(
        vocab_size,
        BYTE_ALPHABET_SIZE + len(BYTE_LEVEL_SPECIAL_TOKENS),
        f"{BYTE_ALPHABET_SIZE} byte symbols + {len(BYTE_LEVEL_SPECIAL_TOKENS)} special token",
    )
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(BYTE_LEVEL_SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    return tokenizer


def check_tokenizer(tokenizer: Tokenizer) -> None:
    """Raise ``TypeError`` unless ``tokenizer`` is a ``tokenizers.Tokenizer``."""
    if not isinstance(tokenizer, Tokenizer):
        raise TypeError(
            f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}"
        )


def merges(tokenizer: Tokenizer) -> list[tuple[str, str]]:
    """The learned merges of a BPE ``tokenizer``, in the order training made them."""
    check_tokenizer(tokenizer)
    model = json.loads(tokenizer.to_str())["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"tokenizer must use a BPE model, got {model.get('type')!r}")
    # Older releases store a merge as "a b", newer ones as ["a", "b"].
    return [
        tuple(pair.split(" ", 1)) if isinstance(pair, str) else tuple(pair)
        for pair in model["merges"]
    ]


def check_words(words: Iterable[str]) -> list[str]:
    """The words as a list; ``ValueError`` for an empty word or one that holds a space."""
    words = require_texts("words", words, allow_empty=True)
    for word in words:
        if not word.strip() or any(c.isspace() for c in word):
            raise ValueError(
                f"each word must be a non-empty str without spaces, got {word!r}"
            )
    return words


def tokens_per_word(tokenizer: Tokenizer, words: Iterable[str]) -> dict[str, int]:
    """Encode each word on its own and return ``{word: number of tokens}``, in input order."""
    check_tokenizer(tokenizer)
    counts = {}
    for word in check_words(words):
        counts[word] = len(tokenizer.encode(word, add_special_tokens=False).ids)
    return counts


def word_pieces(tokenizer: Tokenizer, words: Iterable[str]) -> dict[str, list[str]]:
    """Encode each word on its own and return ``{word: its tokens, as strings}``, in input order."""
    check_tokenizer(tokenizer)
    return {
        word: tokenizer.encode(word, add_special_tokens=False).tokens
        for word in check_words(words)
    }


def tokens_per_word_by_vocab(
    corpus: Iterable[str], words: Sequence[str], vocab_sizes: Iterable[int]
) -> dict[int, dict[str, int]]:
    """``{vocab size reached: tokens_per_word(...)}`` for a tokenizer trained at each of ``vocab_sizes``.

    Sizes beyond what training can reach (no pair left to merge) collapse onto the largest reached.
    """
    texts = check_corpus(corpus)
    table = {}
    for size in vocab_sizes:
        tokenizer = train_bpe_tokenizer(texts, size)
        table[tokenizer.get_vocab_size()] = tokens_per_word(tokenizer, words)
    return table


def frequency_bin_label(low: int, high: int | None) -> str:
    """The name of a frequency bin: ``"1"``, ``"2–4"`` or ``"100+"`` (``high=None``: no upper end)."""
    return f"{low}+" if high is None else str(low) if high == low else f"{low}–{high}"


def check_frequency_bins(bins: Sequence[tuple[int, int | None]]) -> None:
    """Raise unless ``bins`` are ascending, non-overlapping ``(low, high)`` pairs; ``high=None`` is open."""
    if isinstance(bins, str | bytes) or not isinstance(bins, Sequence) or not bins:
        raise ValueError(
            f"bins must be a non-empty list of (low, high) pairs, got {bins!r}"
        )
    previous_high = 0
    for position, pair in enumerate(bins):
        low, high = (
            pair if isinstance(pair, tuple | list) and len(pair) == 2 else (None, None)
        )
        last = position == len(bins) - 1
        if not (
            is_int(low)
            and low > previous_high
            and (high is None and last or is_int(high) and high >= low)
        ):
            raise ValueError(
                f"bins[{position}] must be (low, high) with low > {previous_high} and high >= low "
                f"(high=None only for the last bin), got {pair!r}"
            )
        previous_high = high if high is not None else low


def tokens_per_word_by_frequency(
    tokenizer: Tokenizer,
    words: Mapping[str, int],
    bins: Sequence[tuple[int, int | None]] = FREQUENCY_BINS,
    examples: int = 3,
) -> list[dict[str, float | int | str]]:
    """Tokens per word as a function of word frequency: one row per frequency bin.

    ``words`` maps each distinct word to its count in a corpus (see ``word_frequencies``); a word
    falls in the bin ``(low, high)`` with ``low <= count <= high`` (words in no bin are left out).
    Each row: ``frequency`` (bin label), ``words`` (distinct words), ``occurrences`` (their total
    count), ``characters`` (mean word length), ``tokens_per_word`` (mean tokens of a distinct word,
    each word encoded on its own), ``one_token`` (share of the words that are a single token) and
    ``examples`` (the bin's first ``examples`` words, in the order of ``words``, comma-separated).
    An empty bin gives 0 words and NaN means.
    """
    check_tokenizer(tokenizer)
    require_counts("words", words)
    check_frequency_bins(bins)
    require_int("examples", examples, minimum=0)
    distinct = list(words)
    encodings = tokenizer.encode_batch(distinct, add_special_tokens=False)
    lengths = {word: len(encoding.ids) for word, encoding in zip(distinct, encodings)}
    rows = []
    for low, high in bins:
        inside = [
            w for w in distinct if low <= words[w] and (high is None or words[w] <= high)
        ]
        n = len(inside)
        rows.append(
            {
                "frequency": frequency_bin_label(low, high),
                "words": n,
                "occurrences": sum(words[w] for w in inside),
                "characters": sum(len(w) for w in inside) / n if n else math.nan,
                "tokens_per_word": sum(lengths[w] for w in inside) / n if n else math.nan,
                "one_token": sum(lengths[w] == 1 for w in inside) / n if n else math.nan,
                "examples": ", ".join(inside[:examples]),
            }
        )
    return rows


def count_word_tokens(tokenizer: Tokenizer, words: Counter[str]) -> dict[str, int]:
    """Total tokens and ``[UNK]`` tokens of the texts behind ``words`` (from ``word_frequencies``).

    Returns ``{"tokens": ..., "unknown": ...}``. Encoding the whole texts gives the same counts for
    ``train_bpe_tokenizer`` tokenizers (with a ``Whitespace`` pre-tokenizer BPE encodes each word
    independently), but here each distinct word is encoded once and weighted by its count.
    """
    check_tokenizer(tokenizer)
    require_counts("words", words)
    distinct = list(words)
    encodings = tokenizer.encode_batch(distinct, add_special_tokens=False)
    return {
        "tokens": sum(words[word] * len(e.ids) for word, e in zip(distinct, encodings)),
        "unknown": sum(
            words[word] * e.tokens.count(UNKNOWN_TOKEN)
            for word, e in zip(distinct, encodings)
        ),
    }


def vocabulary_sweep(
    train_texts: Iterable[str], held_out_texts: Iterable[str], vocab_sizes: Sequence[int]
) -> list[dict[str, float]]:
    """Train one character-level BPE tokenizer per size; measure tokens per word on both text sets.

    Returns one row per requested size: ``requested``, ``vocab_size`` (what training reached),
    ``merges``, ``train`` and ``held_out`` average tokens per word, and ``unknown_share`` (the
    fraction of held-out tokens that are ``[UNK]``, i.e. characters training never saw).
    """
    train = check_corpus(train_texts, name="train_texts")
    seen_words = word_frequencies(train)
    unseen_words = word_frequencies(check_corpus(held_out_texts, name="held_out_texts"))
    rows = []
    for size in vocab_sizes:
        tokenizer = train_bpe_tokenizer(train, size)
        seen = count_word_tokens(tokenizer, seen_words)
        unseen = count_word_tokens(tokenizer, unseen_words)
        rows.append(
            {
                "requested": size,
                "vocab_size": tokenizer.get_vocab_size(),
                "merges": len(merges(tokenizer)),
                "train": seen["tokens"] / seen_words.total(),
                "held_out": unseen["tokens"] / unseen_words.total(),
                "unknown_share": unseen["unknown"] / unseen["tokens"],
            }
        )
    return rows


def embedding_parameters(vocab_size: int, d: int) -> int:
    """Trainable parameters of an embedding matrix of shape (vocab_size, d): ``vocab_size * d``."""
    require_int("vocab_size", vocab_size, minimum=1)
    require_int("d", d, minimum=1)
    return vocab_size * d
