"""The feedback comments: ``feedback.json``, one JSON object per line, keyed as ``FEEDBACK_COLUMNS``."""

from __future__ import annotations

import datetime as dt
import json
import random
import re
from collections.abc import Sequence

from transformer_lab.cloudwave.schema import CATEGORIES, CHANNELS, FEEDBACK_COLUMNS
from transformer_lab.cloudwave.templates import (
    CLOSERS,
    COMPETITORS,
    COMPLAINTS,
    COMPLAINTS_NEGATED,
    FEATURES,
    HAPPY_CLOSERS,
    MIRRORED,
    MONTHS,
    NAMES,
    OPENERS,
    PRAISE,
    PRAISE_NEGATED,
    SPELLING,
    UNHAPPY_CLOSERS,
    WISHES,
)

N_FEEDBACK = 12000
FEEDBACK_SEED = 20
FIRST_DAY = dt.date(2025, 4, 1)
LAST_DAY = dt.date(2026, 3, 31)
CATEGORY_SHARE = (0.27, 0.21, 0.13, 0.16, 0.13, 0.10)
CHANNEL_SHARE = (0.25, 0.27, 0.18, 0.17, 0.13)
LABEL_NOISE = (
    0.015  # share of comments filed under a random other category, as real triage does
)


def _fill(template: str, rng: random.Random) -> str:
    """Replace the ``{f}``, ``{n}``, ``{m}``, ``{name}``, ``{comp}``, ``{month}`` and ``{wish}`` slots."""
    slots = {
        "f": lambda: rng.choice(FEATURES),
        "n": lambda: str(
            rng.choice((2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 45, 50, 120, 250))
        ),
        "m": lambda: str(rng.randint(2, 40)),
        "name": lambda: rng.choice(NAMES),
        "comp": lambda: rng.choice(COMPETITORS),
        "month": lambda: rng.choice(MONTHS),
        "wish": lambda: rng.choice(WISHES),
    }
    return re.sub(r"\{(\w+)\}", lambda match: slots[match.group(1)](), template)


def _typo(word: str, rng: random.Random) -> str:
    """One keyboard slip in ``word``: swap two letters, drop one or double one."""
    i = rng.randrange(1, len(word) - 1)
    kind = rng.random()
    if kind < 0.4:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind < 0.7:
        return word[:i] + word[i + 1 :]
    return word[:i] + word[i] + word[i:]


def _roughen(text: str, rng: random.Random) -> str:
    """Make a clean sentence look typed: typos, slang, casing and punctuation habits."""
    words = text.split(" ")
    for i, word in enumerate(words):
        if word.lower() in SPELLING and rng.random() < 0.3:
            words[i] = SPELLING[word.lower()]
        elif len(word) >= 5 and word.isalpha() and rng.random() < 0.035:
            words[i] = _typo(word, rng)
    text = " ".join(words)
    style = rng.random()
    if style < 0.25:
        text = text.lower()
    elif style < 0.28:
        text = text.upper()
    elif style < 0.40:
        text = text.replace("'", "\u2019")  # phone keyboards type curly apostrophes
    if rng.random() < 0.08:
        text = text.rstrip(".!") + rng.choice(("...", "!!!", " ??"))
    return text


def _comment(category: str, rng: random.Random, bare_rng: random.Random) -> str:
    """One feedback comment of ``category``, typed (typos, casing, slang).

    A comment built from one side of a ``MIRRORED`` pair is written bare: its greeting (if any),
    the body and a neutral closer drawn from ``bare_rng`` (``CLOSERS``), no second sentence and no
    mood closer, so that only the order of its words tells praise from complaint and the body
    stands within a comment's first 64 characters. ``rng`` still makes every draw it made for the
    full comment, so the other comments do not change.
    """
    draw = rng.random()
    pairs = [pair for pair in MIRRORED if category in ("praise", pair[1])]
    mirrored = draw < 0.2 and bool(pairs)
    if mirrored:  # an order-sensitive pair: same words, the order decides the meaning
        praise, _, complaint = rng.choice(pairs)
        body = praise if category == "praise" else complaint
    elif draw < 0.5:  # a negation that belongs to this category
        body = rng.choice(
            PRAISE_NEGATED if category == "praise" else COMPLAINTS_NEGATED[category]
        )
    else:
        body = rng.choice(PRAISE if category == "praise" else COMPLAINTS[category])
    body = _fill(body, rng)
    opener = _fill(rng.choice(OPENERS), rng)
    upper = rng.random() < (0.3 if opener else 0.75)
    text = opener + (body[0].upper() if upper else body[0].lower()) + body[1:]
    if rng.random() < 0.3:  # a second sentence in the same mood
        extra = rng.choice(
            PRAISE if category == "praise" else COMPLAINTS[rng.choice(CATEGORIES[1:])]
        )
        extra = _fill(extra, rng)
        if extra.lower() not in text.lower():
            text = text.rstrip(".!?") + ". " + extra[0].upper() + extra[1:]
    mood = HAPPY_CLOSERS if category == "praise" else UNHAPPY_CLOSERS
    text += _fill(rng.choice(CLOSERS + mood), rng)
    text = _roughen(text, rng)
    if mirrored:
        bare = opener + (body[0].upper() if upper else body[0].lower()) + body[1:]
        return _roughen(bare + _fill(bare_rng.choice(CLOSERS), bare_rng), bare_rng)
    return text


def _rating(category: str, rng: random.Random) -> int:
    """Star rating 1–5: high for praise, middling for requests, low otherwise, with noise."""
    weights = {
        "praise": (0.01, 0.02, 0.07, 0.30, 0.60),
        "feature_request": (0.05, 0.12, 0.38, 0.33, 0.12),
        "onboarding": (0.15, 0.30, 0.35, 0.15, 0.05),
    }.get(category, (0.38, 0.32, 0.20, 0.07, 0.03))
    return rng.choices((1, 2, 3, 4, 5), weights=weights)[0]


def generate_feedback(
    customer_ids: Sequence[str], n: int = N_FEEDBACK, seed: int = FEEDBACK_SEED
) -> list[dict[str, object]]:
    """``n`` feedback records (dicts keyed as ``FEEDBACK_COLUMNS``), sorted by date then id."""
    if not customer_ids:
        raise ValueError(
            "generate_feedback needs at least one customer id, got an empty sequence"
        )
    rng = random.Random(seed)
    bare_rng = random.Random(seed + 1)  # only the bare mirrored comments draw from it
    span = (LAST_DAY - FIRST_DAY).days
    records = []
    for _ in range(n):
        category = rng.choices(CATEGORIES, weights=CATEGORY_SHARE)[0]
        text = _comment(category, rng, bare_rng)
        filed = category
        if rng.random() < LABEL_NOISE:
            filed = rng.choice([other for other in CATEGORIES if other != category])
        day = FIRST_DAY + dt.timedelta(days=min(span, int(span * rng.random() ** 0.8)))
        records.append(
            {
                "customer_id": rng.choice(customer_ids),
                "created_at": day.isoformat(),
                "channel": rng.choices(CHANNELS, weights=CHANNEL_SHARE)[0],
                "category": filed,
                "feedback_text": text,
                "rating": _rating(category, rng),
            }
        )
    records.sort(
        key=lambda record: record["created_at"]
    )  # stable: ties keep generation order
    return [
        {"feedback_id": f"FB-{i:06d}", **record}
        for i, record in enumerate(records, start=1)
    ]


def feedback_jsonl(records: Sequence[dict[str, object]]) -> str:
    """Format feedback records as JSON lines (keys in ``FEEDBACK_COLUMNS`` order, UTF-8 text)."""
    lines = [
        json.dumps({key: record[key] for key in FEEDBACK_COLUMNS}, ensure_ascii=False)
        for record in records
    ]
    return "\n".join(lines) + "\n"
