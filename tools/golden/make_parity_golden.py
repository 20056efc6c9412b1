#!/usr/bin/python3
"""Golden data for tests/test_pytorch_parity.cpp ("Trust on every path"), from PyTorch 1.13.

Run: /usr/bin/python3 tools/golden/make_parity_golden.py > tests/golden/parity.json

- matmul: for each pair of ranks, the graph (grad_fn.next_functions walked recursively, one line
  per node: its type name and the input index of the edge that led to it), the values and the
  gradients of sum(out * w), for inputs given here;
- linear of a 1-D input (SqueezeBackward3), with and without bias;
- masked_fill with a mask that broadcasts the input up, and masked_fill_'s error for it;
- gradcheck / gradgradcheck with NaN at the same place in both Jacobians (they fail);
- anomaly mode: an infinite gradient passes, a NaN one throws;
- int64 arithmetic that overflows: it wraps (two's complement).
"""
import json
import math
import warnings

import torch
import torch.nn.functional as F

warnings.simplefilter("ignore")
torch.set_default_dtype(torch.float64)


def walk(fn, depth=0, idx=None, out=None):
    out = [] if out is None else out
    name = "None" if fn is None else type(fn).__name__
    out.append("  " * depth + name + ("" if idx is None else " [%d]" % idx))
    if fn is not None:
        for f, i in fn.next_functions:
            walk(f, depth + 1, i, out)
    return out


def data(shape, phase):
    n = math.prod(shape)
    return torch.tensor([math.sin(0.7 * i + phase) for i in range(n)]).reshape(shape)


def flat(t):
    return t.detach().reshape(-1).tolist()


out = {}

# ---- 1. matmul: every pair of ranks, PyTorch 1.13's decomposition ----
# name -> (a's shape, b's shape, a permuted (0, 2, 1) from its stored shape?, b permuted?)
matmul_cases = {
    "1d_1d": ([3], [3], False, False),
    "2d_1d": ([2, 3], [3], False, False),
    "1d_2d": ([3], [3, 5], False, False),
    "2d_2d": ([2, 3], [3, 5], False, False),
    "2d_3d": ([2, 3], [4, 3, 5], False, False),
    "2d_4d": ([2, 3], [2, 4, 3, 5], False, False),
    "1d_3d": ([3], [4, 3, 5], False, False),
    "1d_4d": ([3], [2, 4, 3, 5], False, False),
    "3d_1d": ([4, 2, 3], [3], False, False),
    "3d_2d": ([4, 2, 3], [3, 5], False, False),
    "4d_2d": ([2, 4, 2, 3], [3, 5], False, False),
    "3d_3d": ([4, 2, 3], [4, 3, 5], False, False),
    "4d_3d": ([2, 4, 2, 3], [4, 3, 5], False, False),
    "3d_3d_bcast": ([4, 2, 3], [1, 3, 5], False, False),
    # a 3-D operand transposed over a contiguous batch is not folded: bmm
    "3dperm_2d": ([4, 3, 2], [3, 5], True, False),
    "2d_3dperm": ([2, 3], [4, 5, 3], False, True),
}
mm = {}
for name, (sa, sb, pa, pb) in matmul_cases.items():
    for rg in ("both", "a", "b"):
        a0 = data(sa, 0.1)
        b0 = data(sb, 0.9)
        a = a0.clone().requires_grad_(rg in ("both", "a"))
        b = b0.clone().requires_grad_(rg in ("both", "b"))
        A = a.permute(0, 2, 1) if pa else a
        B = b.permute(0, 2, 1) if pb else b
        y = A @ B
        w = data(list(y.shape), 2.3)
        (y * w).sum().backward()
        if rg != "both":  # the same values; only the graph differs
            mm[name + "_" + rg] = {"walk": walk(y.grad_fn)}
            continue
        mm[name] = {
            "a_shape": sa, "a": flat(a0), "a_permuted": pa,
            "b_shape": sb, "b": flat(b0), "b_permuted": pb,
            "shape": list(y.shape), "out": flat(y), "w": flat(w),
            "grad_a": flat(a.grad), "grad_b": flat(b.grad), "walk": walk(y.grad_fn),
        }
out["matmul"] = mm

# ---- 2. linear of a 1-D input ----
lin = {}
for bias in (True, False):
    x = data([4], 0.2).requires_grad_()
    W = data([5, 4], 1.1).requires_grad_()
    b = data([5], 1.7).requires_grad_() if bias else None
    y = F.linear(x, W, b)
    w = data([5], 2.9)
    (y * w).sum().backward()
    lin["bias" if bias else "nobias"] = {
        "x": flat(x), "weight": flat(W), "bias": flat(b) if bias else None, "w": flat(w),
        "out": flat(y), "grad_x": flat(x.grad), "grad_weight": flat(W.grad),
        "grad_bias": flat(b.grad) if bias else None, "walk": walk(y.grad_fn),
    }
out["linear_1d"] = lin

# ---- 3. masked_fill with a mask that broadcasts the input up ----
mf = {}
mask = torch.tensor([[True, False, False, True], [False, False, True, False], [True, True, True, True]])
for name, xs in (("x3x1", [3, 1]), ("x4", [4])):
    x = data(xs, 0.4).requires_grad_()
    y = torch.masked_fill(x, mask, -1.5)
    w = data(list(y.shape), 3.1)
    (y * w).sum().backward()
    mf[name] = {"x_shape": xs, "x": flat(x), "shape": list(y.shape), "out": flat(y), "w": flat(w),
                "grad_x": flat(x.grad), "walk": walk(y.grad_fn)}
mf["mask"] = [int(v) for v in mask.reshape(-1).tolist()]
mf["int64"] = torch.tensor([[1], [2], [3]]).masked_fill(mask, 7).reshape(-1).tolist()
try:
    torch.zeros(3, 1).masked_fill_(mask, 1.0)
except RuntimeError as e:
    mf["inplace_error"] = str(e)
out["masked_fill"] = mf

# ---- 4. gradcheck: NaN in both Jacobians at the same place fails (allclose is False on NaN) ----
gc = {}
x = torch.tensor([-1.0], requires_grad=True)  # sqrt(-1): NaN, its gradient NaN, finite differences NaN
for fn_name, fn in (("gradcheck", torch.autograd.gradcheck), ("gradgradcheck", torch.autograd.gradgradcheck)):
    try:
        fn(torch.sqrt, (x,))
        gc[fn_name + "_error"] = None
    except Exception as e:  # torch.autograd.gradcheck.GradcheckError, a RuntimeError
        gc[fn_name + "_error"] = str(e)
    gc[fn_name + "_no_raise"] = fn(torch.sqrt, (x,), raise_exception=False)
    x2 = torch.tensor([1.0, 2.0], requires_grad=True)
    gc[fn_name + "_times_nan"] = fn(lambda t: t * float("nan"), (x2,), raise_exception=False)
    gc[fn_name + "_finite"] = fn(torch.sqrt, (torch.tensor([1.0, 4.0], requires_grad=True),), raise_exception=False)
out["gradcheck"] = gc

# ---- 5. anomaly mode checks NaN only ----
an = {}
x = torch.tensor([0.0, 4.0], requires_grad=True)
with torch.autograd.detect_anomaly():
    torch.sqrt(x).sum().backward()  # d sqrt(x)/dx at 0 is inf: legal
an["sqrt_grad"] = [str(v) for v in x.grad.tolist()]
x = torch.tensor([0.0, 4.0], requires_grad=True)
with torch.autograd.detect_anomaly():
    try:
        (torch.sqrt(x) * 0.0).sum().backward()  # 0 / (2 sqrt(0)) is nan
        an["nan_message"] = None
    except RuntimeError as e:
        an["nan_message"] = str(e)
out["anomaly"] = an

# ---- 6. int64 overflow wraps ----
M, m = 2**63 - 1, -(2**63)
I = lambda v: torch.tensor(v, dtype=torch.int64)
ints = {
    "add": (I([M, 1, m]) + I([1, 1, -1])).tolist(),
    "add_scalar": (I([M]) + 1).tolist(),
    "sub": (I([m, 0]) - I([1, m])).tolist(),
    "mul": (I([M, m, 3]) * I([2, -1, 2**62])).tolist(),
    "neg": (-I([m, M, 0])).tolist(),
    "abs": I([m, -5, M]).abs().tolist(),
    "square": torch.square(I([2**32, 3037000500])).tolist(),
    "pow": I([3, 2]).pow(I([40, 64])).tolist(),
    "sum": I([M, 1]).sum().item(),
    "sum_dim": I([[M, 5], [1, 6]]).sum(0).tolist(),
    "prod": I([M, 2]).prod().item(),
    "prod_dim": I([[2**62, 3], [4, 5]]).prod(1).tolist(),
    "cumsum": I([M, 1, 1]).cumsum(0).tolist(),
    "matmul": (I([[M, 1]]) @ I([[2], [3]])).tolist(),
    "div_by_zero": [str(v) for v in (I([5, -5, 0]) / I([0, 0, 0])).tolist()],
}
for op in ("//", "%"):
    try:
        eval("I([5]) " + op + " I([0])")
        ints["int_" + ("floor_divide" if op == "//" else "remainder") + "_by_zero"] = None
    except RuntimeError as e:
        ints["int_" + ("floor_divide" if op == "//" else "remainder") + "_by_zero"] = str(e)
out["int64"] = ints

print(json.dumps(out, indent=1))
