"""transformer_lab.selfcheck.checks.embedding: the probes give every mistake its own number."""

from transformer_lab.selfcheck.checks.embedding import MISTAKES, PROBES


def test_every_mistake_gives_another_number_on_every_probe():
    for vocab_size, d in PROBES:
        values = [m.variant(vocab_size, d) for m in MISTAKES] + [vocab_size * d]
        assert len(set(values)) == len(values), (vocab_size, d, values)
