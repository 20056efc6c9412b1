#!/usr/bin/python3
"""PyTorch 1.13's answers for the indexing table (tests/test_indexing.cpp): for each Python
expression over x = arange(24.).reshape(2, 3, 4) (float64, requiring grad), the result's shape
and values, whether it is a view of x, and the gradient of sum(result * w) for the fixed weights
w = 1 + 0.25 * arange(numel) (the result's shape); or the error PyTorch raises. For each
assignment (x[...] = v, index_put_ with accumulate) on y = x * 1 with v = 100 + arange (the
given shape, requiring grad): y's values and the gradients of sum(y * w) for x and v.
Run with Debian's PyTorch:
    /usr/bin/python3 tools/golden/make_indexing_golden.py
It writes tests/golden/indexing.json. The C++ test spells each expression with ag's API under
the same key (the Python text).
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "indexing.json")

T = torch.tensor
READS = [
    # basic indices: views
    "x[1]", "x[-1]", "x[1, 2]", "x[1, 2, 3]", "x[:, 1]", "x[..., 2]", "x[1:]", "x[:, ::2]", "x[:, 1:3, 1::2]",
    "x[None]", "x[:, None]", "x[..., None]", "x[1, ..., None]", "x[-2:, -1]", "x[:, -5:10]", "x[0, 3:1]", "x[...]",
    "x[None, ..., None, 1]", "x[1, None, :, 0]", "x[:, :, 5:]",
    # advanced indices: copies
    "x[T([1, 0, 1])]", "x[T([[0, 1], [1, 1]])]", "x[:, T([2, 0])]", "x[:, :, T([3, 3, 0])]",
    "x[T([0, 1]), T([2, 0])]", "x[:, T([0, 2]), T([1, 3])]", "x[T([0, 1]), :, T([3, 1])]",
    "x[T([1, 0]), T([2, 1]), T([0, 3])]", "x[T([[1], [0]]), T([2, 1, 0])]", "x[T([[0], [1]]), :, T([[0, 1, 2]])]",
    "x[1, T([0, 2])]", "x[T([0, 1]), 1]", "x[T([0, 1]), 1, T([2, 3])]", "x[1:, T([0, 2])]", "x[None, T([1])]",
    "x[..., T([0, -1])]", "x[T(1)]", "x[:, T([], dtype=torch.long)]", "x[T([-1, -2])]", "x[0][T([1, 1, 2])]",
    "x[T([[0, 1], [1, 0]]), T([[2], [1]])]", "x[:, T([1, 2]), None]", "x[None, :, T([0, 2]), T([1, 1])]",
    # masks and bools
    "x[x > 10]", "x[T([True, False])]", "x[:, T([True, False, True])]", "x[T([[True, False, True], [False, False, True]])]",
    "x[..., T([False, True, True, False])]", "x[T([True, False]), T([2, 0])]", "x[True]", "x[False]", "x[T(True)]",
    "x[1, True]", "x[:, T([False, False, False])]", "x[x > 100]",
    # errors
    "x[2]", "x[:, 3]", "x[..., -5]", "x[T([2])]", "x[:, T([-4])]", "x[T([True, False, True])]", "x[0, 0, 0, 0]",
    "x[T([0.0])]", "x[::-1]", "x[T([0, 1]), T([0, 1, 2])]",
]
WRITES = [
    # (statement over y and v, v's shape)
    ("y[1] = v", [4]), ("y[:, 1:3] = v", [2, 2, 4]), ("y[T([1, 0])] = v", [3, 4]),
    ("y[:, T([0, 2]), T([1, 3])] = v", [2, 2]), ("y[T([0, 1]), :, T([3, 1])] = v", [2, 3]), ("y[y > 10] = v", []),
    ("y[T([0, 0])] = v", [2, 3, 4]), ("y[..., T([True, False, True, False])] = v", [2, 3, 2]),
    ("y[1, T([2, 0])] = v", [2, 4]), ("y[T([1]), 2] = v", [1, 4]),
    ("y.index_put_((T([0, 0, 1]),), v, accumulate=True)", [3, 3, 4]),
    ("y.index_put_((T([1, 1]), T([2, 2])), v, accumulate=True)", [2, 4]),
    ("y.index_put_((T([1]),), v, accumulate=True)", [4]),
    # errors
    ("y[T([0])] = v", [3]), ("y[T([5])] = v", [4]),
]


def weights(shape):
    n = 1
    for s in shape:
        n *= s
    return (1 + 0.25 * torch.arange(n, dtype=torch.float64)).reshape(shape)


def error_of(e):
    return {"error": type(e).__name__, "message": str(e).split("\n")[0]}


cases = {}
for expr in READS:
    x = torch.arange(24.0, dtype=torch.float64).reshape(2, 3, 4).requires_grad_()
    try:
        r = eval(expr, {"x": x, "T": T, "torch": torch})
    except (IndexError, RuntimeError, ValueError) as e:
        cases[expr] = error_of(e)
        continue
    view = r._base is not None and r._base is x._base  # x is itself a view of arange's result
    (r * weights(list(r.shape))).sum().backward()
    cases[expr] = {"shape": list(r.shape), "values": r.detach().flatten().tolist(), "view": view,
                   "grad": x.grad.flatten().tolist()}

for stmt, vshape in WRITES:
    x = torch.arange(24.0, dtype=torch.float64).reshape(2, 3, 4).requires_grad_()
    n = 1
    for s in vshape:
        n *= s
    v = (100 + torch.arange(n, dtype=torch.float64)).reshape(vshape).requires_grad_()
    y = x * 1
    try:
        exec(stmt, {"y": y, "v": v, "T": T, "torch": torch})
    except (IndexError, RuntimeError, ValueError) as e:
        cases[stmt] = error_of(e)
        continue
    (y * weights([2, 3, 4])).sum().backward()
    cases[stmt] = {"v_shape": vshape, "values": y.detach().flatten().tolist(), "grad": x.grad.flatten().tolist(),
                   "grad_v": v.grad.flatten().tolist()}

with open(OUT, "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", OUT, len(cases), "cases")
