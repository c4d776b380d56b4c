"""tools/ncu-sass-summary.py: per-kernel stall reasons, opcodes, hottest instructions and phases
from Nsight Compute's source page (CSV, optionally gzipped); bad input exits 4 naming the file and
the missing column."""
import gzip
import os
import subprocess
import sys

SOURCE = os.environ.get("DSA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.path.join(SOURCE, "tools", "ncu-sass-summary.py")
HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
          "Instructions Executed", "stall_barrier", "stall_long_sb", "stall_math", "stall_barrier (Not Issued)"]


def row(address, source, samples, executed, barrier, long_sb, math):
    return [address, source, str(samples), "0", str(executed), str(barrier), str(long_sb), str(math), "0"]


def page(kernels):
    lines = []
    for name, rows in kernels:
        lines.append(f'"Kernel Name","{name}",')
        lines.append(",".join(f'"{h}"' for h in HEADER))
        lines += [",".join(f'"{c}"' for c in r) for r in rows]
    return "\n".join(lines) + "\n"


def run(path, *args):
    return subprocess.run([sys.executable, TOOL, str(path), *args], capture_output=True, text=True)


# A loop of three instructions executed 100 times after a prologue of two executed once: the loop
# holds nearly all instructions, the load waits on memory, the barrier instruction on the barrier.
KERNEL_A = ("select_kernel<16>", [
    row("0x10", "LDC R1, c[0x0][0x28]", 1, 1, 0, 0, 1),
    row("0x20", "@!P0 LDG.E.128 R4, desc[UR4][R2.64]", 2, 1, 0, 2, 0),
    row("0x30", "ISETP.NE.AND P1, PT, R4, RZ, PT", 60, 100, 0, 50, 10),
    row("0x40", "ATOMS.POPC.INC.32 RZ, [R5+UR5]", 30, 100, 30, 0, 0),
    row("0x50", "@P1 BRA 0x30", 7, 100, 0, 0, 7),
])
KERNEL_B = ("other_kernel", [row("0x10", "EXIT", 1, 4, 0, 0, 1)])


def test_summary_per_kernel_with_phases_and_stalls(tmp_path):
    path = tmp_path / "sass.csv.gz"
    with gzip.open(path, "wt") as f:
        f.write(page([KERNEL_A, KERNEL_B]))
    r = run(path, "--top", "3")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "## select_kernel<16>" in out and "## other_kernel" in out
    assert "302 warp instructions executed, 100 stall samples" in out
    assert "long_sb 52.0 %" in out and "barrier 30.0 %" in out
    assert "| ISETP | 60.0 % | 33.1 % |" in out  # predicate and modifiers stripped
    assert "| LDG | 2.0 % |" not in out  # --top 3 keeps ISETP, ATOMS, BRA
    assert "`ISETP.NE.AND P1, PT, R4, RZ, PT` | 60.0 % | 100 | long_sb 50, math 10 |" in out
    # the loop: instruction 2 on, three instructions executed 100 times each
    assert "| 2 (0x30) | 3 | 100 | 99.3 % | 97.0 % | ISETPx1 ATOMSx1 BRAx1 |" in out


def test_bad_input_exits_4_naming_file_and_column(tmp_path):
    plain = tmp_path / "notes.txt"
    plain.write_text("hello\n")
    r = run(plain)
    assert r.returncode == 4 and "notes.txt" in r.stderr and "Kernel Name" in r.stderr
    no_counters = tmp_path / "nocounters.csv"
    no_counters.write_text('"Kernel Name","k",\n"Address","Source"\n"0x10","EXIT"\n')
    r = run(no_counters)
    assert r.returncode == 4 and "nocounters.csv" in r.stderr and "Warp Stall Sampling" in r.stderr
    r = run(tmp_path / "missing.csv")
    assert r.returncode == 4 and "missing.csv" in r.stderr
