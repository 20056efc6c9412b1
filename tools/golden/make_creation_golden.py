#!/usr/bin/python3
"""Regenerates tests/golden/creation_cases.txt: PyTorch 1.13's linspace, logspace, eye and the random
*_like functions, as bit patterns; and the edge cases of the elementwise ops that the op table's
random inputs never reach (ties, bounds, zeros, NaN, thresholds, integer and bool inputs).

Run with Debian's PyTorch:  /usr/bin/python3 tools/golden/make_creation_golden.py

Each case is one line "op ..." (the call, in a small language tests/test_creation_inplace.cpp
replays) followed by "shape d1,d2,... strides s1,s2,..." and "all N v1 v2 ..." (the values in
row-major order of the logical shape), or for outputs of more than 2048 elements "pick N i:v ..."
(some of them). float32 values are written as 8 hex digits, float64 as 16,
integers and bools in decimal. The random ops run after "seed S" lines, which call
torch.manual_seed(S).

An edge case is "edge NAME" (the call, by name: EDGES below and the same table in the test), then
one "in DTYPE SHAPE : values" line per input (float64 inputs require grad), "out DTYPE SHAPE :
values", "grad_fn NAME" (or "none") and, after sum().backward(), one "grad SHAPE : values" line per
input that requires grad ("grad none" if it got no gradient). A call PyTorch refuses is "error"
instead of out/grad_fn/grad lines. The in-place cases ("edge inplace_NAME") add "version N" after
"out": the version counter of the tensor written in place. Values are Python reprs (nan, inf), shapes "-" for 0-dim.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_rng_golden import enc  # noqa: E402  (float32 as 8 hex digits, float64 as 16, else decimal)

torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "creation_cases.txt")
DT = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64, "bool": torch.bool,
      "float64c": torch.float64}  # float64c: a float64 edge-case input that does not require grad


def dims(s):
    """"3,5" -> [3, 5]; "-" is a 0-dim shape."""
    return [] if s == "-" else [int(x) for x in s.split(",")]


def source(kind, dt, shape):
    """The tensor a *_like op copies its shape, dtype and layout from:
    contig: contiguous; t: a transposed contiguous (2-D, dims reversed); step: every other column
    (not dense: the result is contiguous)."""
    if kind == "contig":
        return torch.zeros(shape, dtype=DT[dt])
    if kind == "t":
        return torch.zeros(list(reversed(shape)), dtype=DT[dt]).t()
    if kind == "step":
        return torch.zeros(shape[:-1] + [2 * shape[-1]], dtype=DT[dt])[..., ::2]
    raise ValueError(kind)


def run(op):
    w = op.split()
    k = w[0]
    if k == "linspace":  # linspace DTYPE START END STEPS
        return torch.linspace(float(w[2]), float(w[3]), int(w[4]), dtype=DT[w[1]])
    if k == "logspace":  # logspace DTYPE START END STEPS BASE
        return torch.logspace(float(w[2]), float(w[3]), int(w[4]), base=float(w[5]), dtype=DT[w[1]])
    if k == "eye":  # eye DTYPE N [M]
        return torch.eye(int(w[2]), dtype=DT[w[1]]) if len(w) == 3 else torch.eye(int(w[2]), int(w[3]), dtype=DT[w[1]])
    if k == "rand_like":  # rand_like DTYPE KIND SHAPE
        return torch.rand_like(source(w[2], w[1], dims(w[3])))
    if k == "randn_like":
        return torch.randn_like(source(w[2], w[1], dims(w[3])))
    if k == "randint_like":  # randint_like DTYPE KIND SHAPE LOW HIGH
        return torch.randint_like(source(w[2], w[1], dims(w[3])), int(w[4]), int(w[5]))
    raise ValueError(k)


PICK_OVER = 2048
# step counts around PyTorch's vector widths (8 float32 or 4 float64 lanes, in pairs)
LIN_RANGES = [(0, 1), (-3.7, 11.3), (1.1, -2.9), (0.1, 0.7), (-1, 1), (3, 3), (0.001, 7.77), (2.5, -100.25)]
LIN_STEPS = [0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 47, 64, 101]
LOG_RANGES = [(0, 1), (-3.7, 3.3), (1.1, -2.9), (0.1, 0.7), (2, 2)]
LOG_STEPS = [0, 1, 2, 3, 5, 9, 16, 17, 33]


def cases():
    out = []
    for dt in ("float32", "float64"):
        for s, e in LIN_RANGES:
            for n in LIN_STEPS:
                out.append("linspace %s %r %r %d" % (dt, s, e, n))
        out.append("linspace %s -10 10 257" % dt)
        out.append("linspace %s 0.3 -7.1 333" % dt)
        out.append("linspace %s -1.5 2.25 20000" % dt)
        out.append("linspace %s 40000 -0.125 40000" % dt)  # past PyTorch's grain size (one thread here)
        for s, e in LOG_RANGES:
            for n in LOG_STEPS:
                for base in (10.0, 2.5):
                    out.append("logspace %s %r %r %d %r" % (dt, s, e, n, base))
    for s, e in [(0, 10), (-7, 13), (13, -7), (0, 1), (3, 1000), (0.5, 9.7), (-2.7, 3.9)]:
        for n in (1, 2, 3, 5, 7, 8, 9, 10, 11, 16, 17, 33, 100):
            out.append("linspace int64 %r %r %d" % (s, e, n))
    for s, e in [(0, 3), (-1.5, 4.25), (3.7, -2)]:
        for n in (1, 2, 5, 9, 17):
            out.append("logspace int64 %r %r %d 2.0" % (s, e, n))
    for dt in ("float32", "float64", "int64", "bool"):
        out += ["eye %s 0" % dt, "eye %s 1" % dt, "eye %s 4" % dt, "eye %s 2 5" % dt, "eye %s 5 2" % dt, "eye %s 3 0" % dt]
    out.append("seed 123")
    for dt in ("float32", "float64"):
        for kind, shape in [("contig", "3,5"), ("contig", "4,4"), ("contig", "2,20"), ("t", "3,5"), ("t", "8,4"),
                            ("step", "4,5"), ("contig", "-"), ("contig", "0,3")]:
            out.append("randn_like %s %s %s" % (dt, kind, shape))
            out.append("rand_like %s %s %s" % (dt, kind, shape))
    out.append("seed 7")
    for dt in ("int64", "float32", "float64"):
        for kind, shape in [("contig", "3,5"), ("t", "4,6"), ("step", "3,3")]:
            out.append("randint_like %s %s %s 0 10" % (dt, kind, shape))
            out.append("randint_like %s %s %s -5 5" % (dt, kind, shape))
    out.append("randint_like int64 contig 7 0 10000000000")
    return out


NAN = float("nan")
INF = float("inf")
F = torch.nn.functional
C3 = [True, False, True]
EDGES = [
    # (name, call, inputs as (dtype, values or nested lists))
    ("abs_at_zero_and_nan", lambda x: torch.abs(x[0]), [("float64", [0.0, -1.0, 2.0, NAN, -0.0])]),
    ("sign_zero_gradient", lambda x: torch.sign(x[0]), [("float64", [0.0, -1.0, 2.0, NAN, -0.0])]),
    ("clamp_at_bounds", lambda x: torch.clamp(x[0], -1.0, 1.0), [("float64", [-1.0, 1.0, 0.0, 2.0, -2.0, NAN])]),
    ("clamp_min_above_max", lambda x: torch.clamp(x[0], 1.0, -1.0), [("float64", [-1.0, 1.0, 0.0, 2.0, -2.0])]),
    ("clamp_only_min_at_bound", lambda x: torch.clamp(x[0], min=1.0), [("float64", [1.0, 0.0, 2.0, NAN])]),
    ("clamp_min_at_bound", lambda x: torch.clamp_min(x[0], 1.0), [("float64", [1.0, 0.0, 2.0, NAN])]),
    ("clamp_max_at_bound", lambda x: torch.clamp_max(x[0], 1.0), [("float64", [1.0, 0.0, 2.0, NAN])]),
    ("clamp_nan_max", lambda x: torch.clamp(x[0], 0.0, NAN), [("float64", [0.3, -1.0])]),
    ("clamp_only_nan_min", lambda x: torch.clamp(x[0], min=NAN), [("float64", [0.3, -1.0])]),
    ("clamp_min_nan", lambda x: torch.clamp_min(x[0], NAN), [("float64", [0.3, -1.0])]),
    ("minimum_ties_and_nan", lambda x: torch.minimum(x[0], x[1]),
     [("float64", [1.0, 0.0, 2.0, NAN, 1.0]), ("float64", [1.0, 1.0, 1.0, 1.0, NAN])]),
    ("maximum_ties_and_nan", lambda x: torch.maximum(x[0], x[1]),
     [("float64", [1.0, 0.0, 2.0, NAN, 1.0]), ("float64", [1.0, 1.0, 1.0, 1.0, NAN])]),
    ("minimum_broadcast_ties", lambda x: torch.minimum(x[0], x[1]),
     [("float64", [[1.0], [2.0], [3.0]]), ("float64", [[2.0, 1.0, 3.0, 0.0]])]),
    ("maximum_broadcast_ties", lambda x: torch.maximum(x[0], x[1]),
     [("float64", [[1.0], [2.0], [3.0]]), ("float64", [[2.0, 1.0, 3.0, 0.0]])]),
    ("where_broadcast_grads", lambda x: torch.where(torch.tensor([[True], [False]]), x[0], x[1]),
     [("float64", [1.0, 2.0, 3.0]), ("float64", 5.0)]),
    ("leaky_relu_at_zero", lambda x: F.leaky_relu(x[0], 0.2), [("float64", [0.0, -1.0, 2.0, -0.0])]),
    ("elu_at_zero", lambda x: F.elu(x[0], 2.0), [("float64", [0.0, -1.0, 2.0, -1e-10, -30.0])]),
    ("softplus_at_threshold", lambda x: F.softplus(x[0]), [("float64", [20.0, 20.0001, 19.99, -1.0, -800.0, 800.0])]),
    ("softplus_beta_at_threshold", lambda x: F.softplus(x[0], 2.0, 5.0), [("float64", [2.5, 2.4, 2.6, 0.0])]),
    ("silu_extremes", lambda x: F.silu(x[0]), [("float64", [0.0, -800.0, 800.0, -30.0])]),
    ("rsqrt_at_zero", lambda x: torch.rsqrt(x[0]), [("float64", [0.0, 4.0, -1.0])]),
    ("reciprocal_at_zero", lambda x: torch.reciprocal(x[0]), [("float64", [0.0, 4.0, -0.0])]),
    ("log1p_at_minus_one", lambda x: torch.log1p(x[0]), [("float64", [-1.0, 0.0, 1e-20, -2.0])]),
    ("expm1_small", lambda x: torch.expm1(x[0]), [("float64", [1e-20, 0.0, -800.0])]),
    ("square_float", lambda x: torch.square(x[0]), [("float64", [-3.0, 0.5])]),
    # integer and bool inputs: the result dtype and values
    ("sin_int64", lambda x: torch.sin(x[0]), [("int64", [1, -2, 3])]),
    ("cos_bool", lambda x: torch.cos(x[0]), [("bool", C3)]),
    ("log1p_int64", lambda x: torch.log1p(x[0]), [("int64", [0, 1, 5])]),
    ("expm1_int64", lambda x: torch.expm1(x[0]), [("int64", [0, 1, -5])]),
    ("rsqrt_int64", lambda x: torch.rsqrt(x[0]), [("int64", [1, 4, 0])]),
    ("reciprocal_int64", lambda x: torch.reciprocal(x[0]), [("int64", [1, -2, 0])]),
    ("abs_int64", lambda x: torch.abs(x[0]), [("int64", [1, -2, 0])]),
    ("abs_bool", lambda x: torch.abs(x[0]), [("bool", C3)]),
    ("square_int64", lambda x: torch.square(x[0]), [("int64", [1, -3, 0])]),
    ("square_bool", lambda x: torch.square(x[0]), [("bool", C3)]),
    ("sign_int64", lambda x: torch.sign(x[0]), [("int64", [5, -3, 0])]),
    ("sign_bool", lambda x: torch.sign(x[0]), [("bool", C3)]),
    ("clamp_int64", lambda x: torch.clamp(x[0], -1, 2), [("int64", [1, -3, 5])]),
    ("clamp_int64_fraction", lambda x: torch.clamp(x[0], -1.5, 2.5), [("int64", [1, -3, 5])]),
    ("clamp_bool", lambda x: torch.clamp(x[0], 0, 1), [("bool", C3)]),
    ("clamp_min_int64", lambda x: torch.clamp_min(x[0], 0), [("int64", [1, -3, 5])]),
    ("clamp_max_int64_fraction", lambda x: torch.clamp_max(x[0], 0.5), [("int64", [1, -3, 5])]),
    ("minimum_int64", lambda x: torch.minimum(x[0], x[1]), [("int64", [1, -3, 5]), ("int64", [2, -4, 5])]),
    ("maximum_int64_float32", lambda x: torch.maximum(x[0], x[1]), [("int64", [1, -3, 5]), ("float32", [1.5, -4.0, 5.0])]),
    ("minimum_float32_float64", lambda x: torch.minimum(x[0], x[1]), [("float32", [0.1, 2.0]), ("float64", [0.2, 1.0])]),
    ("minimum_bool", lambda x: torch.minimum(x[0], x[1]), [("bool", C3), ("bool", [False, False, True])]),
    ("where_int64", lambda x: torch.where(torch.tensor(C3), x[0], x[1]), [("int64", [1, 2, 3]), ("int64", [4, 5, 6])]),
    ("where_int64_float_scalar", lambda x: torch.where(torch.tensor(C3), x[0], 1.5), [("int64", [1, 2, 3])]),
    ("where_int64_int_scalar", lambda x: torch.where(torch.tensor(C3), x[0], 7), [("int64", [1, 2, 3])]),
    ("where_scalar_float64", lambda x: torch.where(torch.tensor(C3), 2.5, x[0]), [("float64", [1.0, 2.0, 3.0])]),
    ("where_int64_float32", lambda x: torch.where(torch.tensor(C3), x[0], x[1]), [("int64", [1, 2, 3]), ("float32", [4.5, 5, 6])]),
    ("where_bool", lambda x: torch.where(torch.tensor(C3), x[0], x[1]), [("bool", C3), ("bool", [False, False, False])]),
    ("where_int_condition", lambda x: torch.where(torch.tensor([1, 0, 1]), x[0], x[1]), [("float64", [1.0, 2.0, 3.0]), ("float64", [4.0, 5.0, 6.0])]),
    ("softplus_int64", lambda x: F.softplus(x[0]), [("int64", [1, 2])]),
    ("silu_int64", lambda x: F.silu(x[0]), [("int64", [1, 2])]),
    ("leaky_relu_int64", lambda x: F.leaky_relu(x[0]), [("int64", [1, 2])]),
    ("elu_int64", lambda x: F.elu(x[0]), [("int64", [1, 2])]),
    ("gt_tensor_mixed", lambda x: torch.gt(x[0], x[1]), [("int64", [1, 2, 3]), ("float64", [1.5, 2.0, 0.5])]),
    ("ne_tensor_broadcast", lambda x: torch.ne(x[0], x[1]), [("float64", [[1.0], [2.0]]), ("float64", [1.0, 2.0, 3.0])]),
]



def inplace(f, on_copy=True):
    """A call that applies the in-place op f to y = x[0] * 1 (a non-leaf copy of x[0], so the op is
    recorded), or to x[0] itself (on_copy False: an input that does not require grad)."""
    def call(x):
        y = x[0] * 1 if on_copy else x[0]
        f(y, x)
        return y
    return call


def iadd(y, x): y += x[1]
def isub(y, x): y -= x[1]
def imul(y, x): y *= x[1]
def idiv(y, x): y /= x[1]
def iadd_s(y, x): y += 1.5
def isub_s(y, x): y -= 1.5
def imul_s(y, x): y *= 1.5
def idiv_s(y, x): y /= 1.5


A = ("float64", [[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]])
B = ("float64", [2.0, -0.5, 4.0])
# In-place ops: the same lines as an edge case, plus "version N" (the result's version counter).
INPLACE = [
    ("add_tensor_alpha", inplace(lambda y, x: y.add_(x[1], alpha=2.0)), [A, B]),
    ("add_scalar", inplace(lambda y, x: y.add_(1.5)), [A]),
    ("sub_tensor", inplace(lambda y, x: y.sub_(x[1])), [A, B]),
    ("sub_tensor_alpha", inplace(lambda y, x: y.sub_(x[1], alpha=2.0)), [A, B]),
    ("sub_scalar", inplace(lambda y, x: y.sub_(1.5)), [A]),
    ("mul_tensor", inplace(lambda y, x: y.mul_(x[1])), [A, B]),
    ("mul_scalar", inplace(lambda y, x: y.mul_(1.5)), [A]),
    ("div_tensor", inplace(lambda y, x: y.div_(x[1])), [A, B]),
    ("div_scalar", inplace(lambda y, x: y.div_(1.5)), [A]),
    ("clamp_both", inplace(lambda y, x: y.clamp_(-1.0, 2.0)), [A]),
    ("clamp_min_only", inplace(lambda y, x: y.clamp_(min=0.5)), [A]),
    ("clamp_max_only", inplace(lambda y, x: y.clamp_(max=0.5)), [A]),
    ("iadd_tensor", inplace(iadd), [A, B]),
    ("isub_tensor", inplace(isub), [A, B]),
    ("imul_tensor", inplace(imul), [A, B]),
    ("idiv_tensor", inplace(idiv), [A, B]),
    ("iadd_scalar", inplace(iadd_s), [A]),
    ("isub_scalar", inplace(isub_s), [A]),
    ("imul_scalar", inplace(imul_s), [A]),
    ("idiv_scalar", inplace(idiv_s), [A]),
    ("two_in_place_ops", inplace(lambda y, x: (y.mul_(x[1]), y.sub_(x[1]), y.clamp_(-3.0, 3.0))), [A, B]),
    # self does not require grad, the operand does: self joins the graph
    ("add_into_tensor_without_grad", inplace(lambda y, x: y.add_(x[1]), on_copy=False), [("float64c", [[1.0, 2.0, 3.0]]), B]),
    ("mul_into_tensor_without_grad", inplace(lambda y, x: y.mul_(x[1]), on_copy=False), [("float64c", [[1.0, 2.0, 3.0]]), B]),
    # dtypes: self's dtype is kept; a result self's dtype cannot hold is an error
    ("add_float64_into_float32", inplace(lambda y, x: y.add_(x[1]), on_copy=False),
     [("float32", [0.1, 0.2, 0.3]), ("float64c", [1e-8, 3.0, -0.7])]),
    ("add_int64", inplace(lambda y, x: y.add_(x[1]), on_copy=False), [("int64", [1, 2, 3]), ("int64", [4, -5, 6])]),
    ("mul_int64_scalar", inplace(lambda y, x: y.mul_(3), on_copy=False), [("int64", [1, 2, 3])]),
    ("sub_int64_scalar", inplace(lambda y, x: y.sub_(3), on_copy=False), [("int64", [1, 2, 3])]),
    ("clamp_int64", inplace(lambda y, x: y.clamp_(0, 2), on_copy=False), [("int64", [-1, 2, 3])]),
    ("div_int64", inplace(lambda y, x: y.div_(2), on_copy=False), [("int64", [1, 2, 3])]),
    ("mul_int64_fraction", inplace(lambda y, x: y.mul_(1.5), on_copy=False), [("int64", [1, 2, 3])]),
    ("clamp_int64_fraction", inplace(lambda y, x: y.clamp_(0.5, 2.5), on_copy=False), [("int64", [1, 2, 3])]),
    ("add_float_into_int64", inplace(lambda y, x: y.add_(x[1]), on_copy=False), [("int64", [1, 2, 3]), ("float32", [0.5, 1, 2])]),
]


def shape_str(t):
    return ",".join(map(str, t.shape)) or "-"


def values_str(t):
    return " ".join(repr(float(v)) if t.is_floating_point() else str(int(v)) for v in t.detach().reshape(-1).tolist())


def edge_lines(name, call, inputs, version=False):
    xs = [torch.tensor(v, dtype=DT[dt]) for dt, v in inputs]
    for (dt, _), t in zip(inputs, xs):
        t.requires_grad_(dt == "float64")
    lines = ["edge %s" % name]
    lines += ["in %s %s : %s" % (dt, shape_str(t), values_str(t)) for (dt, _), t in zip(inputs, xs)]
    leaves = [t for t in xs if t.requires_grad]  # before the call: an in-place op may add history
    try:
        y = call(xs)
    except RuntimeError:
        return lines + ["error"]
    lines.append("out %s %s : %s" % (str(y.dtype)[6:], shape_str(y), values_str(y)))
    if version:
        lines.append("version %d" % y._version)
    lines.append("grad_fn %s" % (y.grad_fn.name() if y.grad_fn is not None else "none"))
    if y.requires_grad:
        y.sum().backward()
    for t in leaves:
        lines.append("grad none" if t.grad is None else "grad %s : %s" % (shape_str(t.grad), values_str(t.grad)))
    return lines


def main():
    with open(OUT, "w") as f:
        f.write("# generated by tools/golden/make_creation_golden.py; do not edit\n")
        for op in cases():
            if op.startswith("seed "):
                torch.manual_seed(int(op.split()[1]))
                f.write(op + "\n")
                continue
            t = run(op)
            vals = enc(t)
            f.write("op %s\n" % op)
            f.write("shape %s strides %s\n" % (",".join(map(str, t.shape)) or "-", ",".join(map(str, t.stride())) or "-"))
            n = len(vals)
            if n <= PICK_OVER:
                f.write("all %d %s\n" % (n, " ".join(vals)))
            else:
                idx = sorted(set(i for i in [0, 1, 2, 15, 16, 17, n // 2 - 1, n // 2, n // 2 + 1, 32767, 32768,
                                             n - 17, n - 16, n - 2, n - 1] + list(range(0, n, 997)) if i < n))
                f.write("pick %d %s\n" % (n, " ".join("%d:%s" % (i, vals[i]) for i in idx)))
        for name, call, inputs in EDGES:
            f.write("\n".join(edge_lines(name, call, inputs)) + "\n")
        for name, call, inputs in INPLACE:
            f.write("\n".join(edge_lines("inplace_" + name, call, inputs, version=True)) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
