#!/usr/bin/env python3
"""Where a kernel spends its instructions and its stalls, from Nsight Compute's source page.

    ncu --import prof.ncu-rep --page source --csv --print-source sass > sass.csv
    tools/ncu-sass-summary.py sass.csv[.gz] [--top 12] [--phase-share 1.0] > summary.txt

The report must come from `ncu --set full --import-source yes` (source counters). For each kernel
in the file: warp instructions executed and stall samples in total; the stall reasons' shares;
instructions and samples by opcode; the hottest instructions with their main stall reasons; and
the phases: runs of consecutive instructions executed equally often (a loop body, an unrolled
pass), with their share of instructions and of samples, so a kernel's cost reads per phase
(bench/results/h200.md, runs 46-48, was read this way). Exit 4 on a file that is not such a
page (the message names the file and the missing column).
"""
import argparse
import collections
import csv
import gzip
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"
SOURCE = "Source"
ADDRESS = "Address"


def fail(path, key, rule):
    print(f"ncu-sass-summary: {path}: {key}: {rule}", file=sys.stderr)
    sys.exit(4)


def read_kernels(path):
    """[(kernel name, header, rows)] for each "Kernel Name" block of the page."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as f:
            lines = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        fail(path, "file", f"not readable as CSV ({e})")
    kernels, current = [], None
    for line in lines:
        if line and line[0] == "Kernel Name":
            current = [line[1] if len(line) > 1 else "?", None, []]
            kernels.append(current)
        elif current is not None and current[1] is None:
            current[1] = line
        elif current is not None and line:
            current[2].append(line)
    if not kernels:
        fail(path, "Kernel Name", "no kernel block (expected ncu --page source --csv --print-source sass)")
    for name, header, _ in kernels:
        for column in (SAMPLES, EXECUTED, SOURCE, ADDRESS):
            if header is None or column not in header:
                fail(path, column, f"missing in the block of kernel {name} (profile with --import-source yes)")
    return kernels


def number(text):
    try:
        return int(float(text or 0))
    except ValueError:
        return 0


def opcode(source):
    """The instruction's opcode without its predicate and modifiers: '@!P1 ISETP.NE.AND ...' -> ISETP."""
    text = re.sub(r"^@!?U?P\w+\s+", "", source.strip())
    return text.split()[0].split(".")[0] if text else "?"


def summarize(name, header, rows, top, phase_share, out):
    col = {h: i for i, h in enumerate(header)}
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    samples = [number(r[col[SAMPLES]]) for r in rows]
    executed = [number(r[col[EXECUTED]]) for r in rows]
    total_s, total_e = max(sum(samples), 1), max(sum(executed), 1)
    out.write(f"## {name}\n\n{sum(executed)} warp instructions executed, {sum(samples)} stall samples, "
              f"{len(rows)} instructions in the binary\n\n")
    by_reason = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h] += number(r[col[h]])
    out.write("stall reasons: " + ", ".join(f"{h[6:]} {100 * v / total_s:.1f} %"
                                             for h, v in by_reason.most_common(8)) + "\n\n")
    op_samples, op_executed = collections.Counter(), collections.Counter()
    for r, s, e in zip(rows, samples, executed):
        op_samples[opcode(r[col[SOURCE]])] += s
        op_executed[opcode(r[col[SOURCE]])] += e
    out.write("| opcode | samples | instructions |\n|---|---|---|\n")
    for op, s in op_samples.most_common(top):
        out.write(f"| {op} | {100 * s / total_s:.1f} % | {100 * op_executed[op] / total_e:.1f} % |\n")
    out.write("\n| hottest instruction | samples | executed | main stalls |\n|---|---|---|---|\n")
    hottest = sorted(range(len(rows)), key=lambda i: -samples[i])[:top]
    for i in hottest:
        r = rows[i]
        main = sorted(((number(r[col[h]]), h[6:]) for h in reasons), reverse=True)[:3]
        stalls = ", ".join(f"{why} {v}" for v, why in main if v)
        out.write(f"| `{r[col[SOURCE]].strip()[:60]}` | {100 * samples[i] / total_s:.1f} % | {executed[i]} | {stalls} |\n")
    out.write("\n| phase (first instruction) | length | executed each | instructions | samples | opcodes |\n"
              "|---|---|---|---|---|---|\n")
    start = 0
    for i in range(1, len(rows) + 1):
        if i < len(rows) and executed[i] == executed[start]:
            continue
        e, s = executed[start] * (i - start), sum(samples[start:i])
        if 100 * e / total_e >= phase_share or 100 * s / total_s >= phase_share:
            ops = collections.Counter(opcode(r[col[SOURCE]]) for r in rows[start:i]).most_common(4)
            out.write(f"| {start} ({rows[start][col[ADDRESS]][-5:]}) | {i - start} | {executed[start]} | "
                      f"{100 * e / total_e:.1f} % | {100 * s / total_s:.1f} % | "
                      + " ".join(f"{op}x{n}" for op, n in ops) + " |\n")
        start = i
    out.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --page source --csv --print-source sass output (.gz allowed)")
    ap.add_argument("--top", type=int, default=12, help="rows of the opcode and hottest-instruction tables")
    ap.add_argument("--phase-share", type=float, default=1.0,
                    help="list a phase when it holds at least this percentage of instructions or samples")
    args = ap.parse_args()
    for name, header, rows in read_kernels(args.csv):
        summarize(name, header, rows, args.top, args.phase_share, sys.stdout)


if __name__ == "__main__":
    main()
