"""The event stream: product events of user sessions, in time order (``events.json``)."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Sequence

from transformer_lab.cloudwave.draws import hour_share
from transformer_lab.cloudwave.schema import EVENTS_COLUMNS

N_SESSIONS = 3000
EVENTS_SEED = 404
EVENTS_FIRST_DAY = dt.date(2026, 3, 2)  # a Monday; sessions span the four weeks to 29 March
EVENTS_DAYS = 28

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
WORK_EVENTS = (
    "view_dashboard",
    "edit_task",
    "export_report",
    "invite_user",
    "contact_support",
)


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
            return events + (
                ["contact_support", "logout"] if rng.random() < 0.3 else ["logout"]
            )
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
        raise ValueError(
            "generate_events needs at least one customer row, got an empty sequence"
        )
    rng = random.Random(seed)
    start_of_day = dt.datetime.combine(EVENTS_FIRST_DAY, dt.time())
    hour_weights = [hour_share(hour - 9) for hour in range(24)]
    sessions = []
    for _ in range(n):
        customer = rng.choice(customers)
        troubled = bool(customer["churned"]) or int(customer["support_tickets_90d"]) >= 4
        day = rng.randrange(EVENTS_DAYS)
        if (
            day % 7 >= 5 and rng.random() < 0.8
        ):  # few people work at weekends: most move to a weekday
            day = day - day % 7 + rng.randrange(5)
        hour = rng.choices(range(24), weights=hour_weights)[0]
        moment = start_of_day + dt.timedelta(
            days=day, hours=hour, seconds=rng.randrange(3600)
        )
        stamps = []
        events = _session_events(rng, troubled)
        for event in events:
            stamps.append(moment)
            if event in EVENT_GAPS:
                moment += dt.timedelta(seconds=rng.randint(*EVENT_GAPS[event]))
        sessions.append((stamps[0], customer["customer_id"], list(zip(stamps, events))))
    sessions.sort(key=lambda session: session[0])  # stable: ties keep generation order
    return [
        {
            "session_id": f"S-{number:06d}",
            "customer_id": customer_id,
            "timestamp": stamp.isoformat(),
            "event": event,
        }
        for number, (_, customer_id, steps) in enumerate(sessions, start=1)
        for stamp, event in steps
    ]


def events_jsonl(records: Sequence[dict[str, object]]) -> str:
    """Format event records as JSON lines (keys in ``EVENTS_COLUMNS`` order)."""
    lines = [json.dumps({key: record[key] for key in EVENTS_COLUMNS}) for record in records]
    return "\n".join(lines) + "\n"
