"""Random crop + flip on the device: every output is a window of the padded image, maybe
mirrored; off means the identity without touching the client's random stream."""
import torch

from fcl.config import DataConfig
from fcl.data.augment import random_crop_flip
from fcl.data.bundled import load_bundled
from fcl.data.federated import build_federated_data


def test_every_output_is_a_padded_window_or_its_mirror():
    x = torch.randint(0, 256, (64, 3, 8, 8), dtype=torch.uint8)
    out = random_crop_flip(x, 2, torch.Generator().manual_seed(0))
    assert out.shape == x.shape and out.dtype == torch.uint8
    padded = torch.nn.functional.pad(x, (2, 2, 2, 2))
    kinds = set()
    for i in range(len(x)):
        hits = [(dy, dx, f) for dy in range(5) for dx in range(5) for f in (False, True)
                if torch.equal(out[i], (lambda w: w.flip(-1) if f else w)(
                    padded[i, :, dy:dy + 8, dx:dx + 8]))]
        assert hits, i
        kinds |= {(h[0], h[1]) for h in hits} | {("flip", h[2]) for h in hits}
    assert ("flip", True) in kinds and ("flip", False) in kinds and (2, 2) in kinds
    again = random_crop_flip(x, 2, torch.Generator().manual_seed(0))
    assert torch.equal(again, out)                             # same generator, same batch


def test_augmenter_off_is_identity_and_draws_nothing():
    ds = load_bundled()
    off = build_federated_data(ds, DataConfig(train_per_class=10, test_per_class=2), seed=0)
    on = build_federated_data(ds, DataConfig(train_per_class=10, test_per_class=2, augment=True),
                              seed=0)
    gen = torch.Generator().manual_seed(3)
    state = gen.get_state()
    x = off.tasks[0].train_x[:16]
    assert off.augmenter(gen)(x) is x and torch.equal(gen.get_state(), state)
    y = on.augmenter(gen)(x)
    assert y.shape == x.shape and not torch.equal(y, x)
    assert on.to(torch.device("cpu")).augment is True
