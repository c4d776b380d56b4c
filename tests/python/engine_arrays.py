"""Shared by the Python tests (test_h5py_batch.py, dsa_harness/conftest.py): random arrays in an
engine's layouts (never all-zero) and the dsa-harness binary (DSA_BINARY, set by ctest)."""
import os
import subprocess

import numpy as np

BINARY = os.environ.get("DSA_BINARY", "")
HEADS, DIM = 32, 128


def harness(*args):
    assert BINARY and os.access(BINARY, os.X_OK), "DSA_BINARY must name the dsa-harness binary"
    return subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)


def bf16_weights(rng, rows):
    """Index head weights as an engine stores them: bf16-exact values / 64, mostly positive heads
    with a few small negative ones (N(0,1) weights would make the bf16 sparse path cancel far
    beyond what the public test's rule allows, unlike real data)."""
    base = np.where(rng.random(HEADS) < 0.15, -rng.uniform(0.05, 0.3, HEADS), rng.uniform(0.25, 1.0, HEADS))
    raw = (base * (1 + 0.2 * rng.standard_normal((rows, HEADS)))).astype(np.float32)
    bits = raw.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even bf16
    return bits.astype(np.uint32).view(np.float32) / np.float32(64)


def paged_pool(rng, compressed_len, page, spare_pages):
    """A page table [Q, T] over shuffled pages (T one wider than needed, -1 past each request's
    pages) and the pool [pages, page*68] with ue8m0 scales; `spare_pages` pages no request uses."""
    pages_needed = [-(-lc // page) for lc in compressed_len]
    pages = sum(pages_needed) + spare_pages
    order = rng.permutation(pages)
    table = np.full((len(compressed_len), max(pages_needed) + 1), -1, dtype=np.int32)
    used = 0
    for b, need in enumerate(pages_needed):
        table[b, :need] = order[used:used + need]
        used += need
    pool = rng.integers(0, 256, size=(pages, page * 68), dtype=np.uint8)
    pool[:, page * 64:] = rng.integers(124, 131, size=(pages, page * 4), dtype=np.uint8)  # ue8m0 scales
    return table, pool


def layer_arrays(rng, rows, layer_ids):
    """{id: {"q", "q_scale", "weights"}} for each layer, in from_arrays' layouts."""
    return {layer: {"q": rng.integers(0, 256, size=(rows, HEADS, DIM // 2), dtype=np.uint8),
                    "q_scale": rng.integers(124, 131, size=(rows, HEADS, DIM // 32), dtype=np.uint8),
                    "weights": bf16_weights(rng, rows)} for layer in layer_ids}
