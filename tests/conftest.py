import pytest
import torch

torch.set_num_threads(2)


@pytest.fixture(scope="session")
def smoke_data():
    """The smoke preset's federated data, prepared once for the whole session."""
    from fcl.engine import prepare_data
    from fcl.presets import preset
    return prepare_data(preset("smoke"))
