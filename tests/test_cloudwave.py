"""The CloudWave generators: committed data files are exactly what the generators write."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from transformer_lab.cloudwave import schema
from transformer_lab.cloudwave.build import main
from transformer_lab.cloudwave.customer360 import generate_customers
from transformer_lab.cloudwave.events import N_SESSIONS, generate_events
from transformer_lab.cloudwave.feedback import generate_feedback
from transformer_lab.cloudwave.templates import (
    HAPPY_CLOSERS,
    MIRRORED,
    UNHAPPY_CLOSERS,
)
from transformer_lab.cloudwave.usage import N_GRID_CUSTOMERS, generate_usage_grid

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("cloudwave")
    main(["--out", str(out)])
    return out


@pytest.mark.parametrize(
    "name",
    [
        schema.FEEDBACK_FILE,
        schema.CUSTOMER360_FILE,
        schema.USAGE_GRID_FILE,
        schema.EVENTS_FILE,
    ],
)
def test_regeneration_is_byte_identical_to_committed_files(regenerated, name):
    fresh, committed = (regenerated / name).read_bytes(), (DATA / name).read_bytes()
    assert fresh == committed, (
        f"data/{name} differs from what the generator writes now: run `make data` and commit, "
        "or undo the change to transformer_lab/cloudwave/"
    )


def test_generation_is_seeded():
    assert generate_customers(50) == generate_customers(50)
    assert generate_customers(50, seed=1) != generate_customers(50, seed=2)


CUSTOMERS = generate_customers(40)
# Each generator that draws from the customers: (generator, its first argument, the error without one).
FROM_CUSTOMERS = {
    "feedback": (
        generate_feedback,
        [row["customer_id"] for row in CUSTOMERS],
        "at least one customer id",
    ),
    "usage grid": (generate_usage_grid, CUSTOMERS, "at least one customer row"),
    "events": (generate_events, CUSTOMERS, "at least one customer row"),
}


@pytest.mark.parametrize("name", list(FROM_CUSTOMERS))
def test_generators_are_seeded_and_reject_no_customers(name):
    generate, customers, message = FROM_CUSTOMERS[name]
    assert generate(customers, 20) == generate(customers, 20)
    assert generate(customers, 20, seed=1) != generate(customers, 20, seed=2)
    with pytest.raises(ValueError, match=message):
        generate([], 3)


def test_feedback_schema_and_shape():
    lines = (DATA / schema.FEEDBACK_FILE).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) >= 10_000
    assert all(tuple(record) == schema.FEEDBACK_COLUMNS for record in records)
    assert [r["feedback_id"] for r in records] == [
        f"FB-{i:06d}" for i in range(1, len(records) + 1)
    ]
    assert [r["created_at"] for r in records] == sorted(r["created_at"] for r in records)
    assert {r["channel"] for r in records} == set(schema.CHANNELS)
    assert {r["category"] for r in records} == set(schema.CATEGORIES)
    assert {r["rating"] for r in records} == {1, 2, 3, 4, 5}
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["created_at"]) for r in records)


def test_feedback_is_realistic_enough_for_chapter_4():
    frame = pd.read_json(DATA / schema.FEEDBACK_FILE, lines=True, dtype=False)
    praise = (frame["category"] == "praise").mean()
    assert 0.25 <= praise <= 0.30, (
        f"praise should be a minority of 25-30 %, got {praise:.1%}"
    )
    lengths = frame["feedback_text"].str.len()
    assert (lengths > 32).mean() > 0.8 and lengths.min() < 32 < lengths.max()
    text = frame["feedback_text"].str.lower()
    negated = text.str.contains(r"\b(?:not|never|no)\b|n't")
    for category, group in negated.groupby(frame["category"]):
        assert group.mean() > 0.15, (
            f"negations should occur in every category, {category}: {group.mean():.1%}"
        )
    assert frame["feedback_text"].duplicated().mean() < 0.1


def test_mirrored_pairs_use_the_same_characters():
    # the order-sensitive pairs really are indistinguishable to a bag of characters
    for praise, category, complaint in MIRRORED:
        assert sorted(praise) == sorted(complaint), (praise, complaint)
        assert category in schema.CATEGORIES[1:]


def test_mirrored_comments_are_written_bare():
    # only word order may give a mirrored comment's label away: no mood closer, no second sentence
    frame = pd.read_json(DATA / schema.FEEDBACK_FILE, lines=True, dtype=False)
    text = frame["feedback_text"].str.lower().str.replace("\u2019", "'")
    bodies = [
        re.compile(re.escape(side.lower()).replace(r"\{f\}", ".+?"))
        for praise, _, complaint in MIRRORED
        for side in (praise, complaint)
    ]
    moods = [
        re.compile(re.escape(closer.strip().lower()).replace(r"\{n\}", r"\d+"))
        for closer in HAPPY_CLOSERS + UNHAPPY_CLOSERS
    ]
    mirrored = 0
    for comment in text:
        body = next((match for p in bodies if (match := p.search(comment))), None)
        if body is None:
            continue
        mirrored += 1
        tail = comment[body.end() :]
        assert not any(mood.search(tail) for mood in moods), comment
        assert ". " not in tail, comment  # no second sentence
    assert 0.12 < mirrored / len(frame) < 0.2


def test_customer360_schema_and_churn():
    frame = pd.read_csv(DATA / schema.CUSTOMER360_FILE)
    assert tuple(frame.columns) == schema.CUSTOMER360_COLUMNS
    assert len(frame) >= 5000 and frame["customer_id"].is_unique
    assert set(frame["plan_tier"]) == set(schema.PLAN_TIERS)
    assert frame["nps_score"].between(0, 10).all() and frame["churned"].isin([0, 1]).all()
    assert 0.15 <= frame["churned"].mean() <= 0.25
    feedback_ids = set(
        pd.read_json(DATA / schema.FEEDBACK_FILE, lines=True, dtype=False)["customer_id"]
    )
    assert feedback_ids <= set(frame["customer_id"])


def test_churn_has_a_plan_by_usage_interaction():
    frame = pd.read_csv(DATA / schema.CUSTOMER360_FILE)
    idle = frame["logins_30d"] / frame["seats"] < 2.5
    rate = frame.groupby([frame["plan_tier"], idle])["churned"].mean()
    # unused seats raise churn a lot on Team/Business, hardly at all on Enterprise
    assert rate["Team", True] - rate["Team", False] > 0.2
    assert rate["Business", True] - rate["Business", False] > 0.2
    assert abs(rate["Enterprise", True] - rate["Enterprise", False]) < 0.15


def test_data_card_numbers_match_the_files():
    card = (DATA / "README.md").read_text(encoding="utf-8")
    feedback = pd.read_json(DATA / schema.FEEDBACK_FILE, lines=True, dtype=False)
    customers = pd.read_csv(DATA / schema.CUSTOMER360_FILE)
    counts = feedback["category"].value_counts()
    for category, count in counts.items():
        assert (
            f"| {category} | {count:,} | {count / len(feedback):.1%}".replace("%", " %")
            in card
        ), category
    assert f"{len(feedback):,} comments" in card and f"{len(customers):,} customers" in card
    churned = int(customers["churned"].sum())
    assert (
        f"{churned:,} churned of {len(customers):,} ({churned / len(customers):.1%}".replace(
            "%", " %"
        )
        in card
    )
    assert f"{feedback['customer_id'].nunique():,} distinct customers" in card
    lengths = feedback["feedback_text"].str.len()
    assert (
        f"{lengths.min()}–{lengths.max()} characters, median {lengths.median():.0f}" in card
    )
    assert (
        f"{(lengths > 32).mean():.0%} of comments are longer than 32".replace("%", " %")
        in card
    )
    assert f"{(lengths > 64).mean():.0%} longer than 64".replace("%", " %") in card
    rates = customers.groupby("plan_tier")["churned"].mean()
    for plan, rate in rates.items():
        assert f"{plan} {rate:.1%}".replace("%", " %") in card, plan


def test_usage_grid_schema_and_weekly_pattern():
    grid = pd.read_csv(DATA / schema.USAGE_GRID_FILE)
    customers = pd.read_csv(DATA / schema.CUSTOMER360_FILE).set_index("customer_id")
    assert tuple(grid.columns) == schema.USAGE_GRID_COLUMNS
    assert len(grid) == N_GRID_CUSTOMERS * 7 * 24
    assert (grid.groupby("customer_id").size() == 168).all()
    assert grid["day_of_week"].between(0, 6).all() and grid["hour"].between(0, 23).all()
    assert (grid["active_users"] >= 0).all()
    assert (
        grid["active_users"] <= customers.loc[grid["customer_id"], "seats"].to_numpy()
    ).all()
    assert (DATA / schema.USAGE_GRID_FILE).stat().st_size < 2_000_000
    # working hours beat nights, weekdays beat weekends
    by_hour = grid.groupby("hour")["active_users"].mean()
    assert by_hour[10] > 10 * by_hour[3]
    by_day = grid.groupby("day_of_week")["active_users"].mean()
    assert by_day[:5].min() > 3 * by_day[5:].max()
    # churners fade out over the week; customers who stay do not
    churned = customers.loc[grid["customer_id"], "churned"].to_numpy() == 1
    per_day = grid.groupby([churned, grid["day_of_week"]])["active_users"].mean()
    assert per_day[True, 4] < 0.7 * per_day[True, 0]
    assert per_day[False, 4] > 0.9 * per_day[False, 0]


def test_events_schema_order_and_lockouts():
    records = [
        json.loads(line)
        for line in (DATA / schema.EVENTS_FILE).read_text(encoding="utf-8").splitlines()
    ]
    assert all(tuple(record) == schema.EVENTS_COLUMNS for record in records)
    assert {r["event"] for r in records} == set(schema.EVENT_TYPES)
    assert all(
        re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", r["timestamp"])
        for r in records
    )
    sessions: dict[str, list[dict]] = {}
    for record in records:
        sessions.setdefault(record["session_id"], []).append(record)
    assert list(sessions) == [f"S-{i:06d}" for i in range(1, N_SESSIONS + 1)]
    starts = [steps[0]["timestamp"] for steps in sessions.values()]
    assert starts == sorted(starts)
    for steps in sessions.values():
        assert [s["timestamp"] for s in steps] == sorted(s["timestamp"] for s in steps)
        assert len({s["customer_id"] for s in steps}) == 1
    # the same lock-out opening ends both ways, so the order of what follows carries the meaning
    lockout = ("login_failed", "login_failed", "password_reset")
    following = [
        tuple(s["event"] for s in steps)[3]
        for steps in sessions.values()
        if tuple(s["event"] for s in steps)[:3] == lockout
    ]
    assert (
        following.count("logout") + following.count("contact_support") > 50
        and following.count("login") > 50
    )
    customer_ids = set(pd.read_csv(DATA / schema.CUSTOMER360_FILE)["customer_id"])
    assert {r["customer_id"] for r in records} <= customer_ids


def test_data_card_numbers_for_the_grid_and_the_events():
    card = " ".join(
        (DATA / "README.md").read_text(encoding="utf-8").split()
    )  # line breaks as spaces
    grid = pd.read_csv(DATA / schema.USAGE_GRID_FILE)
    customers = pd.read_csv(DATA / schema.CUSTOMER360_FILE).set_index("customer_id")
    ids = grid["customer_id"].drop_duplicates()
    assert f"{len(grid):,} cells ({len(ids)} customers × 7 days × 24 hours)" in card
    assert f"({int(customers.loc[ids, 'churned'].sum())} of them churned)" in card
    assert f"0–{grid['active_users'].max():,} (never more" in card
    events = pd.read_json(DATA / schema.EVENTS_FILE, lines=True, dtype=False)
    sessions = events.groupby("session_id", sort=False)["event"].agg(tuple)
    customers_with_events = events["customer_id"].nunique()
    assert (
        f"{len(events):,} events in {len(sessions):,} sessions of {customers_with_events:,} "
        "distinct customers"
    ) in card
    lengths = sessions.str.len()
    assert (
        f"Sessions hold {lengths.min()}–{lengths.max()} events (median {lengths.median():.0f})"
        in card
    )
    for event, count in events["event"].value_counts().items():
        assert f"{event} {count:,}" in card, event
    assert (
        f"About {(sessions.str[-1] != 'logout').mean():.0%} of sessions end without".replace(
            "%", " %"
        )
        in card
    )
    lockout = sessions[
        sessions.str[:3] == ("login_failed", "login_failed", "password_reset")
    ].str[3]
    assert f"In {int((lockout != 'login').sum())} sessions the" in card
    assert f"in {int((lockout == 'login').sum())} the reset works" in card
    assert f"`{events['timestamp'].min()}` … `{events['timestamp'].max()}`" in card
