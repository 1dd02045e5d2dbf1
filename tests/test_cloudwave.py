"""The CloudWave generator: committed data files are exactly what the generator writes."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from transformer_lab import cloudwave

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("cloudwave")
    cloudwave.main(["--out", str(out)])
    return out


@pytest.mark.parametrize("name", [cloudwave.FEEDBACK_FILE, cloudwave.CUSTOMER360_FILE])
def test_regeneration_is_byte_identical_to_committed_files(regenerated, name):
    fresh, committed = (regenerated / name).read_bytes(), (DATA / name).read_bytes()
    assert fresh == committed, (
        f"data/{name} differs from what the generator writes now: run `make data` and commit, "
        "or undo the change to transformer_lab/cloudwave.py"
    )


def test_generation_is_seeded():
    assert cloudwave.generate_customers(50) == cloudwave.generate_customers(50)
    assert cloudwave.generate_customers(50, seed=1) != cloudwave.generate_customers(50, seed=2)
    ids = ["C-00001", "C-00002"]
    assert cloudwave.generate_feedback(ids, 40) == cloudwave.generate_feedback(ids, 40)


def test_feedback_schema_and_shape():
    lines = (DATA / cloudwave.FEEDBACK_FILE).read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) >= 10_000
    assert all(tuple(record) == cloudwave.FEEDBACK_COLUMNS for record in records)
    assert [r["feedback_id"] for r in records] == [f"FB-{i:06d}" for i in range(1, len(records) + 1)]
    assert [r["created_at"] for r in records] == sorted(r["created_at"] for r in records)
    assert {r["channel"] for r in records} == set(cloudwave.CHANNELS)
    assert {r["category"] for r in records} == set(cloudwave.CATEGORIES)
    assert {r["rating"] for r in records} == {1, 2, 3, 4, 5}
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", r["created_at"]) for r in records)


def test_feedback_is_realistic_enough_for_chapter_4():
    frame = pd.read_json(DATA / cloudwave.FEEDBACK_FILE, lines=True, dtype=False)
    praise = (frame["category"] == "praise").mean()
    assert 0.25 <= praise <= 0.30, f"praise should be a minority of 25-30 %, got {praise:.1%}"
    lengths = frame["feedback_text"].str.len()
    assert (lengths > 32).mean() > 0.8 and lengths.min() < 32 < lengths.max()
    text = frame["feedback_text"].str.lower()
    negated = text.str.contains(r"\b(?:not|never|no)\b|n't")
    for category, group in negated.groupby(frame["category"]):
        assert group.mean() > 0.15, f"negations should occur in every category, {category}: {group.mean():.1%}"
    assert frame["feedback_text"].duplicated().mean() < 0.1


def test_mirrored_pairs_use_the_same_characters():
    # the order-sensitive pairs really are indistinguishable to a bag of characters
    for praise, category, complaint in cloudwave.MIRRORED:
        assert sorted(praise) == sorted(complaint), (praise, complaint)
        assert category in cloudwave.CATEGORIES[1:]


def test_customer360_schema_and_churn():
    frame = pd.read_csv(DATA / cloudwave.CUSTOMER360_FILE)
    assert tuple(frame.columns) == cloudwave.CUSTOMER360_COLUMNS
    assert len(frame) >= 5000 and frame["customer_id"].is_unique
    assert set(frame["plan_tier"]) == set(cloudwave.PLAN_TIERS)
    assert frame["nps_score"].between(0, 10).all() and frame["churned"].isin([0, 1]).all()
    assert 0.15 <= frame["churned"].mean() <= 0.25
    feedback_ids = set(pd.read_json(DATA / cloudwave.FEEDBACK_FILE, lines=True, dtype=False)["customer_id"])
    assert feedback_ids <= set(frame["customer_id"])


def test_churn_has_a_plan_by_usage_interaction():
    frame = pd.read_csv(DATA / cloudwave.CUSTOMER360_FILE)
    idle = frame["logins_30d"] / frame["seats"] < 2.5
    rate = frame.groupby([frame["plan_tier"], idle])["churned"].mean()
    # unused seats raise churn a lot on Team/Business, hardly at all on Enterprise
    assert rate["Team", True] - rate["Team", False] > 0.2
    assert rate["Business", True] - rate["Business", False] > 0.2
    assert abs(rate["Enterprise", True] - rate["Enterprise", False]) < 0.15


def test_data_card_numbers_match_the_files():
    card = (DATA / "README.md").read_text(encoding="utf-8")
    feedback = pd.read_json(DATA / cloudwave.FEEDBACK_FILE, lines=True, dtype=False)
    customers = pd.read_csv(DATA / cloudwave.CUSTOMER360_FILE)
    counts = feedback["category"].value_counts()
    for category, count in counts.items():
        assert f"| {category} | {count:,} | {count / len(feedback):.1%}".replace("%", " %") in card, category
    assert f"{len(feedback):,} comments" in card and f"{len(customers):,} customers" in card
    churned = int(customers["churned"].sum())
    assert f"{churned:,} churned of {len(customers):,} ({churned / len(customers):.1%}".replace("%", " %") in card
    assert f"{feedback['customer_id'].nunique():,} distinct customers" in card
    lengths = feedback["feedback_text"].str.len()
    assert f"{lengths.min()}–{lengths.max()} characters, median {lengths.median():.0f}" in card
    assert f"{(lengths > 32).mean():.0%} of comments are longer than 32".replace("%", " %") in card
    assert f"{(lengths > 64).mean():.0%} longer than 64".replace("%", " %") in card
    rates = customers.groupby("plan_tier")["churned"].mean()
    for plan, rate in rates.items():
        assert f"{plan} {rate:.1%}".replace("%", " %") in card, plan


def test_generate_feedback_rejects_no_customers():
    with pytest.raises(ValueError, match="at least one customer id"):
        cloudwave.generate_feedback([], 3)
