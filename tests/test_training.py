"""transformer_lab.training: determinism, the best-validation checkpoint, and input checks."""

import copy

import pytest
import torch
from torch import nn

from transformer_lab.encoder import count_parameters
from transformer_lab.set_classifier import SetClassifier
from transformer_lab.set_task import make_sets
from transformer_lab.training import TrainingResult, adam, evaluate, train_classifier

TRAIN = make_sets(384, seed=21)
VAL = make_sets(128, seed=22)


def fresh_model(seed=0, **kwargs):
    torch.manual_seed(seed)
    return SetClassifier(d_model=16, nhead=2, d_ff=16, **kwargs)


def test_same_seed_gives_an_identical_loss_history():
    model = fresh_model()
    twin = copy.deepcopy(model)
    first = train_classifier(model, TRAIN, VAL, epochs=3, batch_size=64, seed=5)
    second = train_classifier(twin, TRAIN, VAL, epochs=3, batch_size=64, seed=5)
    assert first.history == second.history
    assert first.accuracy == second.accuracy
    for a, b in zip(first.model.state_dict().values(), second.model.state_dict().values()):
        assert torch.equal(a, b)


def test_another_shuffle_seed_gives_another_history():
    model = fresh_model()
    twin = copy.deepcopy(model)
    first = train_classifier(model, TRAIN, VAL, epochs=2, batch_size=64, seed=5)
    second = train_classifier(twin, TRAIN, VAL, epochs=2, batch_size=64, seed=6)
    assert first.history != second.history


def test_result_keeps_the_best_validation_epoch():
    result = train_classifier(
        fresh_model(1), TRAIN, VAL, epochs=6, learning_rate=3e-2, batch_size=32
    )
    assert isinstance(result, TrainingResult)
    assert (
        len(result.history) == 6
        and len(result.train_loss) == len(result.validation_loss) == 6
    )
    best = min(range(6), key=lambda i: result.validation_loss[i])
    assert result.best_epoch == best + 1
    loss, acc = evaluate(result.model, VAL)
    assert loss == pytest.approx(result.validation_loss[best], abs=1e-6)
    assert acc == result.accuracy
    assert not result.model.training
    assert result.parameters == count_parameters(result.model)
    assert result.seconds > 0


def test_training_lowers_the_training_loss():
    result = train_classifier(fresh_model(2), TRAIN, VAL, epochs=5, batch_size=32)
    assert result.train_loss[-1] < result.train_loss[0]


def test_the_model_is_trained_in_place():
    model = fresh_model(3, use_attention=False)
    before = copy.deepcopy(model.state_dict())
    result = train_classifier(model, TRAIN, VAL, epochs=1)
    assert result.model is model
    assert any(not torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_bad_input_is_explained():
    model = fresh_model()
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        train_classifier("model", TRAIN, VAL)
    with pytest.raises(TypeError, match=r"train_data must be a tuple \(x, padding, y\)"):
        train_classifier(model, TRAIN[:2], VAL)
    x, padding, y = VAL
    with pytest.raises(ValueError, match=r"val_data y should have shape \(128,\)"):
        train_classifier(model, TRAIN, (x, padding, y[:5]))
    with pytest.raises(ValueError, match="epochs must be an int of at least 1, got 0"):
        train_classifier(model, TRAIN, VAL, epochs=0)
    with pytest.raises(ValueError, match="learning_rate must be positive"):
        train_classifier(model, TRAIN, VAL, learning_rate=0.0)
    with pytest.raises(TypeError, match="batch_size must be an int, got float 2.5"):
        train_classifier(model, TRAIN, VAL, batch_size=2.5)


def test_a_diverging_run_is_reported():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(1))

        def forward(self, x, padding):
            return self.w * x[:, 0, 0] + float("nan")

    with pytest.raises(ValueError, match="never finite"):
        train_classifier(Broken(), TRAIN, VAL, epochs=2)


def bad_labels(data, labels):
    x, padding, _ = data
    return (
        x,
        padding,
        torch.tensor(labels, dtype=torch.float32).repeat(len(x) // len(labels)),
    )


@pytest.mark.parametrize("labels", [[0.0, 2.0], [-1.0, 1.0], [0.3, 0.9]])
def test_labels_outside_0_and_1_are_refused_before_training(labels):
    with pytest.raises(ValueError, match="train_data y must hold only the classes 0 and 1"):
        train_classifier(fresh_model(), bad_labels(TRAIN, labels), VAL, epochs=1)
    with pytest.raises(ValueError, match="data y must hold only the classes 0 and 1"):
        evaluate(fresh_model(), bad_labels(VAL, labels))


@pytest.mark.parametrize(
    "learning_rate, error, message",
    [
        ("0.01", TypeError, "learning_rate must be a number, got str '0.01'"),
        (float("inf"), ValueError, "learning_rate must be a finite number, got inf"),
        (float("nan"), ValueError, "learning_rate must be a finite number, got nan"),
        (None, TypeError, "learning_rate must be a number, got NoneType None"),
    ],
)
def test_bad_learning_rates_are_refused_before_training(learning_rate, error, message):
    with pytest.raises(error, match=message):
        train_classifier(fresh_model(), TRAIN, VAL, learning_rate=learning_rate)


def test_nan_training_data_is_refused_but_padding_may_hold_anything():
    x, padding, y = TRAIN
    real = x.clone()
    real[3, 0, 1] = float("nan")  # position 0 is always a real token
    with pytest.raises(
        ValueError,
        match=r"train_data x holds NaN or infinite values, first at position \(3, 0, 1\)",
    ):
        train_classifier(fresh_model(), (real, padding, y), VAL, epochs=1)
    poisoned = x.masked_fill(padding[:, :, None], float("nan"))
    clean = train_classifier(fresh_model(), TRAIN, VAL, epochs=1)
    dirty = train_classifier(fresh_model(), (poisoned, padding, y), VAL, epochs=1)
    assert dirty.history == clean.history


def test_empty_data_and_integer_labels_are_refused():
    x, padding, y = VAL
    with pytest.raises(ValueError, match=r"val_data is empty: x has shape \(0, 8, 2\)"):
        train_classifier(fresh_model(), TRAIN, (x[:0], padding[:0], y[:0]), epochs=1)
    with pytest.raises(
        TypeError,
        match=r"train_data y must hold floating-point numbers \(binary cross-entropy needs "
        r"float labels\), got dtype torch.int64",
    ):
        train_classifier(
            fresh_model(), (TRAIN[0], TRAIN[1], TRAIN[2].long()), VAL, epochs=1
        )


def test_accuracy_fn_scores_the_best_model_and_nothing_else():
    model = fresh_model(2)
    twin = copy.deepcopy(model)
    calls = []

    def constant_accuracy(logits, labels):
        calls.append((tuple(logits.shape), tuple(labels.shape)))
        return 0.25

    default = train_classifier(model, TRAIN, VAL, epochs=2, batch_size=64)
    custom = train_classifier(
        twin, TRAIN, VAL, epochs=2, batch_size=64, accuracy_fn=constant_accuracy
    )
    assert (
        custom.history == default.history and custom.best_epoch == default.best_epoch
    )  # training untouched
    assert custom.accuracy == 0.25 and calls == [
        ((128,), (128,))
    ]  # called once, on the validation logits
    assert evaluate(custom.model, VAL, accuracy_fn=lambda logits, labels: 0.5)[1] == 0.5
    assert evaluate(custom.model, VAL)[1] == default.accuracy


def test_accuracy_fn_must_be_a_function():
    with pytest.raises(TypeError, match="accuracy_fn must be a function"):
        train_classifier(fresh_model(), TRAIN, VAL, epochs=1, accuracy_fn=0.5)


def test_fused_adam_matches_torch_optim_adam_bit_for_bit():
    """The book's Adam is torch.optim.Adam(fused=True) without its start-up cost: same updates,
    including weight decay and a parameter that gets no gradient (it must stay untouched)."""
    torch.manual_seed(0)
    reference = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 1))
    unused = nn.Parameter(torch.randn(3))
    ours = copy.deepcopy(reference)
    ours_unused = nn.Parameter(unused.detach().clone())
    torch_adam = torch.optim.Adam(
        [*reference.parameters(), unused], lr=3e-2, weight_decay=1e-3, fused=True
    )
    book_adam = adam([*ours.parameters(), ours_unused], 3e-2, weight_decay=1e-3)
    x = torch.randn(16, 5)
    for _ in range(25):
        for model, optimizer in ((reference, torch_adam), (ours, book_adam)):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    for theirs, mine in zip(reference.parameters(), ours.parameters()):
        assert torch.equal(theirs, mine)
    assert torch.equal(ours_unused, unused)


def test_fused_adam_refuses_what_its_kernel_cannot_train():
    with pytest.raises(ValueError, match="no parameters"):
        adam([], 1e-3)
    frozen = nn.Parameter(torch.zeros(2), requires_grad=False)
    with pytest.raises(ValueError, match="no parameters"):
        adam([frozen], 1e-3)


def test_patience_stops_early_keeps_the_best_epoch_and_follows_the_same_path():
    full = train_classifier(
        fresh_model(1), TRAIN, VAL, epochs=8, learning_rate=3e-2, batch_size=32
    )
    assert len(full.history) == 8 and not full.stopped_early  # patience=None: every epoch
    stopped = train_classifier(
        fresh_model(1), TRAIN, VAL, epochs=8, learning_rate=3e-2, batch_size=32, patience=2
    )
    assert stopped.stopped_early
    n = len(stopped.history)
    assert n < 8 and stopped.history == full.history[:n]  # same run, cut short
    assert n - stopped.best_epoch == 2  # two epochs without a new lowest validation loss
    best = min(range(n), key=lambda i: stopped.validation_loss[i])
    assert stopped.best_epoch == best + 1
    loss, acc = evaluate(stopped.model, VAL)
    assert loss == pytest.approx(stopped.validation_loss[best], abs=1e-6)
    assert acc == stopped.accuracy


def test_patience_longer_than_the_run_changes_nothing():
    full = train_classifier(fresh_model(2), TRAIN, VAL, epochs=3, batch_size=64)
    patient = train_classifier(
        fresh_model(2), TRAIN, VAL, epochs=3, batch_size=64, patience=5
    )
    assert patient.history == full.history and patient.best_epoch == full.best_epoch
    assert not patient.stopped_early


@pytest.mark.parametrize(
    "patience, error, message",
    [
        (0, ValueError, "patience must be an int of at least 1, got 0"),
        (1.5, TypeError, "patience must be an int, got float 1.5"),
        ("3", TypeError, "patience must be an int, got str '3'"),
    ],
)
def test_bad_patience_is_refused_before_training(patience, error, message):
    model = fresh_model()
    before = copy.deepcopy(model.state_dict())
    with pytest.raises(error, match=message):
        train_classifier(model, TRAIN, VAL, epochs=2, patience=patience)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_evaluation_turns_the_fast_path_off_and_restores_it():
    from transformer_lab.training import evaluation

    torch.manual_seed(0)
    model = SetClassifier().eval()
    x, padding, _ = make_sets(64, seed=3)
    before = torch.backends.mha.get_fastpath_enabled()
    with evaluation():
        assert not torch.backends.mha.get_fastpath_enabled()
        assert torch.is_inference_mode_enabled()
        quiet = model(x, padding)
    assert torch.backends.mha.get_fastpath_enabled() == before
    with torch.no_grad():  # the ordinary path, as in training's forward pass
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            ordinary = model(x, padding)
        finally:
            torch.backends.mha.set_fastpath_enabled(before)
    assert torch.equal(quiet, ordinary)
    with pytest.raises(RuntimeError), evaluation():
        raise RuntimeError("an error inside")
    assert torch.backends.mha.get_fastpath_enabled() == before
