"""bench/torch_mask_path.py, the PyTorch peer: registered only where the test Python has torch (as
on the GPU box). Its scores follow docs/semantics.md closely enough to be the same computation
(bf16 rounding apart), its selections agree with the reference's, and its JSON is what
harness/bench/torch_peer.cpp reads."""
import importlib.util
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import torch

SOURCE = os.environ.get("DSA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "bench", "torch_mask_path.py")
SMOKE = os.path.join(SOURCE, "fixtures", "smoke.h5")
GOLDEN = os.path.join(SOURCE, "fixtures", "golden", "smoke.results.h5")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def peer():
    spec = importlib.util.spec_from_file_location("torch_mask_path", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.DEVICE = DEVICE
    return module


def test_scores_and_selections_follow_the_reference():
    m = peer()
    rows, request, lens, keys, ops, topk = m.load(torch, SMOKE, None, DEVICE)
    with h5py.File(GOLDEN) as g:
        ref = g["outputs/reference-mask/20/dense_scores"][...]
        ref_blocks = g["outputs/reference-mask/blocks"][...]
    _, q, w = ops[20]
    compared = 0
    for i, j, b in m.tiles(request, lens, [k.shape[0] for k in keys]):
        dense = m.dense_scores(torch, q[i:j], w[i:j], keys[b], lens[i:j])
        blocks = m.block_table(torch, m.level_one(torch, dense, lens[i:j])).cpu()
        for r in range(i, j):
            n = int(lens[r])
            mine, want = dense[r - i, :n].cpu().numpy(), ref[r, :n]
            assert not np.all(want == 0)
            # bf16 head scores: within 1 % of the exact-then-fp32 reference.
            np.testing.assert_allclose(mine, want, rtol=1e-2, atol=1e-3)
            if n > topk:
                picked = set(torch.topk(dense[r - i, :n], topk).indices.tolist())
                best = set(np.argsort(-want, kind="stable")[:topk].tolist())
                assert len(picked & best) >= 0.98 * topk
            if (n + 7) // 8 > 2048:
                kept = set(ref_blocks[r][ref_blocks[r] != 2**31 - 1].tolist())
                assert len(set(blocks[r - i].tolist()) & kept) >= 0.99 * 2048
                compared += 1
    assert compared > 0  # the smoke batch has a request beyond 16384 positions


def test_json_has_every_stage_and_the_chunk(tmp_path):
    out = tmp_path / "peer.json"
    r = subprocess.run([sys.executable, SCRIPT, SMOKE, "--samples", "3", "--json", str(out), "--device", DEVICE,
                        "--rows", "0,1,2,5"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    j = json.loads(out.read_text())
    stages = {(s["stage"], s["layer"]) for s in j["stages"]}
    assert {("dense_scores", "20"), ("own_topk", "20"), ("block_amax", "20"), ("block_topk", "20"),
            ("dense_scores", "24"), ("mask", "24"), ("mask_topk", "24"), ("chunk", "all")} <= stages
    for s in j["stages"]:
        assert s["samples"] == 3
        assert 0 < s["min_ms"] <= s["median_ms"] <= s["max_ms"]


def test_bad_input_exits_4(tmp_path):
    r = subprocess.run([sys.executable, SCRIPT, SMOKE, "--json", str(tmp_path / "x.json"), "--device", DEVICE,
                        "--rows", "0,99999"], capture_output=True, text=True)
    assert r.returncode == 4
    assert "--rows: a row is outside" in r.stderr
