#!/usr/bin/python3
"""PyTorch 1.13's answers for ag's custom autograd Functions (tests/test_custom_function.cpp).

Run with Debian's PyTorch:
    /usr/bin/python3 tools/golden/make_custom_function_golden.py
It writes tests/golden/custom_function.json: {"case": {"x": [...], "y": [...], "dx": [...], ...}}.
Every tensor is float64 and written as a flat list (row-major) with its shape beside it where it
is not 1-D. The inputs are literals here and are read from the file by the C++ test, never typed
twice. Each torch.autograd.Function below has a C++ twin of the same name in the test (PyTorch
names a custom Function's node after the class: LegendrePolynomial3Backward).
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "custom_function.json")
D = torch.float64


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def leaf(values):
    return torch.tensor(values, dtype=D, requires_grad=True)


# ---------------------------------------------------------------- the Functions (C++ twins)
class LegendrePolynomial3(torch.autograd.Function):
    # y = (5 x^3 - 3 x) / 2  =>  dx = g * 3/2 (5 x^2 - 1)
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class Exp(torch.autograd.Function):
    # y = exp(x)  =>  dx = g * y   (saves its output)
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return g * y


class ScaledProduct(torch.autograd.Function):
    # y = k a b  =>  da = g k b, db = g k a; k is a number (no gradient)
    @staticmethod
    def forward(ctx, a, k, b):
        ctx.save_for_backward(a, b)
        ctx.k = k
        return k * a * b

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return g * ctx.k * b, None, g * ctx.k * a


class MaxDim(torch.autograd.Function):
    # (values, indices) = max(x, 1): indices (int64) have no gradient; the saved indices route it
    @staticmethod
    def forward(ctx, x):
        values, indices = x.max(1)
        ctx.mark_non_differentiable(indices)
        ctx.save_for_backward(indices)
        ctx.shape = x.shape
        return values, indices

    @staticmethod
    def backward(ctx, g, g_indices):
        indices, = ctx.saved_tensors
        return torch.zeros(ctx.shape, dtype=g.dtype).scatter_add(1, indices.unsqueeze(1), g.unsqueeze(1))


class SquareAndMask(torch.autograd.Function):
    # (x^2, (x > 0) as float64): the float mask is marked non-differentiable; backward gets zeros for it
    @staticmethod
    def forward(ctx, x):
        mask = (x > 0).to(x.dtype)
        ctx.mark_non_differentiable(mask)
        ctx.save_for_backward(x)
        return x * x, mask

    @staticmethod
    def backward(ctx, g, g_mask):
        x, = ctx.saved_tensors
        return 2 * x * g + g_mask


class MulInPlace(torch.autograd.Function):
    # x *= 2 in place, marked dirty  =>  dx = 2 g
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return 2 * g


class BadCount(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, g):
        return g


class BadShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return torch.cat([g, g])


class BroadcastGrad(torch.autograd.Function):
    # backward returns a gradient of a broadcast shape: PyTorch sums it back to the input's
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return (2 * g).expand(2, *g.shape) * torch.tensor([[1.0], [10.0]], dtype=D).reshape(2, *([1] * g.dim()))


class ExtraNones(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return 3 * g, None, None


class GradForNumber(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g, g


cases = {}
X = [-1.5, -0.3, 0.0, 0.7, 2.0]
W = [0.5, -1.0, 2.0, 1.5, -0.25]   # the weights of the loss sum(y * w)
V = [1.0, 0.5, -2.0, 0.25, 3.0]    # the weights of the second-order loss sum(dx * v)


# LegendrePolynomial3 and Exp: values, gradients, double backward, the node's name.
# y = fn(x); dx = d sum(y w) / dx (create_graph); ddx = d sum(dx v) / dx
for name, fn in [("LegendrePolynomial3", LegendrePolynomial3.apply), ("Exp", Exp.apply)]:
    x = leaf(X)
    w, v = torch.tensor(W, dtype=D), torch.tensor(V, dtype=D)
    y = fn(x)
    dx, = torch.autograd.grad((y * w).sum(), x, create_graph=True)
    ddx, = torch.autograd.grad((dx * v).sum(), x)
    cases[name] = {"x": X, "w": W, "v": V, "y": flat(y), "dx": flat(dx), "ddx": flat(ddx), "grad_fn": y.grad_fn.name()}

# ScaledProduct(a, k, b): a number between two tensors
A, B, K = [0.5, -1.0, 2.0], [1.5, 0.25, -3.0], 1.75
a, b = leaf(A), leaf(B)
w, v = torch.tensor(W[:3], dtype=D), torch.tensor(V[:3], dtype=D)
y = ScaledProduct.apply(a, K, b)
da, db = torch.autograd.grad((y * w).sum(), [a, b], create_graph=True)
dda, ddb = torch.autograd.grad((da * v).sum() + (db * v).sum(), [a, b])
cases["ScaledProduct"] = {"a": A, "b": B, "k": K, "w": W[:3], "v": V[:3], "y": flat(y), "da": flat(da),
                          "db": flat(db), "dda": flat(dda), "ddb": flat(ddb), "grad_fn": y.grad_fn.name()}

# MaxDim: two outputs, the int64 one non-differentiable and saved
M = [[0.5, 2.0, -1.0], [3.0, -0.5, 1.0]]
x = leaf(M)
values, indices = MaxDim.apply(x)
(values * torch.tensor([2.0, -3.0], dtype=D)).sum().backward()
cases["MaxDim"] = {"x": flat(x), "shape": list(x.shape), "values": flat(values), "indices": indices.tolist(),
                   "indices_requires_grad": indices.requires_grad, "dx": flat(x.grad),
                   "grad_fn": values.grad_fn.name()}

# SquareAndMask: a float output marked non-differentiable
x = leaf(X)
sq, mask = SquareAndMask.apply(x)
(sq * torch.tensor(W, dtype=D)).sum().backward()
cases["SquareAndMask"] = {"x": X, "w": W, "square": flat(sq), "mask": flat(mask),
                          "mask_requires_grad": mask.requires_grad, "mask_has_grad_fn": mask.grad_fn is not None,
                          "dx": flat(x.grad)}

# MulInPlace: an input marked dirty takes the node's history
x = leaf(X)
h = x * 1.0
out = MulInPlace.apply(h)
cases["MulInPlace"] = {"x": X, "w": W, "out": flat(out), "same_tensor": out is h, "grad_fn": h.grad_fn.name()}
(out * torch.tensor(W, dtype=D)).sum().backward()
cases["MulInPlace"]["dx"] = flat(x.grad)
try:
    MulInPlace.apply(leaf(X))
except RuntimeError as e:
    cases["MulInPlace"]["leaf_error"] = str(e)

# a saved tensor modified in place afterwards
x = leaf(X)
y = Exp.apply(x)
y.mul_(2)
try:
    y.sum().backward()
except RuntimeError as e:
    cases["inplace_saved_output_error"] = str(e)

# what backward may return
errors = {}
try:
    BadCount.apply(leaf([1.0, 2.0]), leaf([3.0, 4.0])).sum().backward()
except RuntimeError as e:
    errors["BadCount"] = str(e)
try:
    BadShape.apply(leaf([1.0, 2.0])).sum().backward()
except RuntimeError as e:
    errors["BadShape"] = str(e)
try:
    GradForNumber.apply(leaf([1.0, 2.0]), 3.0).sum().backward()
except RuntimeError as e:
    errors["GradForNumber"] = str(e)
cases["errors"] = errors

x = leaf([1.0, -2.0, 0.5])
BroadcastGrad.apply(x).sum().backward()
cases["BroadcastGrad"] = {"x": flat(x), "dx": flat(x.grad)}
x = leaf([1.0, -2.0, 0.5])
ExtraNones.apply(x).sum().backward()
cases["ExtraNones"] = {"x": flat(x), "dx": flat(x.grad)}

with open(OUT, "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"wrote {OUT}: {len(cases)} cases")
