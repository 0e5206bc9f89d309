"""How the fused group shares its configurations between threads (rates.numeric.fused.group._split)."""

import pytest

from rates.numeric.fused import kernels
from rates.numeric.fused.group import _split


def sizes(count, parts, filled):
    slices = _split(count, parts, filled)
    assert slices[0].start == 0 and slices[-1].stop == count
    assert all(a.stop == b.start for a, b in zip(slices, slices[1:]))  # contiguous, nothing run twice
    return [s.stop - s.start for s in slices]


def cost(m, filled):
    """A slice's cost in single runs, counted by hand: whole blocks, then a padded block or single runs."""
    blocks, rest = divmod(m, kernels.LANES)
    return blocks * filled + (filled if rest >= filled else rest)


def test_a_block_is_not_split_into_two_half_empty_ones():
    # 64 runs sharing their samples: one full block (cost 33) beats two padded blocks of 32 (33 each, twice
    # the CPU) and two slices of 32 single runs (32 each, twice the CPU for 1 unit of wall clock)
    assert sizes(64, 2, kernels.MIN_FILLED_LANES) == [64]
    # 64 data draws (break-even 48): two slices of 32 single runs (wall 32) beat one block (wall 48)
    assert sizes(64, 2, kernels.MIN_FILLED_OWN_LANES) == [32, 32]
    assert sizes(256, 2, kernels.MIN_FILLED_OWN_LANES) == [128, 128]
    assert sizes(69, 2, kernels.MIN_FILLED_LANES) == [64, 5]


@pytest.mark.parametrize("filled", [kernels.MIN_FILLED_LANES, kernels.MIN_FILLED_OWN_LANES, kernels.LANES])
def test_the_split_weighs_wall_clock_and_cpu_no_worse_than_near_equal_slices(filled):
    """Wall clock (the largest slice cost) plus CPU time (the total) over twice the threads, counted by hand,
    is never above that of near-equal slices (the split used before blocks were counted), and the wall clock
    never more than a quarter above it."""
    def weighed(split, parts):
        costs = [cost(m, filled) for m in split]
        return max(costs) + sum(costs) / (2 * parts)

    for count in range(1, 400):
        for parts in (1, 2, 3, 4):
            got = sizes(count, parts, filled)
            share, extra = divmod(count, min(parts, count))
            equal = [share + (i < extra) for i in range(min(parts, count))]
            assert weighed(got, parts) <= weighed(equal, parts), (count, parts)
            assert max(cost(m, filled) for m in got) <= 1.25 * max(cost(m, filled) for m in equal), (count, parts)
            if filled == kernels.LANES:  # no blocks: near-equal slices
                assert sorted(got) == sorted(equal)
