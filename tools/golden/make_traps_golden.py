#!/usr/bin/python3
"""PyTorch 1.13's answers for the trap regression tests (tests/test_traps.cpp): grad_fn names and
output shapes of calls where ag used to differ. Run with Debian's PyTorch:
    /usr/bin/python3 tools/golden/make_traps_golden.py
It writes tests/golden/traps.json: {"case name": {"grad_fn": ..., "shape": [...]}} (layout cases:
strides and whether .view(-1) works; value cases: numbers, NaN and inf as text).
The case names are the C++ test's keys; each case below says the call.
"""
import json
import os

import torch

from make_golden import finite_or_text  # JSON has no inf: "inf" / "-inf" / "nan" as text
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "traps.json")

cases = {}


def add(name, y):
    cases[name] = {"grad_fn": y.grad_fn.name() if y.grad_fn is not None else None, "shape": list(y.shape)}


def leaf(*shape):
    return torch.randn(shape, dtype=torch.float64, requires_grad=True)


# matmul of every pair of ranks: the last node's name (first operand requires grad)
for a, b in [((4,), (4,)), ((4,), (4, 5)), ((4,), (2, 4, 5)), ((5, 4), (4,)), ((2, 5, 4), (4,)), ((3, 4), (4, 5)),
             ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((1, 2, 3, 4), (4, 5))]:
    name = "matmul_" + "x".join(map(str, a)) + "_" + "x".join(map(str, b))
    add(name, torch.matmul(leaf(*a), torch.randn(*b, dtype=torch.float64)))

# F.linear on (*, in) inputs, weight (5, 4), with and without a bias
w, bias = torch.randn(5, 4, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
for shape in [(4,), (3, 4), (2, 3, 4), (2, 0, 4), (1, 2, 3, 4)]:
    key = "x".join(map(str, shape))
    add("linear_bias_" + key, F.linear(leaf(*shape), w, bias))
    add("linear_nobias_" + key, F.linear(leaf(*shape), w))
add("linear_bias_transposed_3x2x4", F.linear(leaf(2, 3, 4).transpose(0, 1), w, bias))

# losses and their reductions
for red in ["mean", "sum", "none"]:
    add("mse_loss_" + red, F.mse_loss(leaf(3, 4), torch.randn(3, 4, dtype=torch.float64), reduction=red))
    add("nll_loss_" + red, F.nll_loss(leaf(3, 4), torch.tensor([1, 0, 3]), reduction=red))
    add("cross_entropy_" + red, F.cross_entropy(leaf(3, 4), torch.tensor([1, 0, 3]), reduction=red))
    add("cross_entropy_1d_" + red, F.cross_entropy(leaf(4), torch.tensor(2), reduction=red))
    add("cross_entropy_3d_" + red, F.cross_entropy(leaf(2, 3, 4), torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1]]), reduction=red))
    add("cross_entropy_4d_" + red, F.cross_entropy(leaf(2, 3, 2, 2), torch.tensor([[[0, 1], [2, 1]], [[2, 2], [0, 1]]]),
                                                   reduction=red))
    add("cross_entropy_probs_" + red,
        F.cross_entropy(leaf(3, 4), torch.softmax(torch.randn(3, 4, dtype=torch.float64), 1), reduction=red))
    add("cross_entropy_smoothing_" + red,
        F.cross_entropy(leaf(3, 4), torch.tensor([1, 0, 3]), reduction=red, label_smoothing=0.1))

# nodes PyTorch records where ag used to return its input, and reshape's copy
add("t_0d", leaf().t())
add("t_1d", leaf(3).t())
add("t_2d", leaf(2, 3).t())
add("transpose_0d", leaf().transpose(0, -1))
add("max_dim_0d", torch.max(leaf(), 0)[0])
add("max_dim_0d_keepdim", torch.max(leaf(), 0, keepdim=True)[0])
add("reshape_view", leaf(2, 3).reshape(6))
add("reshape_copy", leaf(2, 3).t().reshape(6))
# an empty strided view is contiguous: contiguous() returns it (its node is the slice's)
empty_view = leaf(4, 3)[:, :0]
add("contiguous_empty_view", empty_view.contiguous())
cases["contiguous_empty_view"]["is_contiguous"] = empty_view.is_contiguous()

# the layout of elementwise results (TensorIterator's): strides, and whether .view(-1) works
def layout(name, y):
    try:
        y.view(-1)
        view_ok = True
    except RuntimeError:
        view_ok = False
    cases[name] = {"strides": list(y.stride()), "shape": list(y.shape), "view_ok": view_ok}


a34 = torch.randn(3, 4, dtype=torch.float64)
b34 = torch.randn(3, 4, dtype=torch.float64)
a43t = torch.randn(4, 3, dtype=torch.float64).t()
b43t = torch.randn(4, 3, dtype=torch.float64).t()
p234 = torch.randn(4, 2, 3, dtype=torch.float64).permute(1, 2, 0)
layout("layout_exp_transposed", torch.exp(a43t))
layout("layout_scalar_mul_transposed", a43t * 2)
layout("layout_transposed_plus_transposed", a43t + b43t)
layout("layout_transposed_plus_contiguous", a43t + b34)
layout("layout_contiguous_plus_transposed", a34 + b43t)
layout("layout_transposed_plus_row", a43t + torch.randn(4, dtype=torch.float64))
layout("layout_transposed_times_0d", a43t * torch.tensor(2.0, dtype=torch.float64))
layout("layout_permuted_neg", -p234)
layout("layout_permuted_plus_broadcast", p234 + torch.randn(3, 1, dtype=torch.float64))
layout("layout_sliced_plus_one", torch.randn(3, 8, dtype=torch.float64)[:, ::2] + 1)
layout("layout_transposed_gt", a43t > 0)
layout("layout_expanded_times_transposed", torch.randn(3, 1, dtype=torch.float64).expand(3, 4) * a43t)

# values where ag used to differ (found by review): saturated binary cross entropy, pow's gradient
# at 0, infinite and huge scalars, masked_fill's layout
def values(name, **tensors):
    cases[name] = {k: finite_or_text(v.tolist() if torch.is_tensor(v) else v) for k, v in tensors.items()}


z = torch.tensor([20.0, -1.0], requires_grad=True)
F.binary_cross_entropy(torch.sigmoid(z), torch.tensor([1.0, 1.0])).backward()
values("bce_saturated", dz=z.grad)
x = torch.tensor([0.0, 1.0, 0.0, 1.0], dtype=torch.float64, requires_grad=True)
F.binary_cross_entropy(x, torch.tensor([0.0, 1.0, 1.0, 0.0], dtype=torch.float64), reduction="sum").backward()
values("bce_extremes", dx=x.grad)
a = torch.tensor([0.0, 0.0, 2.0, 0.0], dtype=torch.float64, requires_grad=True)
b = torch.tensor([0.0, 2.0, 0.0, -1.0], dtype=torch.float64, requires_grad=True)
torch.pow(a, b).sum().backward()
values("pow_grad_at_zero", da=a.grad, db=b.grad)
t12 = torch.tensor([1, 2])
values("huge_scalars", gt=torch.gt(t12, 1e30), times_inf=(t12 * float("inf")).tolist(),
       plus_huge_dtype=str((t12 + 1e30).dtype), clamp_huge=torch.clamp(t12, max=1e30).tolist())
layout("layout_masked_fill_transposed", a43t.masked_fill(torch.tensor([True, False, True, False]), 0.0))

# ---- layout where an op converts or copies first (preserve_format, TensorIterator's layout) ----
# .to() and .clone() keep a dense input's strides, and give any other input dense strides in the
# order of its own; contiguous() is row-major. Ops that convert dtype before computing follow.
def layout_named(name, y):
    layout(name, y)
    cases[name]["grad_fn"] = y.grad_fn.name() if y.grad_fn is not None else None


f43t = torch.randn(4, 3, requires_grad=True).t()
sliced = torch.randn(3, 8, dtype=torch.float64)[:, ::2]
perm_sliced = torch.randn(4, 2, 6, dtype=torch.float64).permute(1, 2, 0)[:, ::2]
expanded = torch.randn(3, 1, dtype=torch.float64).expand(3, 4)
i43t = torch.arange(12).view(4, 3).t()
layout_named("layout_to_transposed", f43t.to(torch.float64))
layout_named("layout_to_sliced", sliced.to(torch.float32))
layout_named("layout_to_permuted_sliced", perm_sliced.to(torch.float32))
layout_named("layout_to_expanded", expanded.to(torch.float32))
layout_named("layout_to_permuted", p234.to(torch.float32))
layout_named("layout_clone_transposed", f43t.clone())
layout_named("layout_clone_sliced", sliced.clone())
layout_named("layout_clone_permuted_sliced", perm_sliced.clone())
layout_named("layout_clone_expanded", expanded.clone())
layout_named("layout_clone_permuted", p234.clone())
layout_named("layout_contiguous_transposed", f43t.contiguous())
layout_named("layout_contiguous_permuted_sliced", perm_sliced.contiguous())
layout("layout_exp_int_transposed", torch.exp(i43t))
layout("layout_int_div_scalar_transposed", i43t / 2)
layout("layout_int_times_fraction_transposed", i43t * 2.5)
layout("layout_int_neg_transposed", -i43t)
layout("layout_int_pow_half_transposed", i43t ** 0.5)
layout("layout_int_clamp_fraction_transposed", torch.clamp(i43t, 0.5))
layout("layout_f32t_plus_f64t", a43t.float() + b43t)
layout("layout_f32t_plus_f64", a43t.float() + b34)
layout("layout_f32_plus_f64t", a34.float() + b43t)
layout("layout_int_plus_f64t", i43t + b43t)
layout("layout_minimum_f32t_f64t", torch.minimum(a43t.float(), b43t))
layout("layout_gt_f32t_f64t", a43t.float() > b43t)
cond43t = torch.randn(4, 3) > 0
layout("layout_where_transposed", torch.where(cond43t.t(), a43t.float(), b43t))
layout("layout_where_scalar", torch.where(cond43t.t(), a43t, 0.0))
layout("layout_where_contiguous_cond", torch.where(torch.randn(3, 4) > 0, a43t, b43t))
layout("layout_where_int_float", torch.where(cond43t.t(), i43t, a43t.float()))
layout("layout_flip0_transposed", a43t.flip(0))
layout("layout_flip01_transposed", a43t.flip(0, 1))
layout("layout_flip_permuted", p234.flip(1))
layout("layout_flip_sliced", sliced.flip(1))
layout("layout_roll_transposed", a43t.roll(0, 0))
layout("layout_repeat_transposed", a43t.repeat(1, 1))
layout("layout_reshape_copy_transposed", a43t.reshape(2, 6))
# a contiguous leaf's gradient is contiguous (the layout contract of AccumulateGrad), even when
# the gradient reaching it is a transposed view
w_leaf = torch.randn(4, 3, requires_grad=True)
(w_leaf.t() * torch.randn(3, 4)).sum().backward()
cases["leaf_grad_through_t"] = {"strides": list(w_leaf.grad.stride())}

# kl_div at targets <= 0 (PyTorch's xlogy: NaN for t < 0, 0 for t = 0) and its gradients
x = torch.tensor([-1.0, -0.5, 0.3, 0.2, -0.7], dtype=torch.float64, requires_grad=True)
t = torch.tensor([-0.5, 0.0, 0.5, 1.0, 0.25], dtype=torch.float64, requires_grad=True)
loss = F.kl_div(x, t, reduction="none")
(loss * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64)).sum().backward()
values("kl_div_nonpositive_target", loss=loss, dx=x.grad, dt=t.grad, grad_fn=loss.grad_fn.name())

# BatchNorm1d with parameters of another dtype than the input's: PyTorch raises ("mixed dtype")
def raises(f):
    try:
        f()
        return False
    except RuntimeError:
        return True


bn_raises = {}
for name, make in [("f64_input_f32_module", lambda: (torch.nn.BatchNorm1d(3), torch.float64)),
                   ("f32_input_f64_module", lambda: (torch.nn.BatchNorm1d(3).double(), torch.float32)),
                   ("f64_input_no_affine", lambda: (torch.nn.BatchNorm1d(3, affine=False), torch.float64)),
                   ("f64_input_untracked", lambda: (torch.nn.BatchNorm1d(3, track_running_stats=False), torch.float64)),
                   ("int64_input", lambda: (torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False), torch.int64))]:
    for mode in ["train", "eval"]:
        bn, dtype = make()
        bn.train(mode == "train")
        bn_raises[name + "_" + mode] = raises(lambda: bn(torch.ones(4, 3).to(dtype)))
bn, _ = torch.nn.BatchNorm1d(3, affine=False, track_running_stats=False), None
bn_raises["f64_input_stateless"] = raises(lambda: bn(torch.ones(4, 3, dtype=torch.float64)))
cases["batchnorm_mixed_dtype_raises"] = bn_raises

# linear with a (1) or () bias (broadcast over the out features); values and gradients
xl = (torch.arange(12, dtype=torch.float64).view(3, 4) / 10 - 0.5).requires_grad_()
wl = (torch.arange(20, dtype=torch.float64).view(5, 4) / 20 - 0.3).requires_grad_()
for key, b0 in [("1", torch.tensor([0.7], dtype=torch.float64)), ("0d", torch.tensor(0.7, dtype=torch.float64))]:
    for xkey, xin in [("2d", xl), ("1d", xl[1]), ("3d", xl.view(1, 3, 4))]:
        bl = b0.clone().requires_grad_()
        xl.grad = wl.grad = None
        y = F.linear(xin, wl, bl)
        (y * y).sum().backward()
        values("linear_bias_" + key + "_" + xkey, y=y.flatten(), dx=xl.grad.flatten(), dw=wl.grad.flatten(), db=bl.grad,
               shape=list(y.shape), grad_fn=y.grad_fn.name())

# index_add with a 0-dim index (one index), a 0-dim input and a 0-dim source of a 1-D input
ia_t = torch.arange(6, dtype=torch.float64).view(3, 2).requires_grad_()
ia_s = torch.tensor([[10.0, 20.0]], dtype=torch.float64, requires_grad=True)
y = ia_t.index_add(0, torch.tensor(1), ia_s, alpha=2.0)
(y * torch.arange(1.0, 7.0, dtype=torch.float64).view(3, 2)).sum().backward()
values("index_add_0d_index", y=y.flatten(), dt=ia_t.grad.flatten(), ds=ia_s.grad.flatten(), grad_fn=y.grad_fn.name())
ia_t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
ia_s = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
y = ia_t.index_add(0, torch.tensor(2), ia_s, alpha=3.0)
(y * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
values("index_add_0d_source", y=y, dt=ia_t.grad, ds=ia_s.grad, ds_shape=list(ia_s.grad.shape))
ia_t = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
ia_s = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
y = ia_t.index_add(0, torch.tensor(0), ia_s)
(y * 3.0).backward()
values("index_add_0d_input", y=y, dt=ia_t.grad, ds=ia_s.grad, shape=list(y.shape))

# pow of two bool tensors: PyTorch has no kernel (a bool to an int power is int64)
try:
    torch.pow(torch.tensor([True, False]), torch.tensor([True, True]))
    pow_bool_error = None
except RuntimeError as e:
    pow_bool_error = str(e)
values("pow_bool", error=pow_bool_error, bool_int_power=torch.pow(torch.tensor([True, False]), 2),
       bool_int_power_dtype=str(torch.pow(torch.tensor([True, False]), 2).dtype))

with open(OUT, "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
    f.write("\n")
print("wrote", OUT, len(cases), "cases")
