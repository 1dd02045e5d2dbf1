"""One reusable training loop for binary classifiers of padded sets.

Data come as ``(x, padding, y)`` triples: x (N, L, F), padding (N, L) bool with True = padding,
y (N,) float labels in {0, 1}. Models map ``(x, padding)`` to logits (N,).
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch
from torch import nn

from transformer_lab.encoder import count_parameters
from transformer_lab.metrics import accuracy
from transformer_lab.protocol import fit_with_early_stopping
from transformer_lab.timing import stopwatch
from transformer_lab.validation import (
    describe,
    require_binary_labels,
    require_finite,
    require_float_tensor,
    require_int,
    require_number,
    require_padding,
)

Data = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
# accuracy_fn(logits (N,), labels (N,)) -> share classified correctly, as a float
AccuracyFn = Callable[[torch.Tensor, torch.Tensor], float]


@contextmanager
def evaluation() -> Iterator[None]:
    """Inference mode (no autograd bookkeeping) with the encoder layer's fast path turned off.

    In eval mode without gradients, ``nn.TransformerEncoderLayer`` switches to a fused "fast
    path" kernel. On the book's 2-vCPU machines it was slower (chapter 4's validation pass took
    1.64 times as long) and its logits differ from the ordinary path's by up to about 1e-7, so
    every evaluation in the package runs the ordinary path: one path, the same numbers whether a
    model is scored while training or afterwards. The global switch is restored on exit.
    """
    was_enabled = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.inference_mode():
            yield
    finally:
        torch.backends.mha.set_fastpath_enabled(was_enabled)


@dataclass
class TrainingResult:
    """What one training run produced.

    history: one ``(train_loss, validation_loss)`` pair per epoch — the training loss is the
    average over the epoch's mini-batches *during* updates, the validation loss is measured at the
    end of the epoch. ``model`` holds the weights of the epoch with the lowest validation loss
    (``best_epoch``, counted from 1); ``accuracy`` is that model's validation accuracy.
    ``stopped_early`` is True when early stopping ended the run before its last epoch (the
    validation loss had stopped improving for ``patience`` epochs).
    """

    history: list[tuple[float, float]]
    accuracy: float
    seconds: float
    parameters: int
    best_epoch: int
    stopped_early: bool
    model: nn.Module = field(repr=False)

    @property
    def train_loss(self) -> list[float]:
        return [train for train, _ in self.history]

    @property
    def validation_loss(self) -> list[float]:
        return [validation for _, validation in self.history]


def check_data(name: str, data: Data) -> None:
    """Raise unless ``data`` is a non-empty ``(x, padding, y)`` triple the loop can train on.

    x (N, L, F) float and finite at every real position (padding may hold anything), padding
    (N, L) bool, y (N,) float labels in {0, 1}.
    """
    if not isinstance(data, (tuple, list)) or len(data) != 3:
        raise TypeError(
            f"{name} must be a tuple (x, padding, y), got {type(data).__name__}"
        )
    x, padding, y = data
    require_float_tensor(f"{name} x", x)
    require_float_tensor(f"{name} y", y, why="binary cross-entropy needs float labels")
    if x.dim() != 3:
        raise ValueError(f"{name} x should have shape (N, L, F), got {describe(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(
            f"{name} is empty: x has shape {describe(x.shape)}, expected at least one example"
        )
    require_padding(padding, x.shape[0], x.shape[1], name=f"{name} padding")
    if tuple(y.shape) != (x.shape[0],):
        raise ValueError(
            f"{name} y should have shape ({x.shape[0]},), one label per set, got {describe(y.shape)}"
        )
    require_binary_labels(f"{name} y", y)
    require_finite(f"{name} x", x, skip=padding[:, :, None])


def check_settings(epochs: int, learning_rate: float, batch_size: int) -> None:
    """Raise for an epoch count or batch size that is not an int of at least 1, or a learning
    rate that is not a positive, finite number."""
    require_int("epochs", epochs, minimum=1)
    require_number("learning_rate", learning_rate, above=0)
    require_int("batch_size", batch_size, minimum=1)


class FusedAdam:
    """Adam on CPU through PyTorch's fused kernel, the update ``torch.optim.Adam(fused=True)`` makes.

    Why not ``torch.optim.Adam`` itself: every ``torch.optim`` optimizer imports PyTorch's
    compiler (``torch._dynamo``) the first time it is built, about a second and a quarter of start-up
    on a fast CPU for a page that trains one small model. This class keeps the same state (first and
    second moments, a float32 step count per parameter, created at the parameter's first gradient)
    and calls the same kernel with the same arguments, so its updates are bit-identical
    (``tests/test_training.py`` checks it against ``torch.optim.Adam``). Parameters without a
    gradient in a step are skipped, as ``torch.optim`` does.
    """

    def __init__(
        self,
        parameters: Iterable[nn.Parameter],
        lr: float,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ):
        self.parameters = [p for p in parameters if p.requires_grad]
        if not self.parameters:
            raise ValueError("FusedAdam got no parameters that require gradients")
        for parameter in self.parameters:
            if parameter.device.type != "cpu" or not parameter.is_floating_point():
                raise ValueError(
                    f"FusedAdam trains float tensors on the CPU, got a {parameter.dtype} "
                    f"parameter on {parameter.device}"
                )
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        # parameter index -> (step (), exp_avg, exp_avg_sq), each moment shaped like its parameter
        self.state: dict[int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}

    def zero_grad(self) -> None:
        """Drop every gradient (``set_to_none``, ``torch.optim``'s default)."""
        for parameter in self.parameters:
            parameter.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One Adam update of every parameter that has a gradient."""
        trained = [i for i, p in enumerate(self.parameters) if p.grad is not None]
        for i in trained:
            if i not in self.state:
                parameter = self.parameters[i]
                self.state[i] = (
                    torch.zeros((), dtype=torch.float32),
                    torch.zeros_like(parameter, memory_format=torch.preserve_format),
                    torch.zeros_like(parameter, memory_format=torch.preserve_format),
                )
        if not trained:
            return
        steps, exp_avgs, exp_avg_sqs = (
            list(column) for column in zip(*(self.state[i] for i in trained))
        )
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(
            [self.parameters[i] for i in trained],
            [self.parameters[i].grad for i in trained],
            exp_avgs,
            exp_avg_sqs,
            [],
            steps,
            amsgrad=False,
            lr=self.lr,
            beta1=self.betas[0],
            beta2=self.betas[1],
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
            grad_scale=None,
            found_inf=None,
        )


def adam(
    parameters: Iterable[nn.Parameter], learning_rate: float, weight_decay: float = 0.0
) -> FusedAdam:
    """Adam as every model of the book trains with it: PyTorch's fused CPU kernel.

    The fused kernel updates each parameter tensor in one pass and takes its square roots with
    an exact instruction. The default (per-tensor) Adam calls ``torch.sqrt``, whose CPU kernel
    rounds differently on different processors, and training amplifies those last bits into
    different accuracies; the fused kernel is also a little faster. ``FusedAdam`` says why it is
    not built through ``torch.optim``.
    """
    return FusedAdam(parameters, lr=learning_rate, weight_decay=weight_decay)


def train_epoch(
    model: nn.Module,
    optimizer: "FusedAdam | torch.optim.Optimizer",
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
    model: nn.Module,
    data: Data,
    loss_fn: nn.Module | None = None,
    accuracy_fn: AccuracyFn | None = None,
) -> tuple[float, float]:
    """Loss (BCE with logits unless ``loss_fn`` is given) and accuracy of ``model`` on ``data``.

    The accuracy is ``metrics.accuracy`` unless ``accuracy_fn(logits, labels)`` is given. A model
    that outputs NaN (a diverged run) gets NaN for both, not an accuracy that counts the NaN
    logits as negative predictions.
    """
    check_data("data", data)
    x, padding, y = data
    loss_fn = loss_fn or nn.BCEWithLogitsLoss()
    accuracy_fn = accuracy if accuracy_fn is None else accuracy_fn
    model.eval()
    # Inference mode, no fast path (``evaluation``). The scoring stays inside it, where a
    # student's accuracy_fn may even change the logits in place.
    with evaluation():
        logits = model(x, padding)
        if torch.isnan(logits).any():
            return float("nan"), float("nan")
        return loss_fn(logits, y).item(), accuracy_fn(logits, y)


def check_training(
    model: nn.Module,
    train_data: Data,
    val_data: Data,
    epochs: int,
    learning_rate: float,
    batch_size: int,
    accuracy_fn: AccuracyFn | None,
) -> None:
    """The argument checks of ``train_classifier``, in one place: raise with a sentence that
    names the argument, what was expected and what came. (``patience`` is checked by
    ``protocol.fit_with_early_stopping``, also before the first epoch.)"""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if accuracy_fn is not None and not callable(accuracy_fn):
        raise TypeError(
            f"accuracy_fn must be a function (logits, labels) -> float, got {type(accuracy_fn).__name__}"
        )
    check_data("train_data", train_data)
    check_data("val_data", val_data)
    check_settings(epochs, learning_rate, batch_size)


def train_classifier(
    model: nn.Module,
    train_data: Data,
    val_data: Data,
    epochs: int = 12,
    learning_rate: float = 3e-3,
    batch_size: int = 128,
    seed: int = 42,
    accuracy_fn: AccuracyFn | None = None,
    patience: int | None = None,
) -> TrainingResult:
    """Train ``model`` with Adam on BCE-with-logits; keep the epoch with the best validation loss.

    At most ``epochs`` epochs; with ``patience``, training stops once that many epochs in a row
    bring no new lowest validation loss (early stopping, ``protocol.fit_with_early_stopping``);
    ``patience=None`` runs every epoch. ``seed`` fixes the order of the mini-batches (the model's
    initial weights are the caller's: seed before building it). The model is trained in place and
    returned, in eval mode, holding its best-validation weights. ``accuracy_fn(logits, labels)``
    scores that model at the end (default: ``metrics.accuracy``); it plays no part in training or
    in choosing the epoch.
    """
    check_training(
        model, train_data, val_data, epochs, learning_rate, batch_size, accuracy_fn
    )
    generator = torch.Generator().manual_seed(seed)
    optimizer = adam(model.parameters(), learning_rate)
    loss_fn = nn.BCEWithLogitsLoss()

    def run_epoch() -> float:  # one pass over the training sets, in shuffled mini-batches
        return train_epoch(model, optimizer, loss_fn, train_data, batch_size, generator)

    def validation_loss() -> float:  # the loss on the validation sets after the epoch
        return evaluate(model, val_data, loss_fn)[0]

    with stopwatch() as clock:
        fit = fit_with_early_stopping(model, run_epoch, validation_loss, epochs, patience)
        _, val_accuracy = evaluate(model, val_data, loss_fn, accuracy_fn)
    return TrainingResult(
        fit.history,
        val_accuracy,
        clock["seconds"],
        count_parameters(model),
        fit.best_epoch,
        fit.stopped_early,
        model,
    )
