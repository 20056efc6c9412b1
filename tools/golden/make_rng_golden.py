#!/usr/bin/python3
"""Regenerates tests/golden/rng_cases.txt: PyTorch 1.13's random numbers, as bit patterns.

Run with Debian's PyTorch (apt-get install python3-torch, no MKL, as specified in
../shared/docs/torch-rng.md):  /usr/bin/python3 tools/golden/make_rng_golden.py

Each case seeds the global generator, then runs a sequence of ops (the generator state and the
normal cache carry over from op to op). Each op line is followed by its output: all elements, or
for large outputs a few picked ones ("pick N i:v ..."). float32 values are written as 8 hex digits,
float64 as 16, integers in decimal. tests/test_random.cpp replays the same ops.
"""
import math
import os
import struct

import torch

torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "rng_cases.txt")


def enc(t):
    flat = t.detach().reshape(-1)
    if t.dtype == torch.float32:
        return ["%08X" % struct.unpack("<I", struct.pack("<f", v))[0] for v in flat.tolist()]
    if t.dtype == torch.float64:
        return ["%016X" % struct.unpack("<Q", struct.pack("<d", v))[0] for v in flat.tolist()]
    return [str(int(v)) for v in flat.tolist()]


DT = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def dims(s):
    return [int(x) for x in s.split(",")] if s else []


def run(op):
    w = op.split()
    k = w[0]
    if k == "rand":
        return torch.rand(dims(w[2]), dtype=DT[w[1]])
    if k == "randn":
        return torch.randn(dims(w[2]), dtype=DT[w[1]])
    if k == "normal":
        return torch.empty(dims(w[2]), dtype=DT[w[1]]).normal_(float(w[3]), float(w[4]))
    if k == "normal_t":  # a transposed (non-contiguous) view, filled in memory order
        t = torch.empty(dims(w[2]), dtype=DT[w[1]]).t()
        return t.normal_()
    if k == "uniform":
        return torch.empty(dims(w[2]), dtype=DT[w[1]]).uniform_(float(w[3]), float(w[4]))
    if k == "bernoulli":
        return torch.empty(dims(w[2]), dtype=DT[w[1]]).bernoulli_(float(w[3]))
    if k == "randint":
        return torch.randint(int(w[1]), int(w[2]), dims(w[3]))
    if k == "randperm":
        return torch.randperm(int(w[1]))
    if k == "linear":
        m = torch.nn.Linear(int(w[1]), int(w[2]))
        return torch.cat([m.weight.detach().reshape(-1), m.bias.detach()])
    if k == "embedding":
        return torch.nn.Embedding(int(w[1]), int(w[2])).weight.detach()
    if k == "dropout":
        return torch.nn.Dropout(float(w[1]))(torch.ones(dims(w[2])))
    if k == "dropout_randn":  # dropout of a randn input (the input draw comes first)
        x = torch.randn(dims(w[2]))
        return torch.nn.Dropout(float(w[1]))(x)
    # multinomial over probabilities drawn first (the draws carry on): "rand" uniform weights,
    # "sparse" most of them zeroed, "ties" floor(3 u) (many equal values and zeros), "t" the
    # transpose of a rand (C, R) tensor (non-contiguous rows)
    if k == "multinomial":
        shape, n, repl, kind = dims(w[2]), int(w[3]), w[4] == "1", w[5]
        if kind == "t":
            p = torch.rand(shape[::-1], dtype=DT[w[1]]).t()
        else:
            p = torch.rand(shape, dtype=DT[w[1]])
        if kind == "sparse":
            p = p * (p > 0.7)
        if kind == "ties":
            p = torch.floor(p * 3)
        return torch.multinomial(p, n, replacement=repl)
    if k == "multinomial_list":  # given weights, 1-D
        p = torch.tensor([float(v) for v in w[4].split(",")], dtype=DT[w[1]])
        return torch.multinomial(p, int(w[2]), replacement=w[3] == "1")
    if k == "bernoulli_p":  # torch.bernoulli(p) of p = rand(shape)
        return torch.bernoulli(torch.rand(dims(w[2]), dtype=DT[w[1]]))
    if k == "bernoulli_scalar":  # torch.bernoulli(t, p)
        return torch.bernoulli(torch.zeros(dims(w[2]), dtype=DT[w[1]]), float(w[3]))
    if k == "exponential":
        return torch.empty(dims(w[2]), dtype=DT[w[1]]).exponential_(float(w[3]))
    raise ValueError(k)


CASES = [
    ("rand_f32", 123, ["rand float32 3,3"]),
    ("rand_f64", 123, ["rand float64 2"]),
    ("rand_large", 7, ["rand float32 1000", "rand float64 333"]),
    ("randn_scalar_path", 123, ["randn float32 4"]),
    ("randn_scalar_f64", 123, ["randn float64 2"]),
    ("randn_cache_carried_across_calls", 123, ["randn float32 1", "randn float64 1", "randn float32 3", "normal float32 1 2.0 3.0"]),
    ("randn_cache_untouched_by_block_and_rand", 5, ["randn float32 1", "randn float32 16", "rand float32 2", "randn float32 1"]),
    ("randn_sizes_around_16", 123, ["randn float32 %d" % n for n in (1, 15, 16, 17, 31, 32, 33, 100)]),
    ("randn_4x4_block_3x5_scalar", 42, ["randn float32 4,4", "randn float32 3,5"]),
    ("randn_f64_block", 123, ["randn float64 16", "randn float64 17", "randn float64 40"]),
    ("randn_150000", 0, ["randn float32 150000"]),
    ("randn_f64_5000", 1, ["randn float64 5000"]),
    ("normal_mean_std", 123, ["normal float32 2 0.5 2.5", "normal float32 20 -0.7 0.3", "normal float32 40 1.3 2.7", "normal float64 20 3.1 0.7"]),
    ("normal_non_contiguous", 9, ["normal_t float32 8,8", "normal_t float64 4,6"]),
    ("uniform", 123, ["uniform float32 3 -0.5 0.5", "uniform float32 50 -0.3333333333333333 0.3333333333333333",
                      "uniform float64 10 -2.0 5.0"]),
    ("bernoulli", 3, ["bernoulli float32 40 0.3", "bernoulli float64 10 0.9"]),
    ("randint", 123, ["randint 0 10 8", "randint -5 5 20", "randint 0 10000000000 6"]),
    ("randperm", 123, ["randperm 8"]),
    ("randperm_large", 11, ["randperm 1000"]),
    ("linear_3_2", 123, ["linear 3 2"]),
    ("linear_chained", 0, ["linear 5 7", "linear 7 3", "linear 16 16"]),
    ("linear_784_256", 123, ["linear 784 256"]),
    ("embedding_4_4", 123, ["embedding 4 4"]),
    ("embedding_3_5_leaves_cache_set", 123, ["embedding 3 5", "randn float32 1"]),
    ("embedding_50000_3", 123, ["embedding 50000 3"]),
    ("dropout_ones", 123, ["dropout 0.3 6,6", "dropout 0.5 40", "dropout 0.1 3,7", "dropout 0.9 25"]),
    ("dropout_randn", 4, ["dropout_randn 0.2 5,5"]),
    # multinomial: one and several samples, with and without replacement, 1-D and 2-D, both dtypes;
    # "rand float32 3" after each checks how many draws it used
    ("multinomial_one_sample", 123, ["multinomial float32 27 1 0 rand", "rand float32 3", "multinomial float64 4,10 1 0 rand",
                                     "multinomial float32 4,10 1 1 rand", "rand float32 3"]),
    ("multinomial_without_replacement", 7, ["multinomial float32 30 5 0 rand", "multinomial float64 3,9 9 0 rand",
                                            "multinomial float32 2,700 4 0 rand", "multinomial float32 5,6 3 0 t",
                                            "rand float32 3"]),
    ("multinomial_with_replacement", 11, ["multinomial float32 30 50 1 rand", "multinomial float64 3,9 20 1 rand",
                                          "multinomial float32 5,6 4 1 t", "rand float32 3"]),
    ("multinomial_zeros_and_ties", 0, ["multinomial_list float32 8 0 0,1,0,0,2,0,0,0", "multinomial float32 6,40 12 0 ties",
                                       "multinomial float32 6,40 12 0 sparse", "multinomial float64 6,40 30 1 sparse",
                                       "multinomial float32 6,40 30 1 ties", "rand float32 3"]),
    ("multinomial_makemore", 2147483647, ["multinomial float32 27 1 1 rand", "multinomial_list float32 1 1 0.1,0.2,0.3,0.4",
                                          "multinomial_list float64 8 1 0.1,0.2,0.3,0.4", "rand float32 3"]),
    ("bernoulli_p", 123, ["bernoulli_p float32 8", "bernoulli_p float64 3,5", "bernoulli_scalar float32 8 0.5",
                          "bernoulli_scalar float64 6 0.25", "rand float32 3"]),
    ("exponential", 123, ["exponential float32 3 1.0", "exponential float64 5 2.5", "exponential float32 40 0.5",
                          "rand float32 3"]),
    ("randperm_seeds", 5, ["randperm 1", "randperm 2", "randperm 30", "randperm 100", "rand float32 3"]),
]

PICK_OVER = 2048


def main():
    with open(OUT, "w") as f:
        f.write("# generated by tools/golden/make_rng_golden.py; do not edit\n")
        for name, seed, ops in CASES:
            f.write("case %s %d %d\n" % (name, seed, len(ops)))
            torch.manual_seed(seed)
            for op in ops:
                vals = enc(run(op))
                f.write("op %s\n" % op)
                n = len(vals)
                if n <= PICK_OVER:
                    f.write("all %d %s\n" % (n, " ".join(vals)))
                else:
                    idx = sorted(set([0, 1, 2, 15, 16, 17, n // 2, n - 17, n - 16, n - 2, n - 1]))
                    f.write("pick %d %s\n" % (n, " ".join("%d:%s" % (i, vals[i]) for i in idx)))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
