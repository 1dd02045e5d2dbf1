import torch

import transformer_lab
from transformer_lab.reproducibility import TORCH_THREADS, seed_everything


def test_importing_the_package_pins_threads():
    assert transformer_lab is not None
    assert torch.get_num_threads() == TORCH_THREADS


def test_seed_everything_repeats_draws():
    first = seed_everything(5)
    a = (torch.rand(3), torch.rand(3, generator=first))
    second = seed_everything(5)
    b = (torch.rand(3), torch.rand(3, generator=second))
    torch.testing.assert_close(a, b)
