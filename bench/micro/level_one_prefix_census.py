#!/usr/bin/env python3
"""Host census for level one on 16-bit key prefixes (bench/micro/level_one_rate.cu's route).

For sampled rows of a batch's source layer: the block keys (the maximum of each 8 dense scores
of reference-sparse, the newest block +inf) as ordered integers; P, the 16-bit prefix of the
2048-th largest key; how many keys share P (the keys the route re-reads as 32-bit keys); and the
route's picks (every key above P, then the largest at P, ties to the smaller column) against
reference-sparse's own level-one blocks. Prints one line a row and a summary; exits 1 if any
row's picks differ. Needs the Python package (build/python, numpy):

    python3 bench/micro/level_one_prefix_census.py BATCH.h5 [ROWS]    # ROWS sampled, default 41

Session 32, on a generated chunk-256k batch of 1024 rows (L 261121-262144), 41 rows: 52-151 keys
at P, 100.8 on average, and the route's picks equal the reference's on every row.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
import dsa_harness as dh  # noqa: E402


def ordered(x):
    """order_f32 (gpu/common/order.cuh): -0 as +0, larger float -> larger unsigned integer."""
    u = (x.astype(np.float32) + np.float32(0)).view(np.uint32)
    return np.where(u >> 31, ~u, u | np.uint32(0x80000000)).astype(np.uint32)


def block_keys(scores):
    nb = (len(scores) + 7) // 8
    padded = np.full(nb * 8, -np.inf, dtype=np.float32)
    padded[: len(scores)] = scores
    keys = padded.reshape(nb, 8).max(axis=1)
    keys[-1] = np.inf  # the newest block
    return ordered(keys)


def route(o, k):
    """The micro's picks: two passes on the prefixes (11 bits, then 5), then the keys at P."""
    pre = o >> np.uint32(16)
    h1 = np.bincount(pre >> 5, minlength=2048)
    b1 = 2047 - int(np.argmax(np.cumsum(h1[::-1]) >= k))
    above1 = int(h1[b1 + 1:].sum())
    h2 = np.bincount(pre[(pre >> 5) == b1] & 31, minlength=32)
    low = 31 - int(np.argmax(np.cumsum(h2[::-1]) >= k - above1))
    p = (b1 << 5) | low
    above = np.nonzero(pre > p)[0]
    at_p = np.nonzero(pre == p)[0]
    best = at_p[np.lexsort((at_p, -o[at_p].astype(np.int64)))[: k - len(above)]]
    return np.sort(np.concatenate([above, best])), len(at_p)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    batch = dh.Batch.read(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 41
    step = max(1, batch.rows // count)
    out = dh.run(batch, "reference-sparse", rows=list(range(0, step * count, step)), scores=True)
    source = sorted(out.dense_scores.keys())[0]
    k = out.blocks.shape[1]
    at_p_counts, differ = [], 0
    for r, scores in enumerate(out.dense_scores[source]):
        if scores is None or len(scores) == 0:
            continue
        o = block_keys(np.asarray(scores, dtype=np.float32))
        if len(o) <= k:
            continue
        picks, n_at_p = route(o, k)
        ref = np.sort(out.blocks[r])
        same = np.array_equal(picks, ref[ref >= 0])
        differ += not same
        at_p_counts.append(n_at_p)
        print(f"row {r}: {len(o)} blocks, {n_at_p} keys at P, picks {'equal' if same else 'DIFFER'}")
    if not at_p_counts:
        print("no row of more than k blocks")
        return 1
    print(f"{len(at_p_counts)} rows: keys at P {min(at_p_counts)}-{max(at_p_counts)}, "
          f"{sum(at_p_counts) / len(at_p_counts):.1f} on average; rows whose picks differ: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
