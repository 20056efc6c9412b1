#!/usr/bin/python3
"""PyTorch 1.13's answers for the trust regression tests (tests/test_trust.cpp): assignment through
a temporary view (values, grad_fn names, gradients), Sequential's weights after manual_seed(0),
full's dtype inference, and which shape-arithmetic calls PyTorch refuses. Run with Debian's PyTorch:
    /usr/bin/python3 tools/golden/make_trust_golden.py
It writes tests/golden/trust.json; each key below is the C++ test's case name.
"""
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "trust.json")
cases = {}


def vals(t):
    return t.detach().double().reshape(-1).tolist()


def bare(n):  # the Python repr's name: CopySlices, not torch::autograd::CopySlices
    return n.replace("torch::autograd::", "")


def name(t):
    return bare(t.grad_fn.name()) if t.grad_fn is not None else None


def next_names(t):
    return [bare(f[0].name()) if f[0] is not None else None for f in t.grad_fn.next_functions]


# ---- assignment through a temporary: x[i] = t, x[i] = 2.5, x.select(...) = t, x.narrow(...) = t
x = torch.arange(12.0).view(3, 4)
x[0] = torch.tensor([9.0, 8.0, 7.0, 6.0])
x[2] = 2.5
x.select(1, 3).copy_(torch.tensor([-1.0, -2.0, -3.0]))  # C++: x.select(1, 3) = t
x.narrow(1, 1, 2).fill_(0.5)                             # C++: x.narrow(1, 1, 2) = 0.5
x[1][2] = 42.0
cases["assign_plain"] = {"values": vals(x)}

# the same through a graph: x = w * 2 (a non-leaf), x[0] = t (t requires grad), x[2] = 2.5
w = torch.arange(12.0, dtype=torch.float64).view(3, 4).requires_grad_()
t = torch.tensor([1.0, -1.0, 0.5, 2.0], dtype=torch.float64, requires_grad=True)
x = w * 2
x[0] = t * 3
first = name(x)
x[2] = 2.5
weights = torch.linspace(-1, 1, 12, dtype=torch.float64).view(3, 4)
loss = (x * x * weights).sum()
loss.backward()
cases["assign_graph"] = {"values": vals(x), "grad_fn": name(x), "grad_fn_after_first": first,
                         "next": next_names(x),
                         "w_grad": vals(w.grad), "t_grad": vals(t.grad), "loss": loss.item()}

# a plain tensor written with a value that requires grad becomes a non-leaf
z = torch.zeros(2, 3, dtype=torch.float64)
s = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
z[1] = s * s
(z * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)).sum().backward()
cases["assign_into_plain"] = {"grad_fn": name(z), "requires_grad": z.requires_grad, "is_leaf": z.is_leaf,
                              "s_grad": vals(s.grad)}

# in-place arithmetic on a view of a non-leaf (transposed, so the view is strided)
w = torch.arange(6.0, dtype=torch.float64).view(2, 3).requires_grad_()
y = w * 1.5
v = y.t()[1]
u = torch.tensor([0.25, -0.5], dtype=torch.float64, requires_grad=True)
v.mul_(u)
cases["view_mul_"] = {"grad_fn": name(y), "view_grad_fn": name(v)}
(y * y).sum().backward()
cases["view_mul_"].update({"values": vals(y), "w_grad": vals(w.grad), "u_grad": vals(u.grad)})

# a view taken before its base was written still works (PyTorch regenerates its grad_fn)
w = torch.arange(6.0, dtype=torch.float64).view(2, 3).requires_grad_()
y = w * 2
row1 = y[1]
y[0] = torch.ones(3, dtype=torch.float64)
y.mul_(3)
(row1 * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
cases["stale_view"] = {"values": vals(row1), "w_grad": vals(w.grad)}

# copy_ and fill_ on non-views in a graph
w = torch.ones(3, dtype=torch.float64, requires_grad=True)
y = w * 2
src = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
y.copy_(src)
cases["copy_graph"] = {"grad_fn": name(y), "next": next_names(y)}
(y * y).sum().backward()
cases["copy_graph"].update({"w_grad": vals(w.grad), "src_grad": vals(src.grad)})
y = w * 2
y.fill_(4.0)
z = w * 2
z.zero_()
cases["fill_graph"] = {"fill": name(y), "zero": name(z)}

# ---- Sequential{Linear(2, 16), ReLU(), Linear(16, 1)} after manual_seed(0): layers in written order
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
cases["sequential"] = {k: vals(v) for k, v in net.state_dict().items()}

# ---- full infers its dtype from the value
cases["full_dtype"] = {"int": str(torch.full((2,), 7).dtype), "bool": str(torch.full((2,), True).dtype),
                       "float": str(torch.full((2,), 7.0).dtype),
                       "big": torch.full((1,), 2 ** 62 + 1).tolist()}

# ---- shape arithmetic PyTorch refuses (True) or accepts (the result's shape)
def outcome(f):
    try:
        return list(f().shape)
    except (RuntimeError, IndexError, ValueError):
        return True


cases["shapes"] = {
    "zeros_2_62": outcome(lambda: torch.zeros(1 << 62)),
    "zeros_neg": outcome(lambda: torch.zeros(-2)),
    "view_2_32_squared": outcome(lambda: torch.zeros(0).view(1 << 32, 1 << 32)),
    "narrow_int64_max": outcome(lambda: torch.zeros(3).narrow(0, 1, 2 ** 63 - 1)),
    "expand_neg2": outcome(lambda: torch.ones(1).expand(-2)),
    "expand_overflow": outcome(lambda: torch.ones(1, 1).expand(2 ** 62, 2 ** 62)),
    "slice_huge_step": outcome(lambda: torch.arange(5)[0:5:2 ** 62]),
    "slice_huge_step_from_2": outcome(lambda: torch.arange(5)[2::2 ** 62]),
    "zeros_0_2_62_4": outcome(lambda: torch.zeros(0, 2 ** 62, 4)),
    "size0_of_scalar": outcome(lambda: torch.Size([torch.tensor(3.0).size(0)])),
    "repeat_overflow": outcome(lambda: torch.ones(2).repeat(2 ** 62)),
}

# ---- retain_grad and a tensor hook: PyTorch 2.x keeps the gradient after every hook, whatever the
# order of retain_grad() and register_hook(); 1.13 kept the gradient as it was when retain_grad's
# own hook ran, so the order mattered. ag follows 2.x: the C++ test expects "after_hooks" in both
# orders (1.13 gives it only when the hook was registered first, recorded here for the record).
retain = {}
for order in ["retain_first", "hook_first"]:
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = x * 3
    if order == "retain_first":
        y.retain_grad()
        y.register_hook(lambda g: g * 10)
    else:
        y.register_hook(lambda g: g * 10)
        y.retain_grad()
    (y * y).sum().backward()
    retain["torch_1_13_" + order] = vals(y.grad)
    retain["x_grad"] = vals(x.grad)
retain["after_hooks"] = retain["torch_1_13_hook_first"]
cases["retain_grad_order"] = retain

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    json.dump(cases, f, indent=1, sort_keys=True)
print("wrote", OUT)
