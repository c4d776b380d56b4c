"""tools/bench-table.py: the performance record's table from a bench report.json, targets read
from docs/performance.md and applied to the reference problem and to decode-preset batches
only; bad input exits 4."""
import json
import os
import subprocess
import sys

SOURCE = os.environ.get("DSA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE, "tools", "bench-table.py")


def kernel(name, layer, median, floor, share, flops=0.0, bytes_=0.0, tflops=0.0, gbps=0.0):
    return {"kernel": name, "layer": layer, "calls": 1, "samples": 20, "median_ms": median,
            "min_ms": median * 0.98, "max_ms": median * 1.02, "flops": flops, "bytes": bytes_,
            "tflops": tflops, "gbps": gbps, "floor_ms": floor, "ceiling_share": share}


def report(rows=16384, context=262144, path=None):
    return {
        "schema_version": 1,
        "environment": {"gpu": "NVIDIA H200", "gpu_detail": "sm_90", "driver": "570.1", "cuda": "12.8",
                        "sm_clock": "1980 MHz", "commit": "abc123"},
        "inputs": [dict({"batch_id": "b1", "rows": rows, "max_len": context}, **({"path": path} if path else {}))],
        "runs": [
            {"batch_id": "device", "impl": "ceilings", "status": "passed",
             "kernels": [kernel("ceilings/hbm_copy", "all", 0.505, 0.505, 1, bytes_=2.1e9, gbps=4252.0),
                         kernel("ceilings/int8_wgmma", "all", 4.9, 4.9, 1, flops=3.4e12, tflops=694.2)]},
            {"batch_id": "b1", "impl": "gpu-sparse", "status": "passed", "rows": rows,
             "peak_device_bytes": 19 * 2**30,
             "kernels": [kernel("gpu-sparse/dense_logits", "20", 174.6, 49.11, 0.2813, flops=3.4e13, tflops=195),
                         kernel("gpu-sparse/dense_logits.wgmma", "20", 150.0, 0, 0),
                         kernel("gpu-sparse/block_topk", "20", 1.6, 0.5, 0.3125),
                         kernel("gpu-sparse/small_topk", "24", 1.9, 0.13, 0.0684),
                         kernel("gpu-sparse/step", "20", 190.0, 0, 0)]},
            {"batch_id": "b1", "impl": "torch-mask", "status": "passed",
             "kernels": [kernel("torch-mask/chunk", "all", 5766.0, 0, 0)]},
        ],
    }


def run(tmp_path, data):
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return subprocess.run([sys.executable, TOOL, str(path)], capture_output=True, text=True)


def test_table_rows_with_targets_on_the_reference_problem(tmp_path):
    r = run(tmp_path, report())
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "GPU NVIDIA H200 (sm_90), driver 570.1, CUDA 12.8, SM clock 1980 MHz; commit abc123" in out
    assert "| kernel | measured | floor | target | share of ceiling |" in out
    assert "| ceilings/hbm_copy | 4.252 TB/s (0.505 ms) | - | - | (the ceiling) |" in out
    # dense_logits: min(39.3 ms, 1.15 x 49.11 ms = 56.48 ms) = 39.3 ms.
    assert ("| gpu-sparse/dense_logits @20 (262144 x 16384 rows) | 174.6 ms (171.1..178.1) | 49.11 ms "
            "| 39.3 ms | 28.1 % |") in out
    assert "| gpu-sparse/block_topk @20 (262144 x 16384 rows) | 1.6 ms (1.568..1.632) | 0.5 ms | 0.8 ms |" in out
    assert "| 0.25 ms | 6.84 % |" in out
    # Steps and a route's share are not kernels; the whole path sums the kernels and their floors
    # (49.11 + 0.5 + 0.13 = 49.74 ms, 27.9 % of 178.1 ms), with its own target.
    assert "gpu-sparse/step" not in out
    assert "dense_logits.wgmma" not in out
    assert ("| whole gpu-sparse path (262144 x 16384 rows) | 178.1 ms (sum of medians; peak 19 GiB) | 49.74 ms "
            "| 46 ms | 27.9 % |") in out
    assert "| PyTorch mask path, whole chunk (262144 x 16384 rows) | 5766 ms | - | - | - |" in out


def test_targets_only_for_the_reference_problem(tmp_path):
    r = run(tmp_path, report(rows=256, context=65536))
    assert r.returncode == 0, r.stderr
    assert "| gpu-sparse/dense_logits @20 (65536 x 256 rows) | 174.6 ms (171.1..178.1) | 49.11 ms | - | 28.1 % |" in r.stdout


def test_decode_batches_take_the_decode_steps_targets(tmp_path):
    # The decode step's whole path: within 2x its floor (2 x 49.74 = 99.48 ms); its kernels have none.
    decode = "generated: --preset decode --context 131072 --rows-per-request 2 --seed 1"
    r = run(tmp_path, report(rows=128, context=131072, path=decode))
    assert r.returncode == 0, r.stderr
    assert ("| whole gpu-sparse path (131072 x 128 rows) | 178.1 ms (sum of medians; peak 19 GiB) | 49.74 ms "
            "| 99.48 ms | 27.9 % |") in r.stdout
    assert "| gpu-sparse/block_topk @20 (131072 x 128 rows) | 1.6 ms (1.568..1.632) | 0.5 ms | - |" in r.stdout
    # The same shape from another preset: no targets.
    r = run(tmp_path, report(rows=128, context=131072, path=decode.replace("decode", "smoke")))
    assert "| 49.74 ms | - | 27.9 % |" in r.stdout


def test_not_a_bench_report_exits_4_naming_file_and_key(tmp_path):
    data = report()
    data["runs"] = [run_ for run_ in data["runs"] if run_["impl"] != "ceilings"]
    r = run(tmp_path, data)
    assert r.returncode == 4
    assert "report.json: runs: no ceilings run: not a `dsa-harness bench` report" in r.stderr
    data = report()
    del data["inputs"]
    r = run(tmp_path, data)
    assert r.returncode == 4
    assert "report.json: inputs: missing" in r.stderr
