import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import BaseEstimator, ClassifierMixin

from transformer_lab.bakeoff import (
    FEATURE_COLUMNS,
    LABEL_COLUMN,
    MODEL_NAMES,
    NUMERIC_COLUMNS,
    PLAN_TIERS,
    ColumnEmbedding,
    TabularTransformer,
    TorchClassifier,
    check_frame,
    consistency,
    fit_and_score,
    make_models,
    make_pipeline,
    make_preprocessor,
    paired_difference,
    precision_at_top,
    run_bakeoff,
    stratified_split,
    summarise,
    token_of_column,
    warm_up_models,
)
from transformer_lab.cloudwave.schema import CUSTOMER360_COLUMNS


def customer_frame(n: int = 400, seed: int = 0, signal: float = 3.0) -> pd.DataFrame:
    """A small table with the Customer 360 schema; churn is driven by logins, tickets and NPS."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "customer_id": [f"C{i:05d}" for i in range(n)],
            "tenure_months": rng.integers(1, 60, n),
            "plan_tier": rng.choice(PLAN_TIERS, n),
            "seats": rng.integers(1, 200, n),
            "monthly_spend": rng.gamma(2.0, 300.0, n).round(2),
            "support_tickets_90d": rng.poisson(2.0, n),
            "logins_30d": rng.integers(0, 40, n),
            "nps_score": rng.integers(0, 11, n),
        }
    )
    risk = (
        -(frame["logins_30d"] - 20) / 10
        + (frame["support_tickets_90d"] - 2) / 1.5
        - (frame["nps_score"] - 5) / 3
    )
    noise = rng.normal(0.0, 1.0, n)
    frame["churned"] = (signal * risk + noise * 2.0 > 0).astype(int)
    return frame


class SpyModel(ClassifierMixin, BaseEstimator):
    """Records the (preprocessed) matrices it is fitted on and asked to score."""

    def fit(self, X, y):
        self.fitted_on_ = np.array(X, copy=True)
        self.labels_ = np.array(y, copy=True)
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X):
        self.scored_on_ = np.array(X, copy=True)
        return np.asarray(X)[:, NUMERIC_COLUMNS.index("support_tickets_90d")]


@pytest.fixture(scope="module")
def frame():
    return customer_frame()


@pytest.fixture(scope="module")
def results(frame):
    return run_bakeoff(frame, seeds=(0, 1))


def test_columns_match_the_customer360_schema():
    assert set(FEATURE_COLUMNS) | {LABEL_COLUMN, "customer_id"} == set(CUSTOMER360_COLUMNS)
    assert len(FEATURE_COLUMNS) == 7


def test_split_is_stratified_disjoint_complete_and_repeatable(frame):
    labels = frame["churned"].to_numpy()
    train, test = stratified_split(labels, seed=3, test_size=0.25)
    assert np.intersect1d(train, test).size == 0
    np.testing.assert_array_equal(
        np.sort(np.concatenate([train, test])), np.arange(len(frame))
    )
    assert len(test) == 100
    assert abs(labels[train].mean() - labels[test].mean()) < 0.02
    again = stratified_split(labels, seed=3, test_size=0.25)
    np.testing.assert_array_equal(train, again[0])
    other = stratified_split(labels, seed=4, test_size=0.25)
    assert not np.array_equal(test, other[1])


def test_every_model_gets_the_same_split_and_train_only_preprocessing(frame):
    spies = {}

    def spy_models(seed):
        spies[seed] = {name: SpyModel() for name in MODEL_NAMES}
        return spies[seed]

    run_bakeoff(frame, seeds=(0, 1), models=spy_models)
    labels = frame["churned"].to_numpy()
    for seed, models in spies.items():
        train, test = stratified_split(labels, seed)
        # what each model should see: the preprocessor fitted on the training rows only
        prepare = make_preprocessor().fit(frame.iloc[train])
        expected_train = prepare.transform(frame.iloc[train])
        expected_test = prepare.transform(frame.iloc[test])
        for spy in models.values():
            np.testing.assert_array_equal(spy.fitted_on_, expected_train)
            np.testing.assert_array_equal(spy.labels_, labels[train])
            np.testing.assert_array_equal(spy.scored_on_, expected_test)
    assert not np.array_equal(spies[0]["MLP"].fitted_on_, spies[1]["MLP"].fitted_on_)


def test_preprocessor_statistics_come_from_training_rows_only(frame):
    train, test = stratified_split(frame["churned"].to_numpy(), seed=0)
    pipeline = make_pipeline(SpyModel())
    fit_and_score(pipeline, frame, train, test)
    scaler = pipeline.named_steps["prepare"].named_transformers_["numeric"]
    training_rows = frame.iloc[train][list(NUMERIC_COLUMNS)].astype(float)
    np.testing.assert_allclose(scaler.mean_, training_rows.mean().to_numpy())
    np.testing.assert_allclose(scaler.var_, training_rows.var(ddof=0).to_numpy())
    all_rows = frame[list(NUMERIC_COLUMNS)].astype(float)
    assert not np.allclose(scaler.mean_, all_rows.mean().to_numpy())
    # the transformed training columns are exactly standardised; the test columns are not
    prepared = pipeline.named_steps["model"].fitted_on_[:, : len(NUMERIC_COLUMNS)]
    np.testing.assert_allclose(prepared.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(prepared.std(axis=0), 1.0)


def test_plan_tier_is_one_hot_in_a_fixed_order(frame):
    prepared = make_preprocessor().fit_transform(frame)
    assert prepared.shape == (len(frame), len(NUMERIC_COLUMNS) + len(PLAN_TIERS))
    indicators = prepared[:, len(NUMERIC_COLUMNS) :]
    np.testing.assert_array_equal(indicators.sum(axis=1), 1.0)
    expected = np.array([PLAN_TIERS.index(t) for t in frame["plan_tier"]])
    np.testing.assert_array_equal(indicators.argmax(axis=1), expected)


def test_results_have_one_row_per_model_and_seed(results):
    assert len(results) == len(MODEL_NAMES) * 2
    assert list(results["model"].unique()) == list(MODEL_NAMES)
    assert (results["n_train"] + results["n_test"] == 400).all()
    assert (results["train_seconds"] > 0).all()
    assert results[["roc_auc", "accuracy"]].apply(lambda c: c.between(0, 1)).all().all()


def test_every_model_learns_the_easy_table(results):
    assert (results["roc_auc"] > 0.85).all(), results
    assert (results["accuracy"] > results["majority_accuracy"] + 0.05).all(), results


def test_bakeoff_is_deterministic(frame, results):
    again = run_bakeoff(frame, seeds=(0, 1))
    pd.testing.assert_frame_equal(
        results.drop(columns="train_seconds"), again.drop(columns="train_seconds")
    )


def test_summary_and_paired_differences(results):
    summary = summarise(results)
    assert list(summary.index) == list(MODEL_NAMES)
    trees = results[results["model"] == "gradient-boosted trees"]["roc_auc"]
    assert summary.loc["gradient-boosted trees", "auc_mean"] == pytest.approx(trees.mean())
    assert summary.loc["gradient-boosted trees", "auc_std"] == pytest.approx(
        trees.std(ddof=1)
    )
    assert (summary["seeds"] == 2).all()
    gap = paired_difference(results, "gradient-boosted trees", "transformer")
    by_seed = results.set_index(["model", "seed"])["roc_auc"]
    for seed in (0, 1):
        assert gap[seed] == pytest.approx(
            by_seed["gradient-boosted trees", seed] - by_seed["transformer", seed]
        )


def test_consistency_words():
    assert consistency(pd.Series([0.01, 0.02])) == "ahead on every seed"
    assert consistency(pd.Series([-0.01, -0.02])) == "behind on every seed"
    assert consistency(pd.Series([0.01, -0.02, 0.03])) == "ahead on 2 of 3 seeds"
    assert consistency(pd.Series([0.0, 0.0])) == "ahead on 0 of 2 seeds"
    with pytest.raises(ValueError, match="at least one seed"):
        consistency(pd.Series([], dtype=float))


def test_column_embedding_gives_one_token_per_feature():
    torch.manual_seed(0)
    embed = ColumnEmbedding(token_of_column(), d_model=5)
    x = torch.randn(3, 10)
    x[:, 6:] = torch.tensor(
        [[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    )
    tokens = embed(x)
    assert tokens.shape == (3, len(FEATURE_COLUMNS), 5)
    with torch.no_grad():
        # a numeric token is value × its column's direction + its offset
        torch.testing.assert_close(
            tokens[:, 1], x[:, 1:2] * embed.weight[1] + embed.bias[1]
        )
        # the plan-tier token is an embedding lookup: offset + the chosen tier's vector
        torch.testing.assert_close(tokens[0, 6], embed.bias[6] + embed.weight[6 + 2])
        torch.testing.assert_close(tokens[2, 6], embed.bias[6] + embed.weight[6 + 3])


def test_tabular_transformer_maps_rows_to_logits():
    torch.manual_seed(0)
    net = TabularTransformer(token_of_column()).eval()
    assert net(torch.randn(4, 10)).shape == (4,)
    assert sum(p.numel() for p in net.parameters()) < 5_000


@pytest.mark.parametrize("kind", ["mlp", "transformer"])
def test_torch_classifier_is_seeded_and_learns(kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 10)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    first = TorchClassifier(kind, epochs=15, seed=1).fit(X, y)
    second = TorchClassifier(kind, epochs=15, seed=1).fit(X, y)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    assert (first.predict(X) == y).mean() > 0.9
    proba = first.predict_proba(X)
    assert proba.shape == (300, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_models_are_seeded():
    models = make_models(7)
    assert list(models) == list(MODEL_NAMES)
    assert models["gradient-boosted trees"].random_state == 7
    assert models["transformer"].seed == 7


def test_bad_input_is_explained(frame):
    with pytest.raises(TypeError, match="pandas DataFrame, got dict"):
        check_frame({"churned": [0, 1]})
    with pytest.raises(ValueError, match=r"missing column\(s\) \['nps_score'\]"):
        check_frame(frame.drop(columns="nps_score"))
    with pytest.raises(
        ValueError, match=r"both classes 0 and 1 and nothing else, got \[0, 1, 2\]"
    ):
        check_frame(frame.assign(churned=frame["churned"] * 2 + (frame.index == 0)))
    with pytest.raises(ValueError, match=r"got unknown \['Gold'\]"):
        check_frame(frame.assign(plan_tier=["Gold"] + list(frame["plan_tier"][1:])))
    with pytest.raises(ValueError, match=r"missing values in \['seats'\]"):
        check_frame(frame.assign(seats=[np.nan] + list(frame["seats"][1:])))
    with pytest.raises(
        ValueError, match="test_size must be strictly between 0 and 1, got 25"
    ):
        stratified_split(frame["churned"], seed=0, test_size=25)
    with pytest.raises(ValueError, match="must not share rows, got 1 shared"):
        fit_and_score(
            make_pipeline(SpyModel()), frame, np.arange(0, 200), np.arange(199, 400)
        )
    with pytest.raises(ValueError, match="seeds must hold at least one seed"):
        run_bakeoff(frame, seeds=())
    with pytest.raises(ValueError, match="kind must be 'mlp' or 'transformer', got 'cnn'"):
        TorchClassifier("cnn").fit(np.zeros((4, 10)), np.array([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="expects the 10 preprocessed columns, got 3"):
        TorchClassifier("transformer").fit(np.zeros((4, 3)), np.array([0, 1, 0, 1]))
    with pytest.raises(ValueError, match=r"y should have shape \(4,\)"):
        TorchClassifier("mlp").fit(np.zeros((4, 10)), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"X should have shape \(N, F\)"):
        TorchClassifier("mlp").fit(np.zeros(4), np.array([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="run_bakeoff DataFrame"):
        summarise(pd.DataFrame({"model": ["x"]}))
    with pytest.raises(ValueError, match="model 'CNN' is not in results"):
        paired_difference(
            run_bakeoff(frame, seeds=(0,), models=lambda s: {"a": SpyModel()}), "a", "CNN"
        )
    with pytest.raises(ValueError, match="every token 0..2"):
        ColumnEmbedding([0, 2, 2], d_model=4)
    with pytest.raises(ValueError, match="d_model=16 is not divisible by nhead=3"):
        TabularTransformer(token_of_column(), nhead=3)


def test_warm_up_fits_clones_on_a_small_slice_and_leaves_scores_alone(frame, results):
    fitted_sizes = []

    class CountingSpy(SpyModel):
        def fit(self, X, y):
            fitted_sizes.append((len(X), int(np.sum(y))))
            return super().fit(X, y)

    originals = [CountingSpy(), CountingSpy()]
    train, _ = stratified_split(frame["churned"].to_numpy(), seed=0)
    warm_up_models(frame, originals, train, rows=20)
    assert fitted_sizes == [(40, 20), (40, 20)]  # 20 rows of each class, once per model
    assert not any(hasattr(model, "fitted_on_") for model in originals)
    network = TorchClassifier("mlp", epochs=25)
    warm_up_models(frame, [network], train)
    assert network.epochs == 25 and not hasattr(
        network, "module_"
    )  # the clone trained, not the model
    cold = run_bakeoff(frame, seeds=(0, 1), warm_up=False)
    pd.testing.assert_frame_equal(
        results.drop(columns="train_seconds"), cold.drop(columns="train_seconds")
    )


def test_torch_classifier_refuses_bad_labels_and_nan_features():
    with pytest.raises(ValueError, match="y must hold only the classes 0 and 1"):
        TorchClassifier(epochs=1).fit(np.zeros((4, 3)), [0, 2, 0, 2])
    with pytest.raises(
        ValueError, match=r"X holds NaN or infinite values, first at position \(0, 0\)"
    ):
        TorchClassifier(epochs=1).fit(np.full((4, 3), np.nan), [0, 1, 0, 1])
    with pytest.raises(
        TypeError,
        match="differences must be a pandas Series from paired_difference, got list",
    ):
        consistency([1, 2])
    with pytest.raises(ValueError, match="test_size must be a finite number, got nan"):
        stratified_split([0, 1] * 10, seed=0, test_size=float("nan"))


def test_precision_at_top_counts_positives_at_the_top_of_the_ranking():
    labels = [1, 0, 1, 0, 0, 0, 0, 0, 0, 1]
    scores = [0.9, 0.8, 0.7, 0.1, 0.2, 0.3, 0.0, 0.05, 0.15, 0.95]
    # top 10 % of 10 rows = 1 row (score 0.95, a positive); top 30 % = 0.95, 0.9, 0.8
    assert precision_at_top(labels, scores, share=0.1) == 1.0
    assert precision_at_top(labels, scores, share=0.3) == pytest.approx(2 / 3)
    assert precision_at_top(labels, scores, share=1.0) == pytest.approx(
        0.3
    )  # the base rate


def test_precision_at_top_rejects_bad_input():
    with pytest.raises(ValueError, match="share must be in"):
        precision_at_top([1, 0], [0.5, 0.1], share=0)
    with pytest.raises(ValueError, match=r"shape \(N,\)"):
        precision_at_top([1, 0], [0.5], share=0.5)


def test_results_report_the_top_of_the_ranking(results):
    assert results["precision_at_top"].between(0, 1).all()
    # the models rank churners first: the top tenth holds more of them than the test set does
    assert (results["precision_at_top"] > results["base_rate"]).all(), results


@pytest.mark.parametrize("d_model", [0, -3, 2.5, True])
def test_column_embedding_refuses_a_width_that_is_not_a_positive_int(d_model):
    with pytest.raises((TypeError, ValueError), match="d_model must be an int"):
        ColumnEmbedding(token_of_column(), d_model=d_model)
