"""One reusable training loop for binary classifiers of padded sets.

Data come as ``(x, padding, y)`` triples: x (N, L, F), padding (N, L) bool with True = padding,
y (N,) float labels in {0, 1}. Models map ``(x, padding)`` to logits (N,).
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from transformer_lab.encoder import count_parameters
from transformer_lab.metrics import accuracy
from transformer_lab.shapes import describe, require_padding, require_tensor
from transformer_lab.timing import stopwatch

Data = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
# accuracy_fn(logits (N,), labels (N,)) -> share classified correctly, as a float
AccuracyFn = Callable[[torch.Tensor, torch.Tensor], float]


@dataclass
class TrainingResult:
    """What one training run produced.

    history: one ``(train_loss, validation_loss)`` pair per epoch — the training loss is the
    average over the epoch's mini-batches *during* updates, the validation loss is measured at the
    end of the epoch. ``model`` holds the weights of the epoch with the lowest validation loss
    (``best_epoch``, counted from 1); ``accuracy`` is that model's validation accuracy.
    """

    history: list[tuple[float, float]]
    accuracy: float
    seconds: float
    parameters: int
    best_epoch: int
    model: nn.Module = field(repr=False)

    @property
    def train_loss(self) -> list[float]:
        return [train for train, _ in self.history]

    @property
    def validation_loss(self) -> list[float]:
        return [validation for _, validation in self.history]


def check_data(name: str, data: Data) -> None:
    """Raise unless ``data`` is an ``(x, padding, y)`` triple with matching sizes."""
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise TypeError(f"{name} must be a tuple (x, padding, y), got {type(data).__name__}")
    x, padding, y = data
    for part, tensor in (("x", x), ("y", y)):
        require_tensor(f"{name} {part}", tensor)
    if x.dim() != 3:
        raise ValueError(f"{name} x should have shape (N, L, F), got {describe(x.shape)}")
    require_padding(padding, x.shape[0], x.shape[1], name=f"{name} padding")
    if tuple(y.shape) != (x.shape[0],):
        raise ValueError(f"{name} y should have shape ({x.shape[0]},), one label per set, got {describe(y.shape)}")


def check_settings(epochs: int, learning_rate: float, batch_size: int) -> None:
    """Raise ``ValueError`` for a non-positive epoch count, learning rate or batch size."""
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not learning_rate > 0:
        raise ValueError(f"learning_rate must be positive, got {learning_rate!r}")


def train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    loss_fn: nn.Module,
    data: tuple[torch.Tensor, ...],
    batch_size: int,
    generator: torch.Generator,
) -> float:
    """One pass over ``data`` in mini-batches shuffled by ``generator``; returns the mean loss.

    ``data`` is the model's inputs followed by the labels y (N,): ``(x, padding, y)`` for the set
    and character models, ``(x, y)`` for a plain network. Model outputs are flattened to (N,).
    The mean is weighted by batch size and taken *during* the updates, so it lags behind the
    model's loss at the end of the epoch.
    """
    *inputs, y = data
    model.train()
    total = 0.0
    for batch in torch.randperm(len(y), generator=generator).split(batch_size):
        optimizer.zero_grad()
        loss = loss_fn(model(*(tensor[batch] for tensor in inputs)).reshape(-1), y[batch])
        loss.backward()
        optimizer.step()
        total += loss.item() * len(batch)
    return total / len(y)


def evaluate(
    model: nn.Module, data: Data, loss_fn: nn.Module | None = None, accuracy_fn: AccuracyFn | None = None
) -> tuple[float, float]:
    """Loss (BCE with logits unless ``loss_fn`` is given) and accuracy of ``model`` on ``data``.

    The accuracy is ``metrics.accuracy`` unless ``accuracy_fn(logits, labels)`` is given.
    """
    x, padding, y = data
    loss_fn = loss_fn or nn.BCEWithLogitsLoss()
    accuracy_fn = accuracy if accuracy_fn is None else accuracy_fn
    model.eval()
    with torch.no_grad():
        logits = model(x, padding)
    return loss_fn(logits, y).item(), accuracy_fn(logits, y)


def train_classifier(
    model: nn.Module,
    train_data: Data,
    val_data: Data,
    epochs: int = 12,
    learning_rate: float = 3e-3,
    batch_size: int = 128,
    seed: int = 42,
    accuracy_fn: AccuracyFn | None = None,
) -> TrainingResult:
    """Train ``model`` with Adam on BCE-with-logits; keep the epoch with the best validation loss.

    ``seed`` fixes the order of the mini-batches (the model's initial weights are the caller's:
    seed before building it). The model is trained in place and returned, in eval mode, holding
    its best-validation weights. ``accuracy_fn(logits, labels)`` scores that model at the end
    (default: ``metrics.accuracy``); it plays no part in training or in choosing the epoch.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if accuracy_fn is not None and not callable(accuracy_fn):
        raise TypeError(f"accuracy_fn must be a function (logits, labels) -> float, got {type(accuracy_fn).__name__}")
    check_data("train_data", train_data)
    check_data("val_data", val_data)
    check_settings(epochs, learning_rate, batch_size)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    loss_fn = nn.BCEWithLogitsLoss()
    history: list[tuple[float, float]] = []
    best_loss, best_epoch, best_state = float("inf"), 0, None
    with stopwatch() as clock:
        for epoch in range(1, epochs + 1):
            train_loss = train_epoch(model, optimizer, loss_fn, train_data, batch_size, generator)
            val_loss, _ = evaluate(model, val_data, loss_fn)
            history.append((train_loss, val_loss))
            if val_loss < best_loss:
                best_loss, best_epoch, best_state = val_loss, epoch, copy.deepcopy(model.state_dict())
        if best_state is None:
            raise ValueError(f"the validation loss was never finite in {epochs} epochs: {history}")
        model.load_state_dict(best_state)
        _, val_accuracy = evaluate(model, val_data, loss_fn, accuracy_fn)
    return TrainingResult(history, val_accuracy, clock["seconds"], count_parameters(model), best_epoch, model)
