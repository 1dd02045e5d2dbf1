"""The Customer 360 bake-off: trees, a linear model and two neural networks on one churn table.

For every seed the table is split once, stratified by the label, and *every* model is fitted on
that same training split and scored on that same test split. Preprocessing — standardising the six
numeric columns, one-hot encoding the plan tier — sits inside each model's scikit-learn
``Pipeline``, so its statistics are learnt from the training rows only.

Rows are customers, N of them; F = 10 columns come out of the preprocessor (6 scaled numbers, then
4 plan-tier indicators), and the transformer turns them into T = 7 tokens, one per original
feature, each of width D.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits
from torch import nn

from transformer_lab.cloudwave.schema import PLAN_TIERS
from transformer_lab.encoder import check_heads
from transformer_lab.metrics import accuracy
from transformer_lab.reproducibility import seed_everything
from transformer_lab.timing import stopwatch
from transformer_lab.training import adam, train_epoch
from transformer_lab.validation import (
    describe,
    require_binary_labels,
    require_finite,
    require_int,
    require_number,
    require_rank,
    require_tensor,
)

NUMERIC_COLUMNS = (
    "tenure_months",
    "seats",
    "monthly_spend",
    "support_tickets_90d",
    "logins_30d",
    "nps_score",
)
CATEGORICAL_COLUMN = "plan_tier"
FEATURE_COLUMNS = NUMERIC_COLUMNS + (CATEGORICAL_COLUMN,)
LABEL_COLUMN = "churned"
MODEL_NAMES = ("gradient-boosted trees", "logistic regression", "MLP", "transformer")


def check_frame(frame: pd.DataFrame) -> None:
    """Raise ``TypeError``/``ValueError`` unless ``frame`` looks like the Customer 360 table.

    Needs the 7 feature columns and a 0/1 ``churned`` label with both classes, no missing values,
    and plan tiers drawn from ``PLAN_TIERS``.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in FEATURE_COLUMNS + (LABEL_COLUMN,) if c not in frame.columns]
    if missing:
        raise ValueError(
            f"frame is missing column(s) {missing}; expected {list(FEATURE_COLUMNS) + [LABEL_COLUMN]}, "
            f"got {list(frame.columns)}"
        )
    used = frame[list(FEATURE_COLUMNS) + [LABEL_COLUMN]]
    if used.isna().any().any():
        raise ValueError(
            f"frame has missing values in {used.columns[used.isna().any()].tolist()}"
        )
    labels = set(pd.unique(frame[LABEL_COLUMN]).tolist())
    if labels != {0, 1}:
        raise ValueError(
            f"{LABEL_COLUMN} must hold both classes 0 and 1 and nothing else, got {sorted(labels)}"
        )
    unknown = sorted(set(frame[CATEGORICAL_COLUMN]) - set(PLAN_TIERS))
    if unknown:
        raise ValueError(
            f"{CATEGORICAL_COLUMN} must be one of {list(PLAN_TIERS)}, got unknown {unknown}"
        )


def stratified_split(
    labels: Sequence[int], seed: int, test_size: float = 0.25
) -> tuple[np.ndarray, np.ndarray]:
    """Split row positions 0..N-1 into sorted (train, test) arrays with the same class shares.

    The same ``labels`` and ``seed`` always give the same split; every model of a bake-off run
    receives exactly these positions.
    """
    require_number("test_size", test_size, above=0.0, below=1.0)
    labels = np.asarray(labels)
    train, test = train_test_split(
        np.arange(len(labels)), test_size=test_size, stratify=labels, random_state=seed
    )
    return np.sort(train), np.sort(test)


def make_preprocessor() -> ColumnTransformer:
    """Scale the numeric columns and one-hot the plan tier: (N, 7) frame → (N, F=10) array.

    Output columns: the 6 ``NUMERIC_COLUMNS`` standardised, then one indicator per ``PLAN_TIERS``.
    The categories are fixed, so a tier absent from a small training split still gets its column.
    """
    return ColumnTransformer(
        [
            ("numeric", StandardScaler(), list(NUMERIC_COLUMNS)),
            (
                "plan",
                OneHotEncoder(categories=[list(PLAN_TIERS)], sparse_output=False),
                [CATEGORICAL_COLUMN],
            ),
        ],
        verbose_feature_names_out=False,
    )


def token_of_column() -> list[int]:
    """For each of the F = 10 preprocessed columns, the index of the feature token it feeds.

    The numeric columns get tokens 0..5; all four plan-tier indicators feed token 6, so the
    transformer sees 7 tokens, one per original feature.
    """
    return list(range(len(NUMERIC_COLUMNS))) + [len(NUMERIC_COLUMNS)] * len(PLAN_TIERS)


class ColumnEmbedding(nn.Module):
    """Turn a row of F preprocessed numbers into T feature tokens of width D (``d_model``).

    token_t = bias_t + Σ_{columns j of feature t} x_j · weight_j. A numeric feature gives a learned
    direction scaled by its value (plus a learned offset); for the one-hot plan tier exactly one
    indicator is 1, so its token is an embedding lookup. Each feature has its own parameters, so
    the tokens say which column they came from without a position embedding.
    x (B, F) → tokens (B, T, D).
    """

    def __init__(self, token_of_column: Sequence[int], d_model: int):
        super().__init__()
        d_model = require_int("d_model", d_model, minimum=1)
        n_tokens = max(token_of_column) + 1
        if sorted(set(token_of_column)) != list(range(n_tokens)):
            raise ValueError(
                f"token_of_column must use every token 0..{n_tokens - 1}, got {list(token_of_column)}"
            )
        assignment = torch.zeros(len(token_of_column), n_tokens)
        assignment[torch.arange(len(token_of_column)), torch.tensor(token_of_column)] = 1.0
        self.register_buffer("assignment", assignment)  # (F, T)
        self.weight = nn.Parameter(
            torch.randn(len(token_of_column), d_model) * 0.1
        )  # (F, D)
        self.bias = nn.Parameter(torch.randn(n_tokens, d_model) * 0.1)  # (T, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_tensor("x", x)
        require_rank("x", x, ("B", "F"))
        if x.shape[1] != self.weight.shape[0]:
            raise ValueError(
                f"x should have F={self.weight.shape[0]} columns, got shape {describe(x.shape)}"
            )
        scaled = x[:, :, None] * self.weight[None]  # (B, F, D)
        return torch.einsum("bfd,ft->btd", scaled, self.assignment) + self.bias[None]


class TabularTransformer(nn.Module):
    """Churn or not, from one table row: embed each column as a token, one encoder layer, mean
    over the tokens, linear head.

    x (B, F) → logits (B,). Every token is a real feature, so the mean needs no padding mask.
    """

    def __init__(
        self,
        token_of_column: Sequence[int],
        d_model: int = 16,
        nhead: int = 2,
        d_ff: int = 32,
        dropout: float = 0.1,
    ):
        super().__init__()
        check_heads(d_model, nhead)
        self.embed = ColumnEmbedding(token_of_column, d_model)
        self.encoder = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=d_ff, dropout=dropout, batch_first=True
        )
        self.head = nn.Linear(d_model, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.encoder(self.embed(x))  # (B, T, D)
        return self.head(tokens.mean(dim=1)).squeeze(-1)


def make_mlp(n_inputs: int, hidden: int = 32) -> nn.Module:
    """Two hidden ReLU layers: x (B, n_inputs) → logits (B, 1)."""
    return nn.Sequential(
        nn.Linear(n_inputs, hidden),
        nn.ReLU(),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Linear(hidden, 1),
    )


class TorchClassifier(ClassifierMixin, BaseEstimator):
    """A scikit-learn-style binary classifier around a PyTorch network, so it fits in a Pipeline.

    ``kind`` is ``"mlp"`` or ``"transformer"``. ``fit`` runs Adam on binary cross-entropy for a
    fixed number of epochs, shuffling with a generator seeded by ``seed``; ``decision_function``
    returns logits (N,), ``predict_proba`` (N, 2).
    """

    def __init__(
        self,
        kind: str = "mlp",
        epochs: int = 25,
        learning_rate: float = 5e-3,
        batch_size: int = 256,
        weight_decay: float = 1e-4,
        seed: int = 0,
    ):
        self.kind = kind
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.seed = seed

    def _build(self, n_features: int) -> nn.Module:
        if self.kind == "mlp":
            return make_mlp(n_features)
        if self.kind == "transformer":
            columns = token_of_column()
            if n_features != len(columns):
                raise ValueError(
                    f"the transformer expects the {len(columns)} preprocessed columns, got {n_features}"
                )
            return TabularTransformer(columns)
        raise ValueError(f"kind must be 'mlp' or 'transformer', got {self.kind!r}")

    def fit(self, X, y) -> "TorchClassifier":
        """X (N, F) numbers, y (N,) in {0, 1}."""
        x = _as_matrix(X)
        target = torch.as_tensor(np.asarray(y), dtype=torch.float32)
        if target.shape != (x.shape[0],):
            raise ValueError(
                f"y should have shape ({x.shape[0]},) to match X, got {describe(target.shape)}"
            )
        require_binary_labels("y", target)
        generator = seed_everything(self.seed)
        self.module_ = self._build(x.shape[1])
        optimizer = adam(self.module_.parameters(), self.learning_rate, self.weight_decay)
        loss_fn = nn.BCEWithLogitsLoss()
        for _ in range(self.epochs):
            train_epoch(
                self.module_, optimizer, loss_fn, (x, target), self.batch_size, generator
            )
        self.module_.eval()
        self.classes_ = np.array([0, 1])
        return self

    def decision_function(self, X) -> np.ndarray:
        """Logits (N,): positive means 'churn' is more likely than not."""
        with torch.inference_mode():
            return self.module_(_as_matrix(X)).reshape(-1).numpy().astype(np.float64)

    def predict_proba(self, X) -> np.ndarray:
        churn = 1.0 / (1.0 + np.exp(-self.decision_function(X)))
        return np.column_stack([1.0 - churn, churn])

    def predict(self, X) -> np.ndarray:
        return (self.decision_function(X) > 0).astype(int)


def _as_matrix(X) -> torch.Tensor:
    """A 2-D float32 tensor (N, F) from an array-like."""
    x = torch.as_tensor(np.asarray(X, dtype=np.float32))
    require_rank("X", x, ("N", "F"))
    return require_finite("X", x)


def make_models(seed: int) -> dict[str, BaseEstimator]:
    """The four unfitted models of the bake-off, seeded with ``seed``, keyed by ``MODEL_NAMES``."""
    return {
        "gradient-boosted trees": HistGradientBoostingClassifier(
            early_stopping=False, random_state=seed
        ),
        "logistic regression": LogisticRegression(max_iter=1000, random_state=seed),
        # Training lengths chosen by measurement: more epochs cost seconds on the page; they lift
        # the transformer's AUC a little, but not up to the trees'.
        "MLP": TorchClassifier("mlp", epochs=10, seed=seed),
        "transformer": TorchClassifier(
            "transformer", epochs=3, learning_rate=2e-2, seed=seed
        ),
    }


def make_pipeline(model: BaseEstimator) -> Pipeline:
    """Preprocessing then ``model``; fitting the pipeline fits both on the same (training) rows."""
    return Pipeline([("prepare", make_preprocessor()), ("model", model)])


CALL_LIST_SHARE = (
    0.1  # the top tenth of the ranking: the customers a retention team would call
)


def precision_at_top(
    labels: Sequence[int], scores: Sequence[float], share: float = CALL_LIST_SHARE
) -> float:
    """Share of positives among the ``share`` of rows with the highest ``scores`` (precision at k).

    labels (N,) in {0, 1}, scores (N,) any real numbers (logits or probabilities). k is
    ``share × N`` rounded, at least 1; ties in the scores are broken by row order (stable sort).
    Divided by the base rate ``mean(labels)`` it is the *lift* of the top of the list.
    """
    labels, scores = np.asarray(labels), np.asarray(scores, dtype=np.float64)
    if labels.ndim != 1 or labels.shape != scores.shape or labels.size == 0:
        raise ValueError(
            f"labels and scores must both have shape (N,) with N >= 1, got {labels.shape} and {scores.shape}"
        )
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    k = max(1, round(share * labels.size))
    top = np.argsort(-scores, kind="stable")[:k]
    return float(labels[top].mean())


def fit_and_score(
    pipeline: Pipeline, frame: pd.DataFrame, train: np.ndarray, test: np.ndarray
) -> dict[str, float]:
    """Fit ``pipeline`` on rows ``train`` of ``frame`` only, score it on rows ``test``.

    Returns ROC AUC, accuracy (logit threshold 0, i.e. probability 0.5) and precision in the top
    tenth of the ranking (``precision_at_top``) on the test rows, and the wall-clock seconds of
    fitting (preprocessing included), measured on one thread.
    """
    overlap = np.intersect1d(train, test)
    if overlap.size:
        raise ValueError(
            f"train and test must not share rows, got {overlap.size} shared, e.g. {overlap[:3].tolist()}"
        )
    features, labels = frame[list(FEATURE_COLUMNS)], frame[LABEL_COLUMN].to_numpy()
    with threadpool_limits(limits=1):
        with stopwatch() as fitting:
            pipeline.fit(features.iloc[train], labels[train])
        logits = np.asarray(
            pipeline.decision_function(features.iloc[test]), dtype=np.float64
        )
    return {
        "roc_auc": float(roc_auc_score(labels[test], logits)),
        "accuracy": accuracy(
            torch.from_numpy(logits), torch.from_numpy(labels[test].astype(np.float64))
        ),
        "precision_at_top": precision_at_top(labels[test], logits),
        "train_seconds": fitting["seconds"],
    }


def warm_up_models(
    frame: pd.DataFrame, models: Iterable[BaseEstimator], train: np.ndarray, rows: int = 50
) -> None:
    """Fit each model once, untimed, on ``rows`` training rows per class, then throw the fit away.

    The first fit in a process pays one-off costs (PyTorch's first autograd and optimizer calls,
    lazy imports, memory allocation) that have nothing to do with the model. Warming up keeps
    them out of the timed fits; the models passed in are cloned, so they stay unfitted. A network
    (a model with an ``epochs`` parameter) trains for a single epoch: one pass pays those costs.
    """
    labels = frame[LABEL_COLUMN].to_numpy()
    train = np.asarray(train)
    subset = np.concatenate([train[labels[train] == label][:rows] for label in (0, 1)])
    with threadpool_limits(limits=1):  # the same single thread as the timed fits
        for model in models:
            model = clone(model)
            if "epochs" in model.get_params():
                model.set_params(epochs=1)
            make_pipeline(model).fit(
                frame.iloc[subset][list(FEATURE_COLUMNS)], labels[subset]
            )


def run_bakeoff(
    frame: pd.DataFrame,
    seeds: Sequence[int] = (0, 1, 2),
    test_size: float = 0.25,
    models: Callable[[int], Mapping[str, BaseEstimator]] = make_models,
    warm_up: bool = True,
) -> pd.DataFrame:
    """Fit every model on every seed's shared stratified split; one row per model × seed.

    Each seed draws one split (used by every model) and seeds every model. Columns: ``model``,
    ``seed``, ``roc_auc``, ``accuracy``, ``precision_at_top`` (churners among the top tenth of the
    test ranking), ``base_rate`` (churners among all test rows), ``majority_accuracy`` (always
    predicting the training majority class), ``train_seconds``, ``n_train``, ``n_test``. With ``warm_up`` (see
    ``warm_up_models``) one-off start-up costs stay out of the first seed's timings.
    """
    check_frame(frame)
    if len(seeds) == 0:
        raise ValueError("seeds must hold at least one seed, got an empty sequence")
    labels = frame[LABEL_COLUMN].to_numpy()
    if warm_up:
        warm_up_models(
            frame,
            models(seeds[0]).values(),
            stratified_split(labels, seeds[0], test_size)[0],
        )
    rows = []
    for seed in seeds:
        train, test = stratified_split(labels, seed, test_size)
        majority = int(labels[train].mean() > 0.5)
        for name, model in models(seed).items():
            scores = fit_and_score(make_pipeline(model), frame, train, test)
            rows.append(
                {
                    "model": name,
                    "seed": seed,
                    **scores,
                    "base_rate": float(labels[test].mean()),
                    "majority_accuracy": float((labels[test] == majority).mean()),
                    "n_train": len(train),
                    "n_test": len(test),
                }
            )
    columns = [
        "model",
        "seed",
        "roc_auc",
        "accuracy",
        "precision_at_top",
        "base_rate",
        "majority_accuracy",
        "train_seconds",
        "n_train",
        "n_test",
    ]
    return pd.DataFrame(rows)[columns]


def summarise(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds per model (rows in first-seen order).

    Columns: ``auc_mean``, ``auc_std``, ``accuracy_mean``, ``accuracy_std``, ``train_seconds_mean``,
    ``seeds``. The standard deviation is the sample one (ddof=1); it is NaN for a single seed.
    """
    needed = {"model", "seed", "roc_auc", "accuracy", "train_seconds"}
    if not isinstance(results, pd.DataFrame) or not needed <= set(results.columns):
        got = (
            list(results.columns)
            if isinstance(results, pd.DataFrame)
            else type(results).__name__
        )
        raise ValueError(
            f"results must be a run_bakeoff DataFrame with columns {sorted(needed)}, got {got}"
        )
    grouped = results.groupby("model", sort=False)
    return pd.DataFrame(
        {
            "auc_mean": grouped["roc_auc"].mean(),
            "auc_std": grouped["roc_auc"].std(),
            "accuracy_mean": grouped["accuracy"].mean(),
            "accuracy_std": grouped["accuracy"].std(),
            "train_seconds_mean": grouped["train_seconds"].mean(),
            "seeds": grouped["seed"].nunique(),
        }
    )


def paired_difference(
    results: pd.DataFrame, first: str, second: str, metric: str = "roc_auc"
) -> pd.Series:
    """``metric`` of model ``first`` minus that of ``second``, seed by seed (same split each time).

    Pairing by seed removes the split-to-split noise both models share. Returns a Series indexed
    by seed.
    """
    if metric not in results.columns:
        raise ValueError(
            f"metric must be a column of results such as 'roc_auc' or 'accuracy', got {metric!r}"
        )
    table = results.pivot(index="seed", columns="model", values=metric)
    for name in (first, second):
        if name not in table.columns:
            raise ValueError(f"model {name!r} is not in results; got {list(table.columns)}")
    return (table[first] - table[second]).rename(f"{first} - {second}")


def consistency(differences: pd.Series) -> str:
    """Describe paired differences honestly: 'ahead on every seed', 'behind on every seed', or a count.

    Mixed (or tied) results read e.g. 'ahead on 2 of 3 seeds'.
    """
    if not isinstance(differences, pd.Series):
        raise TypeError(
            f"differences must be a pandas Series from paired_difference, got {type(differences).__name__}"
        )
    if len(differences) == 0:
        raise ValueError("differences must hold at least one seed, got none")
    if (differences > 0).all():
        return "ahead on every seed"
    if (differences < 0).all():
        return "behind on every seed"
    return f"ahead on {int((differences > 0).sum())} of {len(differences)} seeds"
