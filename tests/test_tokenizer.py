"""transformer_lab.tokenizer: BPE training, tokens per word, byte-level BPE, embedding sizes."""

import os

import pandas as pd
import pytest
import torch
from tokenizers import Tokenizer

from transformer_lab.tokenizer import (
    CHARACTER_CLASSES,
    FREQUENCY_BINS,
    SPECIAL_TOKENS,
    TINY_CORPUS,
    alphabet,
    character_classes,
    count_word_tokens,
    embedding_parameters,
    merges,
    minimum_vocab_size,
    pair_frequencies,
    pre_tokenize,
    tokens_per_word,
    tokens_per_word_by_frequency,
    tokens_per_word_by_vocab,
    train_bpe_tokenizer,
    train_byte_level_bpe_tokenizer,
    vocabulary_sweep,
    word_frequencies,
    word_occurrences,
    word_pieces,
)

WORDS = ["cat", "dog", "attention", "tokenizer", "self-attention", "encodings"]


def encode_and_count(tokenizer, texts):
    """The slow, obvious count the package's per-word shortcut must match: encode every text."""
    encodings = tokenizer.encode_batch(list(texts), add_special_tokens=False)
    return {
        "tokens": sum(len(encoding.ids) for encoding in encodings),
        "unknown": sum(encoding.tokens.count("[UNK]") for encoding in encodings),
    }


def words_in(texts):
    return sum(len(pre_tokenize(text)) for text in texts)


@pytest.fixture(scope="module")
def tiny():
    return train_bpe_tokenizer(TINY_CORPUS, 80)


def test_vocabulary_is_specials_then_alphabet_then_merges(tiny):
    vocab = tiny.get_vocab()
    assert tiny.get_vocab_size() == 80
    assert [vocab[token] for token in SPECIAL_TOKENS] == [0, 1]
    letters = alphabet(TINY_CORPUS)
    assert sorted(vocab[c] for c in letters) == list(range(2, 2 + len(letters)))
    learned = merges(tiny)
    assert len(learned) == 80 - len(letters) - len(SPECIAL_TOKENS)
    # every merge is the concatenation of two tokens already in the vocabulary, and adds one token
    for left, right in learned:
        assert left in vocab and right in vocab and left + right in vocab


def test_first_merge_is_the_most_frequent_adjacent_pair():
    pairs = pair_frequencies(TINY_CORPUS)
    best = max(pairs.values())
    first = merges(train_bpe_tokenizer(TINY_CORPUS, minimum_vocab_size(TINY_CORPUS) + 1))
    assert len(first) == 1 and pairs[first[0]] == best


def test_minimum_vocabulary_learns_no_merge_and_spells_characters():
    size = minimum_vocab_size(TINY_CORPUS)
    tokenizer = train_bpe_tokenizer(TINY_CORPUS, size)
    assert tokenizer.get_vocab_size() == size and merges(tokenizer) == []
    assert tokenizer.encode("cat dog").tokens == ["c", "a", "t", "d", "o", "g"]


def test_training_is_deterministic(tiny):
    again = train_bpe_tokenizer(list(TINY_CORPUS), 80)
    assert again.to_str() == tiny.to_str()


def test_unseen_sentence_pieces_rebuild_the_words(tiny):
    sentence = "the transformer decoder generates text"
    encoding = tiny.encode(sentence)
    assert "".join(encoding.tokens) == sentence.replace(" ", "")
    assert encoding.ids == [tiny.token_to_id(token) for token in encoding.tokens]
    assert len(encoding.tokens) > len(sentence.split())


def test_unseen_character_becomes_unknown(tiny):
    assert tiny.encode("café").tokens[-1] == "[UNK]"


def test_without_unk_token_unseen_characters_are_silently_dropped(tiny):
    no_unk = train_bpe_tokenizer(TINY_CORPUS, 80, unk_token=None)
    assert no_unk.get_vocab() == tiny.get_vocab() and merges(no_unk) == merges(tiny)
    text = "the café 🙂"
    with_unk, without = tiny.encode(text), no_unk.encode(text)
    assert with_unk.tokens.count("[UNK]") == 2 and "[UNK]" not in without.tokens
    # the same tokens once the two [UNK] placeholders are removed: é and 🙂 just vanish
    assert [t for t in with_unk.tokens if t != "[UNK]"] == without.tokens
    assert len(without.tokens) == len(with_unk.tokens) - 2
    # seen characters encode identically
    assert no_unk.encode("the cat").ids == tiny.encode("the cat").ids
    with pytest.raises(
        ValueError, match=r"unk_token must be '\[UNK\]' or None, got '<unk>'"
    ):
        train_bpe_tokenizer(TINY_CORPUS, 80, unk_token="<unk>")


def test_tokens_per_word_counts_each_word_alone(tiny):
    counts = tokens_per_word(tiny, WORDS)
    assert list(counts) == WORDS
    assert counts == {word: len(tiny.encode(word).tokens) for word in WORDS}
    # the hyphen is split off by the pre-tokenizer, so "self-attention" is at least 3 tokens
    assert counts["self-attention"] >= 3
    assert counts["attention"] == 1 and counts["cat"] == 1


def test_tokens_per_word_matches_the_characters_before_any_merge():
    plain = train_bpe_tokenizer(TINY_CORPUS, minimum_vocab_size(TINY_CORPUS))
    assert tokens_per_word(plain, WORDS) == {word: len(word) for word in WORDS}


def test_tokens_per_word_by_vocab_never_increases():
    sizes = range(minimum_vocab_size(TINY_CORPUS), 200, 10)
    table = tokens_per_word_by_vocab(TINY_CORPUS, WORDS, sizes)
    reached = sorted(table)
    for word in WORDS:
        counts = [table[size][word] for size in reached]
        assert counts == sorted(counts, reverse=True), word
    # past the last possible merge every word of the corpus is whole (self-attention: self - attention)
    assert table[reached[-1]] == {
        word: 3 if word == "self-attention" else 1 for word in WORDS
    }


def test_word_counting_helpers():
    corpus = ["the cat, the dog.", "self-attention and attention"]
    assert pre_tokenize("self-attention, again") == ["self", "-", "attention", ",", "again"]
    assert (
        word_frequencies(corpus)["the"] == 2 and word_frequencies(corpus)["attention"] == 2
    )
    assert word_occurrences(corpus, "cat") == {"as a word": 1, "inside a word": 1}
    assert word_occurrences(corpus, "attention") == {"as a word": 1, "inside a word": 2}
    assert pair_frequencies(["abab ab", "ba"]) == {("a", "b"): 3, ("b", "a"): 2}
    assert alphabet(["ab", "b c"]) == ["a", "b", "c"]
    assert alphabet(["a\u00a0b\tc\u2003d"]) == [
        "a",
        "b",
        "c",
        "d",
    ]  # no-break and em spaces dropped
    assert minimum_vocab_size(["ab", "b c"]) == 3 + len(SPECIAL_TOKENS)


def test_character_classes():
    classes = character_classes(
        ["a", "B", "é", "ß", "7", "-", "$", "—", "’", "👍", "\u00a0"]
    )
    assert list(classes) == list(CHARACTER_CLASSES)
    assert classes["lowercase letters"] == ["a", "é", "ß"] and classes[
        "capital letters"
    ] == ["B"]
    assert classes["digits"] == ["7"] and classes["ASCII punctuation"] == ["-", "$"]
    assert classes["other punctuation"] == ["—", "’"] and classes["symbols"] == ["👍"]
    assert classes["other"] == ["\u00a0"] and classes["other letters"] == []
    letters = character_classes(alphabet(TINY_CORPUS))
    assert len(letters["lowercase letters"]) == 25 and letters["ASCII punctuation"] == ["-"]
    with pytest.raises(TypeError, match="characters must be a list of strings .*not a str"):
        character_classes("abc")
    with pytest.raises(ValueError, match="length 1, got 'ab'"):
        character_classes(["ab"])


def test_tokens_per_word_by_frequency_bins_the_words():
    tokenizer = train_bpe_tokenizer(
        TINY_CORPUS, minimum_vocab_size(TINY_CORPUS)
    )  # characters only
    words = {"a": 1, "ab": 3, "abc": 4, "cab": 25, "x": 7}
    rows = pd.DataFrame(tokens_per_word_by_frequency(tokenizer, words)).set_index(
        "frequency"
    )
    assert list(rows.index) == ["1", "2–4", "5–19", "20–99", "100+"]
    assert list(rows["words"]) == [1, 2, 1, 1, 0] and list(rows["occurrences"]) == [
        1,
        7,
        7,
        25,
        0,
    ]
    assert (
        rows.loc["2–4", "tokens_per_word"] == 2.5 and rows.loc["2–4", "characters"] == 2.5
    )
    assert rows.loc["1", "one_token"] == 1.0 and rows.loc["2–4", "one_token"] == 0.0
    assert rows.loc["2–4", "examples"] == "ab, abc" and rows.loc["100+", "examples"] == ""
    one = tokens_per_word_by_frequency(tokenizer, words, examples=1)
    assert [row["examples"] for row in one] == ["a", "ab", "x", "cab", ""]
    with pytest.raises(ValueError, match="examples must be an int of at least 0, got -1"):
        tokens_per_word_by_frequency(tokenizer, words, examples=-1)
    assert rows.loc["100+"].isna()[["characters", "tokens_per_word", "one_token"]].all()
    # a frequent word becomes whole once the merges reach it
    whole = train_bpe_tokenizer(["cab " * 30, "ab ab a"], 100)
    binned = tokens_per_word_by_frequency(
        whole, {"cab": 30, "zzz": 1}, bins=[(1, 1), (2, None)]
    )
    assert [row["tokens_per_word"] for row in binned] == [
        3.0,
        1.0,
    ]  # zzz: unseen, 3 x [UNK]
    assert FREQUENCY_BINS[-1] == (100, None)


@pytest.mark.parametrize(
    "bins",
    [
        [],
        [(0, 1)],
        [(1, 4), (3, 9)],
        [(5, 2)],
        [(1, None), (5, 9)],
        [(1, 2.5)],
        "1-4",
        [(1,)],
    ],
)
def test_tokens_per_word_by_frequency_rejects_bad_bins(tiny, bins):
    with pytest.raises(ValueError, match="bins"):
        tokens_per_word_by_frequency(tiny, {"cat": 2}, bins=bins)


def test_tokens_per_word_by_frequency_needs_counts(tiny):
    with pytest.raises(TypeError, match=r"map each word to its count .*got list"):
        tokens_per_word_by_frequency(tiny, ["cat", "dog"])
    with pytest.raises(TypeError, match="tokenizers.Tokenizer, got dict"):
        tokens_per_word_by_frequency({}, {"cat": 2})


def test_byte_level_round_trips_any_text():
    tokenizer = train_byte_level_bpe_tokenizer(TINY_CORPUS, 300)
    assert tokenizer.get_vocab_size() == 300 and len(merges(tokenizer)) == 300 - 256 - 1
    text = "the cat café  serves tea 🙂"
    encoding = tokenizer.encode(text)
    assert "[PAD]" not in encoding.tokens and tokenizer.token_to_id("[UNK]") is None
    assert tokenizer.decode(encoding.ids) == text
    assert "Ġcat" in encoding.tokens  # the space travels with the next word
    emoji = train_byte_level_bpe_tokenizer(TINY_CORPUS, 257).encode("🙂")
    assert len(emoji.tokens) == len("🙂".encode()) == 4


def test_vocabulary_sweep_rows():
    train, held_out = list(TINY_CORPUS[:8]), list(TINY_CORPUS[8:]) + ["the café"]
    rows = pd.DataFrame(vocabulary_sweep(train, pd.Series(held_out), [40, 80, 1000]))
    assert list(rows["requested"]) == [40, 80, 1000]
    assert rows["vocab_size"].iloc[1] == 80 and rows["vocab_size"].iloc[2] < 1000
    assert rows["train"].is_monotonic_decreasing and rows["train"].iloc[-1] == 1.0
    assert (rows["held_out"] > rows["train"]).all()
    assert (rows["unknown_share"] > 0).all()  # the é was never seen in training
    # the per-word shortcut gives exactly what encoding the whole texts gives
    tokenizer = train_bpe_tokenizer(train, 80)
    seen, unseen = encode_and_count(tokenizer, train), encode_and_count(tokenizer, held_out)
    assert rows["held_out"].iloc[1] == pytest.approx(unseen["tokens"] / words_in(held_out))
    assert rows["train"].iloc[1] == pytest.approx(seen["tokens"] / words_in(train))
    assert rows["unknown_share"].iloc[1] == pytest.approx(
        unseen["unknown"] / unseen["tokens"]
    )


def test_count_word_tokens_matches_encoding_the_texts(tiny):
    texts = list(TINY_CORPUS) + ["the café, the dog!!", "tokenizers:encodings"]
    assert count_word_tokens(tiny, word_frequencies(texts)) == encode_and_count(tiny, texts)
    whole = train_bpe_tokenizer(TINY_CORPUS, 1000)  # every word of the corpus is one token
    assert count_word_tokens(whole, word_frequencies(TINY_CORPUS))["tokens"] == words_in(
        TINY_CORPUS
    )


def test_word_pieces_are_the_tokens_each_word_is_cut_into(tiny):
    words = ["cat", "tokenizer", "self-attention"]
    pieces = word_pieces(tiny, words)
    assert list(pieces) == words
    assert {word: len(tokens) for word, tokens in pieces.items()} == tokens_per_word(
        tiny, words
    )
    assert "".join(pieces["tokenizer"]) == "tokenizer"
    assert "-" in pieces["self-attention"]  # cut at the hyphen before any merge
    with pytest.raises(ValueError, match="without spaces"):
        word_pieces(tiny, ["two words"])
    with pytest.raises(TypeError, match="tokenizers.Tokenizer"):
        word_pieces("not a tokenizer", words)


def test_embedding_parameters_equals_nn_embedding():
    for vocab_size, d in [(80, 128), (50_000, 768), (1, 1)]:
        assert (
            embedding_parameters(vocab_size, d)
            == torch.nn.Embedding(vocab_size, d).weight.numel()
        )


@pytest.mark.parametrize(
    "corpus, error, message",
    [
        ([], ValueError, "empty"),
        ("the cat sat", TypeError, "list of strings"),
        (["the cat", 3], TypeError, r"corpus\[1\] must be a str, got int"),
        (["the cat", None], TypeError, r"corpus\[1\] must be a str, got NoneType"),
        (["", "   "], ValueError, "only empty or whitespace"),
    ],
)
def test_bad_corpus_is_refused(corpus, error, message):
    with pytest.raises(error, match=message):
        train_bpe_tokenizer(corpus, 80)


def test_vocabulary_smaller_than_alphabet_plus_specials_raises():
    size = minimum_vocab_size(TINY_CORPUS)
    letters = len(alphabet(TINY_CORPUS))
    with pytest.raises(
        ValueError, match=rf"at least {size} \({letters} distinct characters.*2 special"
    ):
        train_bpe_tokenizer(TINY_CORPUS, size - 1)
    with pytest.raises(ValueError, match=r"at least 257 \(256 byte symbols"):
        train_byte_level_bpe_tokenizer(TINY_CORPUS, 256)
    with pytest.raises(TypeError, match="vocab_size must be an int, got float"):
        train_bpe_tokenizer(TINY_CORPUS, 80.0)


def test_bad_arguments_to_the_measuring_functions(tiny):
    with pytest.raises(TypeError, match="tokenizers.Tokenizer, got str"):
        tokens_per_word("tokenizer", WORDS)
    with pytest.raises(TypeError, match="words must be a list of strings .*not a str"):
        tokens_per_word(tiny, "cat")
    for word in ["", "two words"]:
        with pytest.raises(ValueError, match="non-empty str without spaces"):
            tokens_per_word(tiny, [word])
    with pytest.raises(TypeError, match=r"words\[0\] must be a str, got int 5"):
        tokens_per_word(tiny, [5])
    with pytest.raises(ValueError, match="vocab_size must be an int of at least 1, got 0"):
        embedding_parameters(0, 128)
    with pytest.raises(TypeError, match="d must be an int, got float"):
        embedding_parameters(80, 128.0)
    with pytest.raises(TypeError, match="map each word to its count"):
        count_word_tokens(tiny, ["cat", "dog"])
    with pytest.raises(
        ValueError, match=r"words\['cat'\] must be an int of at least 0, got -2"
    ):
        count_word_tokens(tiny, {"cat": -2})
    with pytest.raises(TypeError, match=r"words\['cat'\] must be an int, got str '3'"):
        tokens_per_word_by_frequency(tiny, {"cat": "3"})


def test_importing_the_module_pins_tokenizers_to_one_thread():
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"


def test_save_and_load_give_identical_encodings(tiny, tmp_path):
    path = tmp_path / "tokenizer.json"
    tiny.save(str(path))
    loaded = Tokenizer.from_file(str(path))
    sentence = "the transformer decoder generates text"
    assert loaded.encode(sentence).ids == tiny.encode(sentence).ids
    assert merges(loaded) == merges(tiny)
