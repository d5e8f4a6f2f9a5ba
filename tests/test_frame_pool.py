import numpy as np

from app.frame_pool import FramePool


def test_a_buffer_comes_back_only_when_nothing_refers_to_it():
    pool = FramePool(keep=4)
    a = pool.take((720, 1280, 3))
    a[:] = 7
    b = pool.take((720, 1280, 3))
    assert b is not a  # `a` is still held
    crop = a[10:20, 10:20]  # a view keeps its base in use
    del a
    c = pool.take((720, 1280, 3))
    assert not np.shares_memory(c, crop)
    assert (crop == 7).all()
    del crop, b
    d = pool.take((720, 1280, 3))
    assert pool.reused == 1 and pool.allocated == 3
    assert d.flags.c_contiguous and d.shape == (720, 1280, 3) and d.dtype == np.uint8


def test_other_sizes_get_their_own_buffers_and_the_pool_stays_bounded():
    pool = FramePool(keep=2)
    held = [pool.take((4, 4, 3)), pool.take((8, 8, 3)), pool.take((8, 8, 3))]
    assert len(pool._buffers) == 2
    assert held[0].shape == (4, 4, 3) and held[1].shape == (8, 8, 3)
    del held
    assert pool.take((8, 8, 3)).shape == (8, 8, 3)
    assert pool.reused == 1
