"""Shared pieces of the dsa_harness package tests: the batch they use (tests/python/engine_arrays.py
makes the arrays), the dsa-harness binary, and the package imported from the build tree (PYTHONPATH)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/python: engine_arrays
from engine_arrays import harness, layer_arrays, paged_pool  # noqa: E402,F401 (harness: for the tests)

TOPK, PAGE = 512, 64
NUM_ROWS = [3, 0, 4]
COMPRESSED_LEN = [700, 40, 1100]
ROW_LEN = [300, 650, 700, 513, 900, 1099, 1100]  # L <= lc of the row's request; most above topk
TAIL_ROWS = [1, 0, 2]


def engine_arrays(seed):
    """The keyword arguments of Batch.from_arrays: a source (20) and a consumer (24) on one pool."""
    rng = np.random.default_rng(seed)
    table, pool = paged_pool(rng, COMPRESSED_LEN, PAGE, spare_pages=2)
    return {"num_rows": np.array(NUM_ROWS, dtype=np.int32),
            "compressed_len": np.array(COMPRESSED_LEN, dtype=np.int32),
            "page_table": table, "compress_len": np.array(ROW_LEN, dtype=np.int32), "pool": pool,
            "layers": layer_arrays(rng, sum(NUM_ROWS), (20, 24)), "tail_rows": np.array(TAIL_ROWS, dtype=np.int32),
            "topk": TOPK, "source_layer": 20, "description": f"pytest engine arrays, seed {seed}"}


@pytest.fixture
def arrays():
    return engine_arrays(seed=16)


@pytest.fixture
def batch(arrays):
    import dsa_harness
    return dsa_harness.Batch.from_arrays(**arrays)
