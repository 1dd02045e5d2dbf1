"""Synthetic CloudWave data: feedback comments, the Customer 360 table, usage grids and events.

CloudWave is the course's fictional SaaS company. Everything here is invented by a seeded
generator, so the files in ``data/`` can be rebuilt byte for byte:

    python -m transformer_lab.cloudwave            # writes into the repository's data/ folder
    python -m transformer_lab.cloudwave --out DIR  # writes somewhere else

Byte-identical output does not depend on library versions: randomness comes only from Python's
``random.Random`` (its ``random``/``choice``/``choices``/``randint`` streams are stable across
Python 3 releases), every number is formatted explicitly, keys are written in a fixed order and
lines end with ``\\n``. NumPy and pandas are not used to *write* anything.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import random
import re
from collections.abc import Sequence
from pathlib import Path

FEEDBACK_FILE = "feedback.json"
CUSTOMER360_FILE = "customer360.csv"
USAGE_GRID_FILE = "usage_grid.csv"
EVENTS_FILE = "events.json"
FEEDBACK_COLUMNS = ("feedback_id", "customer_id", "created_at", "channel", "category", "feedback_text", "rating")
CUSTOMER360_COLUMNS = (
    "customer_id",
    "tenure_months",
    "plan_tier",
    "seats",
    "monthly_spend",
    "support_tickets_90d",
    "logins_30d",
    "nps_score",
    "churned",
)
CHANNELS = ("email", "in_app", "chat", "survey", "app_review")
CATEGORIES = ("praise", "bug", "billing", "feature_request", "performance", "onboarding")
PLAN_TIERS = ("Starter", "Team", "Business", "Enterprise")
USAGE_GRID_COLUMNS = ("customer_id", "day_of_week", "hour", "active_users")
EVENTS_COLUMNS = ("session_id", "customer_id", "timestamp", "event")
EVENT_TYPES = (
    "login",
    "login_failed",
    "password_reset",
    "view_dashboard",
    "edit_task",
    "export_report",
    "invite_user",
    "contact_support",
    "logout",
)

N_CUSTOMERS = 5000
N_FEEDBACK = 12000
CUSTOMER_SEED = 360
FEEDBACK_SEED = 20
FIRST_DAY = dt.date(2025, 4, 1)
LAST_DAY = dt.date(2026, 3, 31)
N_GRID_CUSTOMERS = 300
N_SESSIONS = 3000
USAGE_SEED = 168  # 7 days × 24 hours
EVENTS_SEED = 404
EVENTS_FIRST_DAY = dt.date(2026, 3, 2)  # a Monday; sessions span the four weeks to 29 March
EVENTS_DAYS = 28

# --- Customer 360 --------------------------------------------------------------------------------

PLAN_SHARE = (0.42, 0.30, 0.19, 0.09)
PRICE_PER_SEAT = {"Starter": 9.0, "Team": 19.0, "Business": 39.0, "Enterprise": 79.0}
SEAT_RANGE = {"Starter": (1, 5), "Team": (3, 30), "Business": (10, 160), "Enterprise": (60, 1500)}


def _log_uniform_int(rng: random.Random, low: int, high: int) -> int:
    """An integer spread evenly on a log scale between ``low`` and ``high`` (both included)."""
    value = math.exp(math.log(low) + rng.random() * (math.log(high + 1) - math.log(low)))
    return min(high, int(value))


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw by Knuth's method (fine for the small means used here)."""
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count += 1
        product *= rng.random()
    return count


def churn_logit(
    tenure_months: int,
    plan_tier: str,
    seats: int,
    support_tickets_90d: int,
    logins_30d: int,
    nps_score: int,
) -> float:
    """The hidden churn risk (log-odds) before noise: thresholds and plan × usage interactions.

    - new customers (under 6 months) leave more, and so do customers at the 12-month renewal;
    - paid team plans with few logins per seat (unused seats) leave much more — but only on
      Team/Business: a Starter user logs in alone, an Enterprise contract is sticky;
    - many tickets hurt only when the customer is also unhappy (NPS 6 or less);
    - promoters (NPS 9–10) stay.
    """
    logins_per_seat = logins_30d / seats
    logit = -3.2
    logit += 1.8 if tenure_months < 6 else 0.0
    logit += 1.2 if 11 <= tenure_months <= 13 else 0.0
    if plan_tier in ("Team", "Business") and logins_per_seat < 2.5:
        logit += 3.0
    if plan_tier == "Starter" and logins_30d < 5:
        logit += 2.2
    if support_tickets_90d >= 4 and nps_score <= 6:
        logit += 2.4
    logit -= 1.5 if plan_tier == "Enterprise" else 0.0
    logit -= 1.0 if nps_score >= 9 else 0.0
    return logit


def generate_customers(n: int = N_CUSTOMERS, seed: int = CUSTOMER_SEED) -> list[dict[str, object]]:
    """``n`` Customer 360 rows as dicts with the keys of ``CUSTOMER360_COLUMNS``, in that order."""
    rng = random.Random(seed)
    rows = []
    for number in range(1, n + 1):
        plan = rng.choices(PLAN_TIERS, weights=PLAN_SHARE)[0]
        seats = _log_uniform_int(rng, *SEAT_RANGE[plan])
        tenure = min(72, 1 + int(-math.log(1.0 - rng.random()) * 20))
        discount = 1.0 - (0.25 * rng.random() if plan == "Enterprise" else 0.05 * rng.random())
        spend = seats * PRICE_PER_SEAT[plan] * discount + (15.0 if rng.random() < 0.2 else 0.0)
        engagement = rng.gauss(0.0, 1.0)  # latent: how much the team actually uses CloudWave
        troubled = rng.random() < 0.2  # latent: a customer with a rough integration
        tickets = _poisson(rng, (0.6 + 0.5 * math.log(seats)) * (3.0 if troubled else 1.0))
        logins_per_seat = max(0.0, 5.0 * math.exp(0.9 * engagement))
        logins = _poisson(rng, logins_per_seat * seats) if seats <= 60 else int(
            round(max(0.0, rng.gauss(logins_per_seat * seats, math.sqrt(logins_per_seat * seats + 1.0))))
        )
        satisfaction = 7.2 + 1.1 * engagement - 0.35 * tickets + rng.gauss(0.0, 1.6)
        nps = max(0, min(10, int(round(satisfaction))))
        logit = churn_logit(tenure, plan, seats, tickets, logins, nps) + rng.gauss(0.0, 0.5)
        churned = 1 if rng.random() < 1.0 / (1.0 + math.exp(-logit)) else 0
        rows.append(
            {
                "customer_id": f"C-{number:05d}",
                "tenure_months": tenure,
                "plan_tier": plan,
                "seats": seats,
                "monthly_spend": round(spend, 2),
                "support_tickets_90d": tickets,
                "logins_30d": logins,
                "nps_score": nps,
                "churned": churned,
            }
        )
    return rows


def customers_csv(rows: Sequence[dict[str, object]]) -> str:
    """Format Customer 360 rows as CSV text (header, comma-separated, ``\\n`` line ends)."""
    lines = [",".join(CUSTOMER360_COLUMNS)]
    for row in rows:
        lines.append(
            f"{row['customer_id']},{row['tenure_months']:d},{row['plan_tier']},{row['seats']:d},"
            f"{row['monthly_spend']:.2f},{row['support_tickets_90d']:d},{row['logins_30d']:d},"
            f"{row['nps_score']:d},{row['churned']:d}"
        )
    return "\n".join(lines) + "\n"


# --- Feedback ------------------------------------------------------------------------------------

CATEGORY_SHARE = (0.27, 0.21, 0.13, 0.16, 0.13, 0.10)
CHANNEL_SHARE = (0.25, 0.27, 0.18, 0.17, 0.13)
LABEL_NOISE = 0.015  # share of comments filed under a random other category, as real triage does

FEATURES = (
    "the dashboard", "reports", "the mobile app", "SSO", "the API", "search", "exports",
    "notifications", "the editor", "the Slack integration", "sync", "file uploads",
    "the calendar view", "the admin console", "two-factor login", "the desktop app", "webhooks",
    "the kanban board", "CSV import", "dark mode", "the Android app", "the iOS app", "comments",
    "shared folders", "the audit log", "the timeline", "permissions", "the Outlook add-in",
)
NAMES = ("Maria", "Tom", "Priya", "Jonas", "Aisha", "Luis", "Mei", "Sam", "Olga", "Kwame")
COMPETITORS = ("Trello", "Asana", "a spreadsheet", "Jira", "our old tool", "Notion", "email threads")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WISHES = ("a dark mode", "bulk edit", "keyboard shortcuts", "an offline mode", "recurring tasks",
          "custom fields", "a Gantt view", "better filters", "audit exports", "a public API")

# Order-sensitive pairs: the two sides use the same words, and only their order says whether the
# customer is happy. Listed as (praise, complaint category, complaint).
MIRRORED = (
    ("it was bad before, now it's great", "bug", "it was great before, now it's bad"),
    ("used to be slow, now it's fast", "performance", "used to be fast, now it's slow"),
    ("not slow, {f} is fast", "performance", "not fast, {f} is slow"),
    ("fast, not slow at all", "performance", "slow, not fast at all"),
    ("it's not hard, it's easy", "onboarding", "it's not easy, it's hard"),
    ("confusing at first, now easy", "onboarding", "easy at first, now confusing"),
    ("pricey at first, now worth it", "billing", "worth it at first, now pricey"),
    ("great, {f} works and nothing is broken", "bug", "{f} is broken and nothing works, great"),
    ("{f} is great, never a problem", "bug", "{f} is a problem, never great"),
    ("the bug is gone, sync is back", "bug", "sync is gone, the bug is back"),
    ("loads in seconds, not minutes", "performance", "loads in minutes, not seconds"),
    ("the bill is not high, price is fair", "billing", "the price is not fair, bill is high"),
)

PRAISE = (
    "Love the update to {f}, saves me {n} minutes a day",
    "{f} is fantastic, the whole team uses it",
    "Great job on the update to {f}!",
    "Support was super quick and friendly, thanks {name}",
    "Onboarding our team took one afternoon. Impressive.",
    "{f} is exactly what we needed",
    "Really smooth experience so far",
    "best tool we've adopted this year",
    "{name} from support went above and beyond",
    "Clean UI, fast, reliable. Five stars.",
    "Switched from {comp} and it's way better",
    "{f} makes my job so much easier",
    "Keep it up, {f} keeps getting better",
    "Works great on my phone and my laptop",
    "Setup was painless and the docs are clear",
    "Our team finally stopped emailing spreadsheets around",
    "{f} looks gorgeous now",
    "Huge fan of {f}. Thank you!",
    "Great value for {n} seats",
    "love it love it love it",
    "Super intuitive, my whole team got it in a day",
    "{f} is fast and reliable",
)
PRAISE_NEGATED = (
    "Never had a single problem with {f}",
    "No complaints here, {f} just works",
    "I can't think of anything to improve",
    "{f} never lets me down",
    "Was not sure at first but now I love it",
    "Didn't expect much, but {f} is great",
    "Nothing broke during the migration, amazing",
    "Couldn't be happier with {f}",
    "Not a single outage this quarter, great work",
    "no issues with billing, the invoices are clear",
    "Never thought {f} could be this easy",
    "Not once did {f} crash on me",
    "Can't imagine working without {f} now",
    "No more chasing people for updates, thank you",
    "I don't miss {comp} at all",
)
COMPLAINTS = {
    "bug": (
        "{f} crashes when I upload a file over {n} MB",
        "Got logged out {n} times today",
        "{f} shows duplicate entries",
        "The new theme makes {f} unreadable",
        "sync keeps failing with a timeout error",
        "{f} crashes on startup since the last update",
        "Error 500 when I open {f}",
        "Attachments vanish after saving",
        "{f} loses my changes if I switch tabs",
        "Push notifications arrive twice",
    ),
    "billing": (
        "Charged twice for {month}, please refund",
        "Why did my invoice go up by {n}%?",
        "Cancelled last month and still got charged",
        "We were billed for {n} seats we removed",
        "Need the invoice address changed for {month}",
        "Credit card update fails on the billing page",
        "The annual discount disappeared from our invoice",
        "Please send a copy of the {month} receipt",
    ),
    "feature_request": (
        "Would love {wish} in {f}",
        "Please add an export to Excel",
        "Can we get SSO on the Team plan?",
        "It would be great if {f} had keyboard shortcuts",
        "Any plans for a Linux desktop app?",
        "Great tool, wish it had {wish}",
        "Please add {wish} to {f}",
        "feature idea: let admins set default views",
        "Would be great to tag people in {f}",
    ),
    "performance": (
        "{f} takes {n} seconds to load",
        "search is slow with more than {n} records",
        "{f} lags a lot on older laptops",
        "Everything freezes for a few seconds when I scroll",
        "Reports time out for our biggest project",
        "Page loads got slower every week this month",
        "Typing in {f} has a noticeable delay",
    ),
    "onboarding": (
        "the setup guide is confusing",
        "Took us {n} days to import our data",
        "Onboarding call was cancelled twice",
        "Where do I find the admin settings?",
        "Importing from {comp} was harder than expected",
        "The invite link expired before my team used it",
        "Which plan do we need for {f}?",
    ),
}
COMPLAINTS_NEGATED = {
    "bug": (
        "{f} works great? not at all, it crashes",
        "{f} never works after the update",
        "Great app, but {f} is not working",
        "{f} was great, but not anymore",
        "{f} does not load, just a blank page",
        "Can't save anything in {f}",
        "Nothing happens when I click export",
        "{f} is not bad, just broken on mobile",
        "Not great: {f} logged me out again",
    ),
    "billing": (
        "Not great: we were billed for {n} seats we removed",
        "I never agreed to the annual plan",
        "The billing page does not show our VAT number",
        "Pricing is great, but not for a team of {n}",
        "No invoice for {month} in the portal",
        "Great product, not worth the price increase",
        "Can't download invoices older than {n} months",
    ),
    "feature_request": (
        "Not a bug, but {f} needs bulk edit",
        "{f} is great but I'd love an API for it",
        "Please don't make us re-login every day",
        "Good, but not great without {wish}",
        "Can't filter {f} by owner, please add it",
        "No way to pin {f} to the sidebar yet",
    ),
    "performance": (
        "The app is not fast anymore",
        "Fast? not at all, {f} is so slow",
        "{f} never loads before my meeting starts",
        "Great features, but not fast enough for us",
        "It was fast, not anymore after the update",
        "Not usable on hotel wifi, too slow",
    ),
    "onboarding": (
        "Not sure how to invite my team",
        "No idea where to start, the tutorial skips steps",
        "I never got the welcome email",
        "Great docs, but not for admins",
        "Couldn't connect {f} during setup",
        "Nobody told us we needed an admin account",
    ),
}
OPENERS = ("", "", "", "", "", "Hi team, ", "Quick note: ", "FYI ", "Honestly, ", "Hello, ", "Ok so ",
           "Hey! ", "Feedback: ", "Re: ticket {n} - ")
CLOSERS = ("", "", "", "", "", "", " Thanks!", " thx", "!!", " We have {n} seats.",
           " Using it daily for {m} months.", " — sent from my phone", " Cheers, {name}")
HAPPY_CLOSERS = (" :)", " Keep it up.", " \U0001F44D", " 10/10")
UNHAPPY_CLOSERS = (" pls fix", " :(", " Ticket #{n}.", " Otherwise fine.", " Please advise.",
                   " (tested on Chrome and Firefox)", " Our admin says the same.", " \U0001F620")
SPELLING = {"please": "pls", "thanks": "thx", "you": "u", "because": "bc", "really": "rly"}


def _fill(template: str, rng: random.Random) -> str:
    """Replace the ``{f}``, ``{n}``, ``{m}``, ``{name}``, ``{comp}``, ``{month}`` and ``{wish}`` slots."""
    slots = {
        "f": lambda: rng.choice(FEATURES),
        "n": lambda: str(rng.choice((2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 45, 50, 120, 250))),
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
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind < 0.7:
        return word[:i] + word[i + 1:]
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


def _comment(category: str, rng: random.Random) -> str:
    """One feedback comment of ``category`` (before typos)."""
    draw = rng.random()
    pairs = [pair for pair in MIRRORED if category in ("praise", pair[1])]
    if draw < 0.2 and pairs:  # an order-sensitive pair: same words, the order decides the meaning
        praise, _, complaint = rng.choice(pairs)
        body = praise if category == "praise" else complaint
    elif draw < 0.5:  # a negation that belongs to this category
        body = rng.choice(PRAISE_NEGATED if category == "praise" else COMPLAINTS_NEGATED[category])
    else:
        body = rng.choice(PRAISE if category == "praise" else COMPLAINTS[category])
    body = _fill(body, rng)
    opener = _fill(rng.choice(OPENERS), rng)
    upper = rng.random() < (0.3 if opener else 0.75)
    text = opener + (body[0].upper() if upper else body[0].lower()) + body[1:]
    if rng.random() < 0.3:  # a second sentence in the same mood
        extra = rng.choice(PRAISE if category == "praise" else COMPLAINTS[rng.choice(CATEGORIES[1:])])
        extra = _fill(extra, rng)
        if extra.lower() not in text.lower():
            text = text.rstrip(".!?") + ". " + extra[0].upper() + extra[1:]
    mood = HAPPY_CLOSERS if category == "praise" else UNHAPPY_CLOSERS
    text += _fill(rng.choice(CLOSERS + mood), rng)
    return _roughen(text, rng)


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
        raise ValueError("generate_feedback needs at least one customer id, got an empty sequence")
    rng = random.Random(seed)
    span = (LAST_DAY - FIRST_DAY).days
    records = []
    for _ in range(n):
        category = rng.choices(CATEGORIES, weights=CATEGORY_SHARE)[0]
        text = _comment(category, rng)
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
    records.sort(key=lambda record: record["created_at"])  # stable: ties keep generation order
    return [{"feedback_id": f"FB-{i:06d}", **record} for i, record in enumerate(records, start=1)]


def feedback_jsonl(records: Sequence[dict[str, object]]) -> str:
    """Format feedback records as JSON lines (keys in ``FEEDBACK_COLUMNS`` order, UTF-8 text)."""
    lines = [
        json.dumps({key: record[key] for key in FEEDBACK_COLUMNS}, ensure_ascii=False) for record in records
    ]
    return "\n".join(lines) + "\n"


# --- Usage grid ----------------------------------------------------------------------------------


def _hour_share(hours_into_day: int) -> float:
    """Share of a team's busy-hour activity at ``hours_into_day`` after its working day starts."""
    if 0 <= hours_into_day <= 8:
        return 0.6 if hours_into_day in (3, 4) else 1.0  # working hours, with a lunch dip
    return {-1: 0.25, 9: 0.3, 10: 0.15, 11: 0.08}.get(hours_into_day, 0.02)


def _count(rng: random.Random, mean: float) -> int:
    """A count with the given mean: Poisson when small, its normal approximation when large."""
    if mean < 30.0:
        return _poisson(rng, mean)
    return int(round(max(0.0, rng.gauss(mean, math.sqrt(mean)))))


def generate_usage_grid(
    customers: Sequence[dict[str, object]], n: int = N_GRID_CUSTOMERS, seed: int = USAGE_SEED
) -> list[dict[str, object]]:
    """Hourly active users in the last week before renewal for ``n`` of ``customers`` (long format).

    One dict per (customer, day_of_week 0=Monday … 6, hour 0 … 23), keyed as ``USAGE_GRID_COLUMNS``,
    in customer-id order: ``n`` × 168 rows. Each team works a nine-hour day from its own start hour
    (7–10, its time zone) with a lunch dip, little at night and a team-specific weekend level; the
    level follows its ``logins_30d`` per seat. Churners fade out: their activity falls day by day.
    """
    if not customers:
        raise ValueError("generate_usage_grid needs at least one customer row, got an empty sequence")
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(customers)), min(n, len(customers))))
    rows = []
    for index in chosen:
        customer = customers[index]
        seats = int(customer["seats"])
        busy_share = min(0.9, int(customer["logins_30d"]) / seats / 12.0)  # seats active in a busy hour
        start = rng.choice((7, 8, 8, 9, 9, 9, 10))
        weekend = rng.choice((0.03, 0.05, 0.1, 0.25))
        fade = rng.uniform(0.55, 0.9) if customer["churned"] else 0.0
        for day in range(7):
            level = (weekend if day >= 5 else 1.0) * (1.0 - fade * day / 6)
            for hour in range(24):
                mean = seats * busy_share * level * _hour_share(hour - start)
                rows.append(
                    {
                        "customer_id": customer["customer_id"],
                        "day_of_week": day,
                        "hour": hour,
                        "active_users": min(seats, _count(rng, mean)),
                    }
                )
    return rows


def usage_grid_csv(rows: Sequence[dict[str, object]]) -> str:
    """Format usage-grid rows as CSV text (header, comma-separated, ``\\n`` line ends)."""
    lines = [",".join(USAGE_GRID_COLUMNS)]
    lines += [f"{r['customer_id']},{r['day_of_week']:d},{r['hour']:d},{r['active_users']:d}" for r in rows]
    return "\n".join(lines) + "\n"


# --- Event stream --------------------------------------------------------------------------------

# Seconds until the next event, by the event just logged: (shortest, longest).
EVENT_GAPS = {
    "login": (5, 60),
    "login_failed": (4, 40),
    "password_reset": (60, 300),
    "view_dashboard": (10, 400),
    "edit_task": (30, 900),
    "export_report": (20, 240),
    "invite_user": (20, 180),
    "contact_support": (120, 900),
}
WORK_EVENTS = ("view_dashboard", "edit_task", "export_report", "invite_user", "contact_support")


def _session_events(rng: random.Random, troubled: bool) -> list[str]:
    """The events of one session in order. ``troubled`` customers get locked out and ask for help more.

    Locked out: two failed logins and a password reset, then either gone (``logout``, sometimes after
    ``contact_support``) or back in (``login`` and work). The same events in another order, e.g.
    ``password_reset`` then ``login``, tell a different story.
    """
    draw = rng.random()
    lockout = 0.15 if troubled else 0.04
    events = []
    if draw < lockout:
        events += ["login_failed", "login_failed", "password_reset"]
        if rng.random() < 0.6:  # gives up
            return events + (["contact_support", "logout"] if rng.random() < 0.3 else ["logout"])
    elif draw < lockout + 0.08:  # one typo, then in
        events.append("login_failed")
    events.append("login")
    support = 0.15 if troubled else 0.04
    weights = (0.5, 0.33, 0.09, 0.04, support)
    events += rng.choices(WORK_EVENTS, weights=weights, k=rng.randint(1, 6))
    if rng.random() < 0.85:  # otherwise the session times out without a logout
        events.append("logout")
    return events


def generate_events(
    customers: Sequence[dict[str, object]], n: int = N_SESSIONS, seed: int = EVENTS_SEED
) -> list[dict[str, object]]:
    """Product events of ``n`` sessions, one dict per event keyed as ``EVENTS_COLUMNS``.

    Sessions start on working-day hours between ``EVENTS_FIRST_DAY`` and four weeks later (UTC,
    ISO timestamps to the second) and are numbered ``S-000001`` … in order of their start; within
    a session the events are in time order. Churners and customers with 4+ recent tickets are
    ``troubled`` (see ``_session_events``).
    """
    if not customers:
        raise ValueError("generate_events needs at least one customer row, got an empty sequence")
    rng = random.Random(seed)
    start_of_day = dt.datetime.combine(EVENTS_FIRST_DAY, dt.time())
    hour_weights = [_hour_share(hour - 9) for hour in range(24)]
    sessions = []
    for _ in range(n):
        customer = rng.choice(customers)
        troubled = bool(customer["churned"]) or int(customer["support_tickets_90d"]) >= 4
        day = rng.randrange(EVENTS_DAYS)
        if day % 7 >= 5 and rng.random() < 0.8:  # few people work at weekends: most move to a weekday
            day = day - day % 7 + rng.randrange(5)
        hour = rng.choices(range(24), weights=hour_weights)[0]
        moment = start_of_day + dt.timedelta(days=day, hours=hour, seconds=rng.randrange(3600))
        stamps = []
        events = _session_events(rng, troubled)
        for event in events:
            stamps.append(moment)
            if event in EVENT_GAPS:
                moment += dt.timedelta(seconds=rng.randint(*EVENT_GAPS[event]))
        sessions.append((stamps[0], customer["customer_id"], list(zip(stamps, events))))
    sessions.sort(key=lambda session: session[0])  # stable: ties keep generation order
    return [
        {"session_id": f"S-{number:06d}", "customer_id": customer_id, "timestamp": stamp.isoformat(), "event": event}
        for number, (_, customer_id, steps) in enumerate(sessions, start=1)
        for stamp, event in steps
    ]


def events_jsonl(records: Sequence[dict[str, object]]) -> str:
    """Format event records as JSON lines (keys in ``EVENTS_COLUMNS`` order)."""
    lines = [json.dumps({key: record[key] for key in EVENTS_COLUMNS}) for record in records]
    return "\n".join(lines) + "\n"


# --- Writing -------------------------------------------------------------------------------------


def write_data(out_dir: Path | str) -> list[Path]:
    """Generate the four data sets and write them into ``out_dir``; return their paths.

    Each data set draws from its own seeded ``random.Random``, so adding one never changes another.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    customers = generate_customers()
    feedback = generate_feedback([row["customer_id"] for row in customers])
    texts = {
        CUSTOMER360_FILE: customers_csv(customers),
        FEEDBACK_FILE: feedback_jsonl(feedback),
        USAGE_GRID_FILE: usage_grid_csv(generate_usage_grid(customers)),
        EVENTS_FILE: events_jsonl(generate_events(customers)),
    }
    paths = []
    for name, text in texts.items():
        paths.append(out / name)
        paths[-1].write_bytes(text.encode("utf-8"))
    return paths


def default_out_dir() -> Path:
    """The repository's ``data/`` folder (two levels above this package)."""
    return Path(__file__).resolve().parents[2] / "data"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the synthetic CloudWave data sets.")
    parser.add_argument("--out", type=Path, default=default_out_dir(), help="folder to write into")
    args = parser.parse_args(argv)
    for path in write_data(args.out):
        print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
