#!/usr/bin/env python3
"""Writes the seed corpus of the public-API fuzzer (tests/fuzz/api_fuzzer.cpp) to
tests/fuzz/api_corpus/: a few short, valid programs of ag calls that reach each kind of step, for
libFuzzer to mutate. Pure python3.

The encoding is the fuzzer's (see the comment at the top of api_fuzzer.cpp): 12-byte records
[op, variant, dst, a, b, c, p0, p1, p2, p3, p4, p5]; the low nibble of a p byte indexes INTS or
DOUBLES, the high nibble holds flags, dtypes and counts. The seeds written here are named seed_*;
the other files in the folder are minimized crash reproducers (found by the fuzzer, reduced to
the fewest records that still crash the same way), each named after its test in
tests/test_fuzz_regressions.cpp; this script does not touch them.

    python3 tools/make_api_fuzz_corpus.py            # (re)writes tests/fuzz/api_corpus/seed_*
    python3 tools/make_api_fuzz_corpus.py --decode FILE   # prints a file's records, one a line
"""
import os
import sys

# kInts and kDoubles of api_fuzzer.cpp, by index
INTS = [0, 1, 2, 3, 7, -1, -2, 2**31, 2**32, 2**62, 2**63 - 1, -2**63, 4, 5, 6, -3]
DOUBLES = ["0", "1", "-1", "2.5", "0.5", "-0", "3", "nan", "inf", "-inf", "1e308", "1e-310",
           "9.3e18", "-9.3e18", "1e10", "7"]
OPS = ["create", "literal", "view", "slice", "index", "reduce", "binary", "unary", "convert",
       "inplace", "gradmeta", "backward", "grad", "optim", "linear", "assign", "touch", "loss"]
OP = {name: i for i, name in enumerate(OPS)}
DTYPE = {"float32": 0, "float64": 1, "int64": 2, "bool": 3}


def i(v):
    """Low nibble for the int v (must be in INTS)."""
    return INTS.index(v)


def d(v):
    """Low nibble for the double written as v (must be in DOUBLES)."""
    return DOUBLES.index(v)


def rec(op, variant=0, dst=0, a=0, b=0, c=0, p=(0, 0, 0, 0, 0, 0)):
    p = list(p) + [0] * (6 - len(p))
    assert all(0 <= x < 256 for x in p)
    return bytes([OP[op], variant, dst, a, b, c] + p)


def shape(*dims):
    """p0..p3 for a shape S: ndim in hi(0), dims in the low nibbles of p0..p3."""
    assert len(dims) <= 4
    p = [0, 0, 0, 0]
    for k, v in enumerate(dims):
        p[k] = i(v)
    p[0] |= len(dims) << 4
    return p


def opts(dtype=None, requires_grad=False):
    """hi nibble of an options byte: bit 0 dtype given, bits 1-2 dtype, bit 3 requires_grad."""
    h = 0
    if dtype is not None:
        h |= 1 | (DTYPE[dtype] << 1)
    if requires_grad:
        h |= 8
    return h << 4


def create(kind, dst, dims=(), dtype=None, requires_grad=False, p4lo=0, p5=0):
    kinds = ["zeros", "ones", "full", "empty", "randn", "rand", "arange", "arange3", "linspace", "eye"]
    p = shape(*dims) + [opts(dtype, requires_grad) | p4lo, p5]
    return rec("create", kinds.index(kind), dst, p=p)


def ints_literal(dst, values):
    """tensor(std::vector<int64_t>{values}) (up to 6 values)."""
    assert len(values) <= 6
    return rec("literal", 6 | (len(values) << 4), dst, p=[i(v) for v in values])


SEEDS = {
    # randn leaves, matmul, sum, backward, read the grads, Adam steps
    "seed_autograd": [
        create("randn", 0, (2, 3), requires_grad=True),
        create("randn", 1, (3, 2), requires_grad=True),
        rec("binary", 5, dst=2, a=0, b=1),                      # s2 = s0.matmul(s1)
        rec("reduce", 0, dst=3, a=2),                           # s3 = s2.sum()
        rec("backward", 0, a=3, p=[0, 0x10]),                   # s3.backward(retain_graph=true)
        rec("gradmeta", 4, dst=4, a=0),                         # s4 = s0.grad()
        rec("grad", 0, dst=5, a=3, b=1, p=[0, 0, 0x10]),        # ag::grad({s3}, {s1}, retain)
        rec("optim", 1, a=0, b=1, p=[d("0.5"), d("0.5"), d("0.5"), d("1"), 0x10, 0x10]),  # Adam, step
    ],
    # nn::Linear: forward, backward, SGD step, load_state_dict of a fresh dict
    "seed_linear": [
        rec("linear", 0, dst=0, p=[0x12, 0x03]),                # Linear(2, 3), weight -> s0
        create("randn", 1, (4, 2)),
        rec("linear", 2, dst=2, a=1),                           # s2 = lin(s1)
        rec("reduce", 21, dst=3, a=2),                          # s3 = s2.mean()
        rec("backward", 0, a=3),
        rec("optim", 5, a=0, p=[0, 0, 0, 0, 0x10]),             # SGD({s0}, lr 0.1), step
        create("randn", 4, (3, 2)),
        create("randn", 5, (3,)),
        rec("linear", 1, a=4, b=5, p=[0, 0x10, 0x20, 0x00, 0x10]),  # load {weight: s4, bias: s5}, strict
    ],
    # views, slices and reads
    "seed_views": [
        create("arange", 0, p4lo=0, p5=d("7")),                 # arange(7.0) (int64: 7 is whole)
        rec("view", 0, dst=1, a=0, p=shape(7, 1)),              # s0.view({7, 1})
        rec("view", 2, dst=2, a=1, p=shape(7, 3)),              # expand({7, 3})
        rec("view", 3, dst=3, a=2, p=[0, 0, 0, 0, i(0), i(1)]),  # transpose(0, 1)
        rec("slice", 0, dst=4, a=3, p=[i(1), i(-1), i(2), 0, i(1)]),  # slice(1, 1, -1, 2)
        rec("slice", 1, dst=5, a=2, p=[i(0), i(1), i(3)]),      # narrow(0, 1, 3)
        rec("slice", 3, dst=6, a=5, p=[i(2)]),                  # s5[2]
        rec("view", 9, dst=7, a=0, p=shape(-1, 1)[:4] + [i(0)]),  # unflatten(0, {-1, 1})
        rec("touch", 0, a=4),
    ],
    # gathers and scatters with int64 indices
    "seed_index": [
        create("randn", 0, (3, 4)),
        ints_literal(1, [2, 0, 1]),
        rec("index", 0, dst=2, a=0, b=1, p=[i(0)]),             # index_select(0, s1)
        rec("view", 0, dst=3, a=1, p=shape(3, 1)),
        rec("index", 1, dst=4, a=0, b=3, p=[i(1)]),             # gather(1, s3)
        create("ones", 5, (3, 1)),
        rec("index", 2, dst=6, a=0, b=3, c=5, p=[i(1)]),        # scatter_add(1, s3, s5)
        rec("binary", 17, dst=7, a=0, p=[d("0")]),              # s7 = s0.gt(0)
        rec("index", 4, dst=2, a=0, b=7),                       # masked_select(s7)
        rec("index", 3, dst=2, a=0, b=7, p=[0, d("2.5")]),      # masked_fill(s7, 2.5)
    ],
    # reductions over dims, with keepdim
    "seed_reduce": [
        create("randn", 0, (2, 3, 4), requires_grad=True),
        rec("reduce", 1, dst=1, a=0, p=[0x10 | i(1), 0x10]),    # sum({1}, keepdim)
        rec("reduce", 3, dst=2, a=0, p=[i(-1)]),                # max(-1).values
        rec("reduce", 9, dst=3, a=0, p=[0x20 | i(0), i(2), 0x10]),  # var({0, 2}, unbiased)
        rec("reduce", 12, dst=4, a=0, p=[0x10 | i(2)]),         # logsumexp({2})
        rec("reduce", 13, dst=5, a=0, p=[i(1)]),                # cumsum(1)
        rec("reduce", 14, dst=6, a=0, p=[0x10 | i(2), 0, 0, d("1")]),  # norm(1, {2})
        rec("reduce", 0, dst=7, a=6),
        rec("backward", 0, a=7),
    ],
    # assignment through a temporary and in-place ops
    "seed_assign": [
        create("zeros", 0, (3, 2)),
        create("ones", 1, (2,)),
        rec("assign", 0, a=0, b=1, p=[i(1)]),                   # s0[1] = s1
        rec("assign", 1, a=0, p=[i(2), 0x10]),                  # s0[2] = 2.5
        rec("assign", 2, a=0, b=1, p=[i(0), i(0)]),             # s0.select(0, 0) = s1
        rec("inplace", 0, a=0, b=1, p=[d("0.5")]),              # s0.add_(s1, 0.5)
        rec("inplace", 10, a=0, p=[d("0"), d("1")]),            # clamp_(0, 1)
        rec("convert", 2, dst=2, a=0),                          # s0.to(int64)
        rec("convert", 3, dst=3, a=0),                          # s0.to(bool)
        rec("inplace", 11, a=0, b=3, p=[d("7")]),               # masked_fill_(s3, 7)
    ],
    # losses and set_grad before an optimizer step
    "seed_grad": [
        create("randn", 0, (4, 3), requires_grad=True),
        ints_literal(1, [0, 2, 1, 1]),
        rec("loss", 0, dst=2, a=0, b=1, p=[0, i(-1), d("0")]),  # cross_entropy(s0, s1, -1)
        rec("backward", 0, a=2),
        create("ones", 3, (4, 3)),
        rec("gradmeta", 0, a=0, b=3),                           # s0.set_grad(s3)
        rec("optim", 0, a=0, p=[d("0.5"), d("0.5"), d("0"), 0, 0x10]),  # SGD momentum, step
        rec("gradmeta", 2, a=0, p=[0x00]),                      # requires_grad_(false)
    ],
}


def decode(path):
    data = open(path, "rb").read()
    for k in range(0, min(len(data), 32 * 12), 12):
        r = list(data[k:k + 12]) + [0] * max(0, k + 12 - len(data))
        op = OPS[r[0] % len(OPS)]
        p = r[6:]
        print(f"{op:9s} variant={r[1]:3d} dst={r[2] % 8} a={r[3] % 8} b={r[4] % 8} c={r[5] % 8}  "
              + " ".join(f"[I={INTS[x & 15]} D={DOUBLES[x & 15]} hi={x >> 4}]" for x in p))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--decode":
        decode(sys.argv[2])
        return
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fuzz", "api_corpus")
    os.makedirs(out, exist_ok=True)
    for name, records in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(b"".join(records))
    print(f"wrote {len(SEEDS)} seeds to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
