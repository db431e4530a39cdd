"""NetTailor's shared max-pool pyramid gives exactly the direct max-pools."""
import pytest
import torch
import torch.nn.functional as F

from fcl.models.nettailor import NodePyramid


@pytest.mark.parametrize("size", [28, 32, 7, 13])
@pytest.mark.parametrize("factor", [1, 2, 3, 4, 8])
def test_pooled_node_equals_a_direct_max_pool(size, factor):
    x = torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(size))
    pyramid = NodePyramid([x])
    direct = x if factor == 1 else F.max_pool2d(x, factor, ceil_mode=True)
    got = pyramid.pooled(0, factor)
    assert got.shape == direct.shape and torch.equal(got, direct)


def test_each_level_is_pooled_once_and_reused():
    pyramid = NodePyramid([torch.randn(1, 2, 16, 16)])
    p8 = pyramid.pooled(0, 8)
    assert set(pyramid._pooled) == {(0, 2), (0, 4), (0, 8)}
    assert pyramid.pooled(0, 8) is p8 and pyramid.pooled(0, 4) is pyramid._pooled[0, 4]
