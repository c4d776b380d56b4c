#!/usr/bin/env python3
"""Exact check of the sparse wgmma kernel's "key scale last" (gpu/sparse_logits/sparse_wgmma.cu;
its admission: weights_scale_last in gpu/prep/prep.cu): the reference's bf16 chain over the
products sk * u_h * w'_h equals sk times the chain over u_h * w'_h, bit for bit, for rows whose
nonzero folded weights w' have exponents in [-81, 52] and keys of scale sk in [2^-45, 2^45].

The chain is the reference's (docs/semantics.md, "Sparse score"): 4 lanes of 8 heads, one bf16
rounding per fma, then bf16(bf16(l0 + l2) + bf16(l1 + l3)); u_h = bf16(relu(S_h)) for integer
head sums S_h. Arithmetic in Fractions, so the only roundings are bf16's own (subnormals down to
2^-133, overflow to inf). Random rows at the range's edges (w' = 2^-81 with sk = 2^-45, w' =
2^52 with sk = 2^45) must all agree; rows just outside it (w' near 2^-90) must not, which shows
the check can fail. About 30 s at the default 20000 rows:

    python3 bench/micro/scale_last_exactness.py [ROWS]
"""
import random
import sys
from fractions import Fraction as F

def bf16(x):
    if x == 0:
        return F(0)
    s = -1 if x < 0 else 1
    a = abs(x)
    if a >= F(2**128) - F(2**119):  # halfway to 2^128 and above: inf
        return None
    # exponent e with 2^e <= a < 2^(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if F(2)**e > a: e -= 1
    ulp = F(2)**(max(e, -126) - 7)
    q = a / ulp
    n = q.numerator // q.denominator
    r = q - n
    if r > F(1, 2) or (r == F(1, 2) and n % 2 == 1):
        n += 1
    v = n * ulp
    if v >= F(2**128):
        return None
    return s * v

def chain(products):
    lanes = []
    for l in range(4):
        acc = F(0)
        for h in range(l, 32, 4):
            acc = bf16(products[h] + acc)
            if acc is None:
                return None
        lanes.append(acc)
    a02 = bf16(lanes[0] + lanes[2]); a13 = bf16(lanes[1] + lanes[3])
    if a02 is None or a13 is None: return None
    return bf16(a02 + a13)

def rand_bf16(emin, emax):
    e = random.randint(emin, emax)
    m = random.randint(128, 255)
    return (-1 if random.random() < 0.5 else 1) * F(m) * F(2)**(e - 7)

random.seed(1)
rows = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
bad = checked = 0
for it in range(rows):
    lo = random.choice([-81, -81, -80, -60, 0, 40])
    hi = min(52, lo + random.choice([0, 1, 3, 8, 20]))
    w = [rand_bf16(lo, hi) if random.random() > 0.05 else F(0) for _ in range(32)]
    sk = F(2)**random.choice([-45, -45, -44, -30, 0, 30, 45])
    S = [random.choice([0, 1, 2, 3, 5, 255, 257, 4097, 2**22 + 1, random.randint(1, 2**23 - 1)]) * (1 if random.random() < 0.6 else -1) for _ in range(32)]
    u = [bf16(F(max(s, 0))) for s in S]
    ref = chain([sk * u[h] * w[h] for h in range(32)])
    mine = chain([u[h] * w[h] for h in range(32)])
    mine = None if mine is None else bf16(mine * sk)
    checked += 1
    if ref != mine:
        bad += 1
        if bad < 5: print("mismatch", lo, hi, sk, ref, mine)
print("checked", checked, "mismatches", bad)
# Outside the range (w' exponent -82 .. -100 with sk 2^-45): mismatches should exist.
bad2 = 0
for it in range(rows // 4):
    w = [rand_bf16(-100, -90) for _ in range(32)]
    sk = F(2)**-45
    S = [random.randint(-2**10, 2**10) for _ in range(32)]
    u = [bf16(F(max(s, 0))) for s in S]
    ref = chain([sk * u[h] * w[h] for h in range(32)])
    mine = chain([u[h] * w[h] for h in range(32)])
    mine = None if mine is None else bf16(mine * sk)
    bad2 += ref != mine
print("outside the range: mismatches", bad2, "of", rows // 4)
sys.exit(1 if bad or not bad2 else 0)
