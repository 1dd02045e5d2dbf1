"""Chapter 4's targeted test of word order: mirrored pairs that only order can decide.

The natural test split holds about a dozen comments that need order, too few to detect any
effect a small model could have there. This module builds, in memory and reproducibly, a set of
**mirrored pairs**: the two sides of each ``templates.MIRRORED`` pair (the same words in two
orders, one praise and one complaint) with the same feature, the same opener and the same
neutral closer, lower-cased as the model reads them. Both sides of a pair hold the same
characters, so a model without positions gives them the same logit and gets exactly one of the
two right; a model that reads order can get both.

- ``mirrored_pairs`` — every candidate pair whose text fits the window, minus every pair whose
  window equals the window of a comment of a given corpus (the page gives it all of
  ``feedback.json``, so no pair repeats a training, validation or test comment of any split),
  then a seeded draw of ``N_PAIRS``, the templates in turn;
- ``pair_outcomes`` — per pair, whether a model got both sides right (it read the order) or
  both wrong (it read it backwards), from the logits of the 2 P comments.

Shapes: P pairs, 2 P comments (praise side first, then the complaint side, pair by pair).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from transformer_lab.char_transformer import LENGTH, MAX_CHAR_ID
from transformer_lab.cloudwave.templates import CLOSERS, FEATURES, MIRRORED, OPENERS
from transformer_lab.protocol import correct
from transformer_lab.validation import require_int, require_texts

# Pairs drawn for the page: 2 × 400 comments; their scoring costs a fraction of a second.
N_PAIRS = 400
PAIR_SEED = 0
# The slots of openers and closers other than {f} get one fixed filling each.
_FIXED_SLOTS = {"n": "12", "m": "8", "name": "Maria"}


@dataclass(frozen=True)
class MirroredPairs:
    """The pairs of ``mirrored_pairs``.

    texts (2 P,) lower-cased comments, pair by pair: praise side, then complaint side;
    labels (2 P,) float 1/0 in the same order; template (P,) int, the index of the pair's
    ``MIRRORED`` entry.
    """

    texts: list[str]
    labels: torch.Tensor
    template: np.ndarray

    def __len__(self) -> int:
        return len(self.template)


def _filled(template: str, feature: str = "") -> str:
    """``template`` with ``{f}`` set to ``feature`` and every other slot to its fixed value."""
    slots = {"f": feature, **_FIXED_SLOTS}
    return re.sub(r"\{(\w+)\}", lambda match: slots[match.group(1)], template)


def candidate_pairs(length: int = LENGTH) -> list[tuple[str, str, int]]:
    """Every (praise text, complaint text, template index) that fits ``length`` characters.

    Each ``MIRRORED`` pair is filled with every feature (when it has a ``{f}`` slot), every
    distinct opener and every distinct neutral closer; both sides get the same fillings.
    """
    length = require_int("length", length, minimum=1)
    openers = sorted({_filled(opener) for opener in OPENERS})
    closers = sorted({_filled(closer) for closer in CLOSERS})
    pairs = set()
    for index, (praise, _, complaint) in enumerate(MIRRORED):
        features = FEATURES if "{f}" in praise else ("",)
        for feature, opener, closer in (
            (f, o, c) for f in features for o in openers for c in closers
        ):
            sides = [
                (opener + _filled(body, feature) + closer).lower()
                for body in (praise, complaint)
            ]
            if max(len(side) for side in sides) <= length:
                pairs.add((sides[0], sides[1], index))
    return sorted(pairs)


def window_key(text: str, length: int = LENGTH) -> str:
    """The window the model reads of ``text`` as a string: what ``encode_text`` turns into ids
    (lower-cased, first ``length`` characters, every code above ``MAX_CHAR_ID`` capped)."""
    return "".join(chr(min(ord(char), MAX_CHAR_ID)) for char in text.lower()[:length])


def mirrored_pairs(
    corpus: Sequence[str],
    n_pairs: int = N_PAIRS,
    seed: int = PAIR_SEED,
    length: int = LENGTH,
) -> MirroredPairs:
    """``n_pairs`` mirrored pairs drawn with ``seed`` from ``candidate_pairs(length)``.

    ``corpus`` holds the comments the pairs must not repeat (the page passes every comment of
    ``feedback.json``, so no pair repeats a comment of any split): a candidate is dropped when
    either side's window equals the window of a corpus comment. The draw takes the templates in
    turn, each one's candidates in a seeded random order, until ``n_pairs`` are drawn, so no
    template fills most of the set. Raises ``ValueError`` when fewer candidates are left.
    """
    corpus = require_texts("corpus", corpus, allow_empty=True)
    n_pairs = require_int("n_pairs", n_pairs, minimum=1)
    seen = {window_key(text, length) for text in corpus}
    by_template: dict[int, list[tuple[str, str, int]]] = {}
    for pair in candidate_pairs(length):
        if not {window_key(pair[0], length), window_key(pair[1], length)} & seen:
            by_template.setdefault(pair[2], []).append(pair)
    fresh = sum(len(pairs) for pairs in by_template.values())
    if fresh < n_pairs:
        raise ValueError(
            f"only {fresh} mirrored pairs share no window with the corpus, asked for {n_pairs}"
        )
    rng = np.random.default_rng(seed)
    queues = [
        [pairs[i] for i in rng.permutation(len(pairs))]
        for _, pairs in sorted(by_template.items())
    ]
    chosen: list[tuple[str, str, int]] = []
    while len(chosen) < n_pairs:
        for queue in queues:
            if queue and len(chosen) < n_pairs:
                chosen.append(queue.pop())
    return MirroredPairs(
        [text for praise, complaint, _ in chosen for text in (praise, complaint)],
        torch.tensor([1.0, 0.0] * n_pairs),
        np.array([index for *_, index in chosen]),
    )


@dataclass(frozen=True)
class PairOutcomes:
    """Per pair (P,) 0./1.: ``read`` = both sides right, ``reversed`` = both sides wrong.

    ``read − reversed`` per pair is −1, 0 or +1; its mean is 2 × (accuracy on the 2 P comments −
    0.5). A model blind to order has ``read = reversed = 0`` on every pair.
    """

    read: torch.Tensor
    reversed: torch.Tensor

    @property
    def net(self) -> float:
        """Share of pairs read in the right order minus share read backwards."""
        return (self.read - self.reversed).mean().item()


def pair_outcomes(logits: torch.Tensor, pairs: MirroredPairs) -> PairOutcomes:
    """Outcomes of one model from its ``logits`` (2 P,) on ``pairs.texts``."""
    hits = correct(logits, pairs.labels).reshape(len(pairs), 2)  # (P, 2)
    return PairOutcomes((hits.sum(1) == 2).float(), (hits.sum(1) == 0).float())


def template_nets(net_per_pair: torch.Tensor, pairs: MirroredPairs) -> dict[int, float]:
    """The mean of ``net_per_pair`` (P,) within each template of ``pairs``, by template index.

    ``net_per_pair`` is ``read − reversed`` per pair (for one model, or a difference of two
    models). The draw takes the templates in turn, but some templates have few candidates, so
    a few templates supply most pairs: the per-template means show whether one template carries
    a result, and their plain mean (``balanced_net``) weighs every template alike.
    """
    if net_per_pair.shape != (len(pairs),):
        raise ValueError(
            f"net_per_pair should have shape ({len(pairs)},), one value per pair, "
            f"got {tuple(net_per_pair.shape)}"
        )
    return {
        int(index): net_per_pair[torch.as_tensor(pairs.template == index)].mean().item()
        for index in np.unique(pairs.template)
    }


def balanced_net(net_per_pair: torch.Tensor, pairs: MirroredPairs) -> float:
    """``net_per_pair`` (P,) averaged per template, then over templates (each weighs the same)."""
    nets = template_nets(net_per_pair, pairs)
    return float(np.mean(list(nets.values())))
