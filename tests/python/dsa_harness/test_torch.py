"""dsa_harness with torch tensors (registered only where the tests' Python imports torch, as on
the GPU box): from_arrays takes tensors on any device, bf16 weights included, and a replay hook
gets CUDA tensors when a GPU is present, numpy arrays otherwise."""
import numpy as np
import torch

import dsa_harness

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def as_tensors(arrays):
    out = dict(arrays)
    for name in ("num_rows", "compressed_len", "page_table", "compress_len", "pool", "tail_rows"):
        out[name] = torch.from_numpy(arrays[name]).to(DEVICE)
    out["layers"] = {layer: {"q": torch.from_numpy(d["q"]).to(DEVICE),
                             "q_scale": torch.from_numpy(d["q_scale"]).to(DEVICE),
                             "weights": torch.from_numpy(d["weights"]).to(DEVICE).to(torch.bfloat16)}
                     for layer, d in arrays["layers"].items()}
    return out


def test_tensors_give_the_same_batch(arrays, batch):
    # The weights are bf16-exact, so the bf16 tensors lose nothing on the way to float32.
    assert dsa_harness.Batch.from_arrays(**as_tensors(arrays)).content_id == batch.content_id


def test_capture_from_tensors_writes_the_numpy_file(arrays, batch, tmp_path):
    # An engine's tensors and its torch.topk-style int64 picks, on its device.
    picks = dsa_harness.run(batch, impl="reference-sparse")
    engine = {"blocks": torch.from_numpy(picks.blocks).to(DEVICE).long(),
              "positions": {k: torch.from_numpy(v).to(DEVICE).long() for k, v in picks.positions.items()},
              "tail_positions": {k: torch.from_numpy(v).to(DEVICE) for k, v in picks.tail_positions.items()}}
    dsa_harness.capture(tmp_path / "tensors.h5", outputs={"engine": engine}, **as_tensors(arrays))
    same = {"blocks": picks.blocks, "positions": picks.positions, "tail_positions": picks.tail_positions}
    dsa_harness.capture(tmp_path / "numpy.h5", outputs={"engine": same}, **arrays)
    assert (tmp_path / "tensors.h5").read_bytes() == (tmp_path / "numpy.h5").read_bytes()


def test_a_hook_gets_tensors_on_the_gpu_when_there_is_one(batch, tmp_path):
    reference = dsa_harness.run(batch, impl="reference-sparse")
    seen = []

    def mine(arrays):
        seen.append(arrays["pool"])
        return {"blocks": torch.from_numpy(reference.blocks).to(DEVICE),
                "positions": {k: torch.from_numpy(v).to(DEVICE).long() for k, v in reference.positions.items()},
                "tail_positions": reference.tail_positions}

    report = dsa_harness.replay([batch], impls={"mine": mine}, out_dir=tmp_path / "r")
    assert report["exit_code"] == 0 and report["verdict"] == "passed"
    if DEVICE == "cuda":
        assert isinstance(seen[0], torch.Tensor) and seen[0].is_cuda
        assert np.array_equal(seen[0].cpu().numpy(), batch.arrays()["pool"])
    else:
        assert isinstance(seen[0], np.ndarray)
