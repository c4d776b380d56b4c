#!/usr/bin/env python3
"""The performance record's table from a `dsa-harness bench` report.json.

    tools/bench-table.py DIR/report.json [--targets docs/performance.md] > table.md

One row per ceiling, per kernel of gpu-sparse and gpu-mask on each batch, per whole path (its
floor: the kernels' floors summed), and the PyTorch peer's whole chunk: kernel | measured | floor |
target | share of ceiling. Targets come from two tables of docs/performance.md: "Targets by
kernel", for the reference problem (16384 rows at 262144 context), and "Targets of the decode
step", for batches the generator made with `--preset decode`; elsewhere the column says "-".
Exit 4 on a file that is not a bench report (the message names the file and the key).
"""
import argparse
import json
import os
import sys

REFERENCE_ROWS, REFERENCE_CONTEXT = 16384, 262144
TARGETS_HEADING = "### Targets by kernel"
DECODE_TARGETS_HEADING = "### Targets of the decode step"
DECODE_INPUT = "--preset decode"  # in a generated batch's input path (dsa-harness bench)


def fail(path, key, rule):
    print(f"bench-table: {path}: {key}: {rule}", file=sys.stderr)
    sys.exit(4)


def read_targets(path, heading=TARGETS_HEADING):
    """{kernel: (target_ms or None, target_x_floor or None)} from the targets table under heading."""
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        fail(path, "targets", f"cannot read ({e.strerror})")
    if not any(l.startswith(heading) for l in lines):
        fail(path, heading, "heading not found")
    start = next(i for i, l in enumerate(lines) if l.startswith(heading))
    targets = {}
    for line in lines[start + 1:]:
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or cells[0] in ("kernel", "") or set(cells[0]) <= set("-"):
            continue
        num = lambda c: None if c in ("-", "") else float(c)
        targets[cells[0]] = (num(cells[2]), num(cells[3]))
    if not targets:
        fail(path, heading, "the table has no rows")
    return targets


def target_ms(targets, name, floor_ms):
    if name not in targets:
        return None
    ms, times_floor = targets[name]
    given = [t for t in (ms, None if times_floor is None else times_floor * floor_ms) if t is not None]
    return min(given) if given else None


def fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}g}"


def rate(k):
    if k.get("flops", 0) > 0:
        return f"{k['tflops']:.4g} TFLOP/s"
    if k.get("bytes", 0) > 0:
        return f"{k['gbps'] / 1e3:.4g} TB/s"
    return "-"


def load(path):
    try:
        report = json.load(open(path, encoding="utf-8"))
    except (OSError, ValueError) as e:
        fail(path, "report.json", f"not readable JSON ({e})")
    for key in ("schema_version", "inputs", "runs", "environment"):
        if key not in report:
            fail(path, key, "missing: not a dsa-harness report")
    if not any(r.get("impl") == "ceilings" for r in report["runs"]):
        fail(path, "runs", "no ceilings run: not a `dsa-harness bench` report")
    return report


def targets_for(inp, rows, targets, decode_targets):
    """The targets that apply to a run on input inp: the reference problem's, the decode step's, or none."""
    if rows == REFERENCE_ROWS and inp.get("max_len") == REFERENCE_CONTEXT:
        return targets
    if DECODE_INPUT in inp.get("path", ""):
        return decode_targets
    return None


def table(report, targets, decode_targets):
    inputs = {i["batch_id"]: i for i in report["inputs"]}
    out = ["| kernel | measured | floor | target | share of ceiling |", "|---|---|---|---|---|"]
    for run in report["runs"]:
        if run["impl"] == "ceilings":
            for k in run["kernels"]:
                out.append(f"| {k['kernel']} | {rate(k)} ({fmt(k['median_ms'])} ms) | - | - | (the ceiling) |")
    for run in report["runs"]:
        if not run["impl"].startswith("gpu-") or run.get("status") != "passed":
            continue
        inp = inputs.get(run["batch_id"], {})
        here = targets_for(inp, run.get("rows"), targets, decode_targets)
        where = f"{inp.get('max_len', '?')} x {run.get('rows', '?')} rows"
        total = floor = 0.0
        for k in run["kernels"]:
            if k["kernel"].endswith("/step"):
                continue
            short = k["kernel"].split("/", 1)[1]
            if "." in short:  # a route's share of a kernel (dense_logits.wgmma): not a kernel of its own
                continue
            total += k["median_ms"] * k["calls"]
            floor += k["floor_ms"] * k["calls"]
            tgt = target_ms(here, short, k["floor_ms"]) if here else None
            out.append(f"| {k['kernel']} @{k['layer']} ({where}) | {fmt(k['median_ms'])} ms "
                       f"({fmt(k['min_ms'])}..{fmt(k['max_ms'])}) | {fmt(k['floor_ms'])} ms | "
                       f"{fmt(tgt) + ' ms' if tgt is not None else '-'} | {100 * k['ceiling_share']:.3g} % |")
        tgt = target_ms(here, f"whole {run['impl']} path", floor) if here else None
        peak = run.get("peak_device_bytes", -1)
        # The path's floor: its kernels' floors summed (each the larger of math and bytes).
        out.append(f"| whole {run['impl']} path ({where}) | {fmt(total)} ms (sum of medians; peak "
                   f"{fmt(peak / 2**30) + ' GiB' if peak >= 0 else '-'}) | {fmt(floor)} ms | "
                   f"{fmt(tgt) + ' ms' if tgt is not None else '-'} | "
                   f"{f'{100 * floor / total:.3g} %' if total > 0 else '-'} |")
    for run in report["runs"]:
        if run["impl"] != "torch-mask" or run.get("status") != "passed":
            continue
        inp = inputs.get(run["batch_id"], {})
        for k in run["kernels"]:
            if k["kernel"].endswith("/chunk"):
                out.append(f"| PyTorch mask path, whole chunk ({inp.get('max_len', '?')} x "
                           f"{inp.get('rows', '?')} rows) | {fmt(k['median_ms'])} ms | - | - | - |")
    return "\n".join(out) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report")
    ap.add_argument("--targets", default=os.path.join(here, "..", "docs", "performance.md"))
    a = ap.parse_args()
    report = load(a.report)
    env = report["environment"]
    print(f"GPU {env.get('gpu')} ({env.get('gpu_detail', '')}), driver {env.get('driver') or '?'}, "
          f"CUDA {env.get('cuda') or '?'}, SM clock {env.get('sm_clock') or '?'}; commit {env.get('commit')}\n")
    sys.stdout.write(table(report, read_targets(a.targets), read_targets(a.targets, DECODE_TARGETS_HEADING)))


if __name__ == "__main__":
    main()
