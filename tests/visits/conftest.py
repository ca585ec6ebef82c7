import itertools

import numpy as np
import pytest


def compositions(total: int, parts: int):
    """Every vector of `parts` non-negative integers summing to `total`."""
    if parts == 1:
        yield (total,)
        return
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        prev = -1
        out = []
        for b in bars:
            out.append(b - prev - 1)
            prev = b
        out.append(total + parts - 2 - prev)
        yield tuple(out)


@pytest.fixture
def comps():
    return lambda total, parts: np.array(list(compositions(total, parts)), dtype=np.int64)
