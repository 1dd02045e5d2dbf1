"""Chapter 4's mirrored pairs: same characters, opposite labels, no repeat of a corpus comment."""

import numpy as np
import pytest
import torch

from transformer_lab.char_transformer import LENGTH, PraiseClassifier, encode_texts
from transformer_lab.cloudwave.templates import MIRRORED
from transformer_lab.mirrored_pairs import (
    N_PAIRS,
    candidate_pairs,
    mirrored_pairs,
    pair_outcomes,
)
from transformer_lab.protocol import correct
from transformer_lab.reproducibility import seed_everything


def test_both_sides_of_every_pair_hold_the_same_characters_and_fit_the_window():
    pairs = mirrored_pairs([], n_pairs=N_PAIRS)
    ids = encode_texts(pairs.texts).numpy()  # (2 P, L)
    bags = np.sort(ids, axis=1)
    assert (bags[0::2] == bags[1::2]).all()
    assert not (ids[0::2] == ids[1::2]).all(axis=1).any()  # the order differs
    assert max(len(text) for text in pairs.texts) <= LENGTH
    assert pairs.labels.tolist() == [1.0, 0.0] * N_PAIRS
    assert len({(a, b) for a, b in zip(pairs.texts[0::2], pairs.texts[1::2])}) == N_PAIRS


def test_a_pair_whose_window_is_in_the_corpus_is_never_drawn():
    praise, complaint, _ = candidate_pairs()[0]
    everything = len(candidate_pairs())
    corpus = [complaint.upper()]  # the same window once lower-cased
    drawn = mirrored_pairs(corpus, n_pairs=everything - 1)
    assert praise not in drawn.texts and complaint not in drawn.texts
    with pytest.raises(ValueError, match=f"only {everything - 1} mirrored pairs"):
        mirrored_pairs(corpus, n_pairs=everything)


def test_the_draw_takes_the_templates_in_turn_and_is_reproducible():
    pairs = mirrored_pairs([], n_pairs=len(MIRRORED))
    assert sorted(pairs.template.tolist()) == list(range(len(MIRRORED)))
    assert (
        mirrored_pairs([], n_pairs=50, seed=3).texts
        == mirrored_pairs([], n_pairs=50, seed=3).texts
    )
    assert (
        mirrored_pairs([], n_pairs=50, seed=3).texts
        != mirrored_pairs([], n_pairs=50, seed=4).texts
    )


def test_a_model_blind_to_order_reads_no_pair_and_net_is_twice_the_lift_over_half():
    pairs = mirrored_pairs([], n_pairs=60)
    ids = encode_texts(pairs.texts)
    for use_positions in (False, True):
        seed_everything(0)
        model = PraiseClassifier(use_positions).eval()
        with torch.no_grad():
            logits = model(ids)
        outcomes = pair_outcomes(logits, pairs)
        accuracy = correct(logits, pairs.labels).mean().item()
        assert outcomes.net == pytest.approx(2 * (accuracy - 0.5), abs=1e-6)
        if not use_positions:
            assert outcomes.read.sum() == outcomes.reversed.sum() == 0


def test_pair_outcomes_by_hand():
    pairs = mirrored_pairs([], n_pairs=3)
    # pair 1 read right, pair 2 backwards, pair 3 one side right
    logits = torch.tensor([2.0, -1.0, -2.0, 1.0, 1.0, 1.0])
    outcomes = pair_outcomes(logits, pairs)
    assert outcomes.read.tolist() == [1.0, 0.0, 0.0]
    assert outcomes.reversed.tolist() == [0.0, 1.0, 0.0]
    assert outcomes.net == 0.0


def test_template_nets_average_within_each_template_and_balanced_net_over_them():
    from transformer_lab.mirrored_pairs import balanced_net, template_nets

    pairs = mirrored_pairs([], n_pairs=N_PAIRS)
    big = int(np.bincount(pairs.template).argmax())
    per_pair = torch.zeros(len(pairs))
    per_pair[torch.as_tensor(pairs.template == big)] = (
        1.0  # one template read, the rest not
    )
    nets = template_nets(per_pair, pairs)
    assert set(nets) == set(np.unique(pairs.template).tolist())
    assert nets[big] == 1.0 and sum(nets.values()) == 1.0
    assert balanced_net(per_pair, pairs) == pytest.approx(1 / len(nets))
    # weighted by pair the one big template counts for its share of the pairs
    assert per_pair.mean().item() == pytest.approx(np.mean(pairs.template == big))
    with pytest.raises(ValueError, match="one value per pair"):
        template_nets(per_pair[:-1], pairs)
