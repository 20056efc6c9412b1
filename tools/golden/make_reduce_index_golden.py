#!/usr/bin/python3
"""PyTorch 1.13's answers for the edge cases of the reductions, gathers and rearranging ops that
the op table does not cover (tests/test_reduce_index.cpp): prod's gradient and Hessian with zeros,
var/std with too few elements, norm's gradient at 0, logsumexp of infinities, min's ties and NaNs,
integer results, chunk/split part sizes, scatter_add with a src larger than its index, and the
grad_fn name of every op.

Run with Debian's PyTorch 1.13:
    /usr/bin/python3 tools/golden/make_reduce_index_golden.py
It writes tests/golden/reduce_index.json. Every tensor is {"shape", "dtype", "data"}, with nan
and infinities written as the strings "nan", "inf", "-inf" (JSON has no such numbers).
"""
import json
import math
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "reduce_index.json")
F64 = torch.float64


def num(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    return v


def tensor(t):
    if t is None:
        return None
    t = t.detach()
    return {"shape": list(t.shape), "dtype": str(t.dtype), "data": [num(v) for v in t.reshape(-1).tolist()]}


def leaf(values):
    return torch.tensor(values, dtype=F64, requires_grad=True)


def grad_of(y, x, w=None):
    """The gradient of sum(y * w) (w = ones) with respect to x; None if y does not depend on x."""
    w = torch.ones_like(y) if w is None else w
    (g,) = torch.autograd.grad((y * w).sum(), x, allow_unused=True)
    return g


def hessian(f, x):
    return torch.autograd.functional.hessian(f, x.detach())


def prod_cases():
    cases = {}
    for name, values in [("one_zero", [2.0, 0.0, 3.0]), ("two_zeros", [2.0, 0.0, 0.0]), ("no_zero", [2.0, -0.5, 3.0])]:
        x = leaf(values)
        y = x.prod()
        # the Hessian of the explicit product x0 * x1 * x2: what prod's must be (PyTorch's own prod
        # Hessian is 0 with two zeros, recorded too)
        cases[name] = {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x)),
                       "hessian_exact": tensor(hessian(lambda v: v[0] * v[1] * v[2], x)),
                       "hessian_torch": tensor(hessian(lambda v: v.prod(), x))}
    x = leaf([[2.0, 0.0, 3.0], [1.0, 2.0, 3.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    w = torch.tensor([0.5, -1.0, 2.0, 1.5], dtype=F64)
    y = x.prod(1)
    cases["dim_rows"] = {"input": tensor(x), "weight": tensor(w), "output": tensor(y), "grad": tensor(grad_of(y, x, w)),
                         "hessian_exact": tensor(hessian(lambda v: ((v[:, 0] * v[:, 1] * v[:, 2]) * w).sum(), x))}
    x = leaf(0.0)
    y = x.prod()
    cases["zero_0dim"] = {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x))}
    return cases


def var_std_cases():
    cases = {}
    x = leaf([[1.0, 2.5], [0.5, -1.0]])
    for name, f in [("var_one_per_row", lambda v: v[:, :1].var(1)),
                    ("var_correction_equals_n", lambda v: torch.var(v, dim=1, correction=2)),
                    ("var_correction_above_n", lambda v: torch.var(v, dim=1, correction=3)),
                    ("var_correction_negative", lambda v: torch.var(v, dim=1, correction=-1)),
                    ("std_one_per_row", lambda v: v[:, :1].std(1))]:
        y = f(x)
        cases[name] = {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x))}
    x = leaf([[1.5, 1.5, 1.5], [0.0, 1.0, 2.0]])
    y = x.std(1)
    cases["std_constant_row"] = {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x))}
    return cases


def norm_cases():
    cases = {}
    x = leaf([[0.0, 0.0, 0.0], [0.0, 2.0, -2.0], [1.0, -3.0, 0.5]])
    for p in [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, math.inf, -math.inf]:
        y = x.norm(p, [1])
        cases[str(p)] = {"p": num(p), "input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x))}
    return cases


def logsumexp_case():
    inf = math.inf
    x = leaf([[-inf, -inf], [inf, 1.0], [math.nan, 1.0], [0.0, 1.0], [-inf, 2.0]])
    y = torch.logsumexp(x, 1)
    return {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x))}


def min_cases():
    cases = {}
    for name, values in [("ties", [1.0, 0.0, 0.0, 2.0]), ("nan", [1.0, math.nan, 0.0, math.nan])]:
        x = leaf(values)
        y = x.min()
        values_dim, indices = x.min(0)
        cases[name] = {"input": tensor(x), "output": tensor(y), "grad": tensor(grad_of(y, x)),
                       "dim_values": tensor(values_dim), "dim_indices": tensor(indices),
                       "dim_grad": tensor(grad_of(values_dim, x))}
    return cases


def integer_cases():
    i = torch.tensor([[3, 1, 2], [0, 5, 1]])
    b = torch.tensor([True, False, True])
    out = {
        "min": i.min(), "min_dim_values": i.min(1)[0], "min_dim_indices": i.min(1)[1], "argmin": i.argmin(0),
        "prod": i.prod(), "prod_dim": i.prod(1), "prod_bool": b.prod(), "cumsum": i.cumsum(1), "cumsum_bool": b.cumsum(0),
        "logsumexp": torch.logsumexp(i, 1), "gather": torch.gather(i, 1, torch.tensor([[2, 0], [1, 1]])),
        "scatter_add": torch.scatter_add(i, 1, torch.tensor([[0], [2]]), torch.tensor([[10], [20]])),
        "masked_select": torch.masked_select(i, i > 1), "flip": torch.flip(i, [0, 1]), "roll": torch.roll(i, 1, 1),
        "repeat": i.repeat(2, 1), "flatten": i.flatten(), "min_bool": b.min(),
    }
    return {"input": tensor(i), "bool_input": tensor(b), "out": {k: tensor(v) for k, v in out.items()}}


def part_sizes():
    chunks, splits = [], []
    for n in range(0, 11):
        t = torch.zeros(n)
        for c in range(1, 6):
            chunks.append({"n": n, "chunks": c, "sizes": [p.numel() for p in torch.chunk(t, c)]})
        for s in range(0 if n == 0 else 1, 6):
            splits.append({"n": n, "split_size": s, "sizes": [p.numel() for p in torch.split(t, s)]})
    return {"chunk": chunks, "split": splits}


def scatter_add_larger_src():
    # PyTorch 1.13 computes the forward but its backward fails ("invalid gradient ... got [2, 2]
    # but expected shape compatible with [2, 3]"); ag gives src the gradient gather(g, dim, index)
    # zero-padded to src's shape, computed here with torch ops
    t = leaf([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    src = leaf([[0.5, -1.0, 2.0], [1.5, 0.25, -3.0]])
    index = torch.tensor([[3, 0], [1, 1]])
    w = torch.tensor([[1.0, -2.0, 0.5, 3.0], [2.0, 0.25, -1.0, 1.5]], dtype=F64)
    y = torch.scatter_add(t, 1, index, src)
    expected = torch.zeros(2, 3, dtype=F64)
    expected[:, :2] = torch.gather(w, 1, index)
    return {"input": tensor(t), "src": tensor(src), "index": tensor(index), "weight": tensor(w), "output": tensor(y),
            "grad_input": tensor(w), "grad_src": tensor(expected)}


def grad_fn_names():
    x = torch.randn(3, 4, dtype=F64, requires_grad=True)
    s = torch.tensor(1.5, dtype=F64, requires_grad=True)
    e = torch.zeros(0, 3, dtype=F64, requires_grad=True)
    exprs = {
        "min": lambda: x.min(), "min_dim": lambda: x.min(1)[0], "min_0dim": lambda: s.min(0)[0],
        "max_0dim": lambda: s.max(0)[0],
        "prod": lambda: x.prod(), "prod_dim": lambda: x.prod(1), "var": lambda: x.var(),
        "var_dims": lambda: x.var([0, 1], unbiased=False), "var_correction": lambda: torch.var(x, dim=1, correction=0),
        "std": lambda: x.std(), "std_dim": lambda: x.std(1), "logsumexp": lambda: torch.logsumexp(x, 1),
        "cumsum": lambda: torch.cumsum(x, 1), "norm": lambda: x.norm(), "norm_dim": lambda: x.norm(3, [1]),
        "gather": lambda: torch.gather(x, 1, torch.tensor([[0], [1], [2]])),
        "scatter_add": lambda: torch.scatter_add(x, 1, torch.tensor([[0], [1], [2]]), x[:, :1] * 1.0),
        "masked_select": lambda: torch.masked_select(x, x > 0), "flip": lambda: torch.flip(x, [0]),
        "roll": lambda: torch.roll(x, 1, 0), "roll_flat": lambda: torch.roll(x, 1), "repeat": lambda: x.repeat(2, 1),
        "chunk": lambda: torch.chunk(x, 2, 1)[1], "split": lambda: torch.split(x, 3, 1)[1],
        "split_sizes": lambda: torch.split(x, [1, 3], 1)[1], "chunk_empty": lambda: torch.chunk(e, 2)[1],
        "flatten": lambda: x.flatten(), "flatten_0dim": lambda: s.flatten(), "unflatten": lambda: x.unflatten(1, (2, 2)),
    }
    return {k: f().grad_fn.name() for k, f in exprs.items()}


def main():
    torch.manual_seed(0)
    data = {"prod": prod_cases(), "var_std": var_std_cases(), "norm": norm_cases(), "logsumexp": logsumexp_case(),
            "min": min_cases(), "integer": integer_cases(), "parts": part_sizes(),
            "scatter_add_larger_src": scatter_add_larger_src(), "grad_fn": grad_fn_names()}
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1, allow_nan=False)
        f.write("\n")


if __name__ == "__main__":
    main()
