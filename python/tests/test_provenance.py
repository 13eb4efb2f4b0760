"""Which work counts as the candidate's own: random fills are data movement, dropout is compute."""
from __future__ import annotations

from kforge_worker import provenance


def test_a_random_fill_kernel_is_data_movement_and_dropout_is_compute():
    normal = ("void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, "
              "at::native::templates::cuda::normal_and_transform<float, float>(...)>(long, ...)")
    assert provenance.classify_kernel(normal, {"my_kernel"}) == "data_movement"
    dropout = "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<float, float, unsigned int, 1, 4, bool>(...)"
    assert provenance.classify_kernel(dropout, {"my_kernel"}) == "library_compute"
    assert provenance.classify_kernel("my_kernel_0d1d2d", {"my_kernel"}) == "authored"


def test_random_generators_are_data_movement_and_dropout_and_bernoulli_are_not():
    for name in ("randn", "rand", "randn_like", "normal_", "uniform_", "randint"):
        assert name in provenance.DATA_MOVEMENT_OPS
    for name in ("native_dropout", "dropout", "bernoulli", "bernoulli_", "mm", "add"):
        assert name not in provenance.DATA_MOVEMENT_OPS
