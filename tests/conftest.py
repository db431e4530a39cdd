import pytest
import torch

torch.set_num_threads(2)


@pytest.fixture(scope="session")
def smoke_data():
    """The smoke preset's federated data, prepared once for the whole session."""
    from fcl.engine import prepare_data
    from fcl.presets import preset
    return prepare_data(preset("smoke"))


@pytest.fixture(scope="session")
def local_ray():
    """A local Ray for the study tests, started once; yields its address. The address lets a
    subprocess join it (`--address`) instead of starting its own."""
    import ray

    from fcl.tune import cluster
    started = cluster.connect(None, num_cpus=2)
    yield ray.get_runtime_context().gcs_address
    if started:
        ray.shutdown()
