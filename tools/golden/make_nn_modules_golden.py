#!/usr/bin/python3
"""Golden data for the nn modules and Module API of tests/test_nn_modules.cpp, from PyTorch 1.13.

Run with Debian's PyTorch 1.13:
    /usr/bin/python3 tools/golden/make_nn_modules_golden.py
It writes tests/golden/nn_modules.json. Inputs are drawn here (torch.manual_seed per case) and
written into the file; the C++ side reads them and never regenerates them. A tensor is
{"shape": [...], "values": [...]} (row-major, as float64 numbers; float32 values convert exactly).

  batchnorm    BatchNorm1d training steps (upstream gradient g: loss = sum(y * g)); per step the
               output, the input/weight/bias gradients, running_mean, running_var and
               num_batches_tracked after the step; then an eval forward (output and input grad).
  batchnorm_second_order
               float64, train mode: s = sum(dx * v) + sum(dweight * u) with dx, dweight the
               first-order gradients of sum(y * g); the gradients of s by x, weight and bias.
  activations  each activation module's output for fixed 2-D, 3-D and 1-D inputs (Softmax() picks
               its dim as PyTorch's legacy rule does, with a deprecation warning on stderr here).
  reprs        repr() of modules and of a Sequential holding them.
  nested       a nested model (its C++ twin is in the test): named_modules with type names, the
               order apply() visits, the state_dict keys.
  load_errors  the text of load_state_dict's errors and the keys strict=False returns.
"""
import json
import os

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "nn_modules.json")


def T(t):
    t = t.detach()
    return {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).double().tolist()]}


# ---------------------------------------------------------------- BatchNorm1d
BN_CASES = [
    # name, constructor kwargs, input shape per step, eval input shape, steps
    ("bn_2d", dict(num_features=4), (6, 4), (3, 4), 3),
    ("bn_3d_cumulative", dict(num_features=3, eps=1e-3, momentum=None), (4, 3, 5), (2, 3, 5), 3),
    ("bn_no_affine_no_stats", dict(num_features=4, affine=False, track_running_stats=False), (5, 4), (3, 4), 2),
    ("bn_two_values_momentum", dict(num_features=2, momentum=0.3, affine=False), (2, 2, 1), (3, 2, 1), 3),
]


def batchnorm_case(name, kwargs, shape, eval_shape, steps, dtype, seed):
    torch.manual_seed(seed)
    bn = nn.BatchNorm1d(**kwargs).to(dtype)
    C = kwargs["num_features"]
    case = {"name": name, "dtype": str(dtype).replace("torch.", ""), "num_features": C,
            "eps": kwargs.get("eps", 1e-5), "momentum": kwargs.get("momentum", 0.1),
            "affine": kwargs.get("affine", True), "track_running_stats": kwargs.get("track_running_stats", True)}
    if bn.affine:
        with torch.no_grad():
            bn.weight.copy_(1.0 + 0.25 * torch.randn(C, dtype=dtype))
            bn.bias.copy_(0.5 * torch.randn(C, dtype=dtype))
        case["weight"], case["bias"] = T(bn.weight), T(bn.bias)
    case["steps"] = []
    for _ in range(steps):
        x = (1.5 * torch.randn(*shape, dtype=dtype) + 0.3).requires_grad_()
        g = torch.randn(*shape, dtype=dtype)
        bn.zero_grad()
        y = bn(x)
        (y * g).sum().backward()
        step = {"x": T(x), "g": T(g), "y": T(y), "dx": T(x.grad)}
        if bn.affine:
            step["dweight"], step["dbias"] = T(bn.weight.grad), T(bn.bias.grad)
        if bn.track_running_stats:
            step["running_mean"], step["running_var"] = T(bn.running_mean), T(bn.running_var)
            step["num_batches_tracked"] = int(bn.num_batches_tracked)
        case["steps"].append(step)
    bn.eval()
    x = torch.randn(*eval_shape, dtype=dtype).requires_grad_()
    g = torch.randn(*eval_shape, dtype=dtype)
    y = bn(x)
    (y * g).sum().backward()
    case["eval"] = {"x": T(x), "g": T(g), "y": T(y), "dx": T(x.grad)}
    return case


def batchnorm_second_order():
    torch.manual_seed(7)
    D = torch.float64
    bn = nn.BatchNorm1d(3).to(D)
    with torch.no_grad():
        bn.weight.copy_(1.0 + 0.25 * torch.randn(3, dtype=D))
        bn.bias.copy_(0.5 * torch.randn(3, dtype=D))
    out = {}
    for name, shape in (("2d", (5, 3)), ("3d", (3, 3, 4))):
        x = torch.randn(*shape, dtype=D).requires_grad_()
        g, v, u = torch.randn(*shape, dtype=D), torch.randn(*shape, dtype=D), torch.randn(3, dtype=D)
        y = bn(x)
        dx, dw = torch.autograd.grad((y * g).sum(), [x, bn.weight], create_graph=True)
        s = (dx * v).sum() + (dw * u).sum()
        ddx, ddw = torch.autograd.grad(s, [x, bn.weight])
        out[name] = {"x": T(x), "g": T(g), "v": T(v), "u": T(u), "ddx": T(ddx), "ddweight": T(ddw)}
    out["weight"], out["bias"] = T(bn.weight), T(bn.bias)
    return out


# ---------------------------------------------------------------- activations
def activations():
    torch.manual_seed(3)
    x2 = 2.0 * torch.randn(3, 4)
    x3 = torch.randn(2, 3, 2)
    x1 = torch.randn(5)
    mods = [
        ("Tanh()", nn.Tanh()), ("ReLU()", nn.ReLU()), ("GELU()", nn.GELU()), ("GELU('tanh')", nn.GELU("tanh")),
        ("Sigmoid()", nn.Sigmoid()), ("Softmax(1)", nn.Softmax(dim=1)), ("Softmax(0)", nn.Softmax(dim=0)),
        ("Softmax(-1)", nn.Softmax(dim=-1)), ("Softmax()", nn.Softmax()), ("Identity()", nn.Identity()),
        ("SiLU()", nn.SiLU()), ("Flatten()", nn.Flatten()), ("Flatten(0, 1)", nn.Flatten(0, 1)),
    ]
    out = {"x2": T(x2), "x3": T(x3), "x1": T(x1), "cases": []}
    for name, m in mods:
        row = {"module": name, "repr": repr(m), "y2": T(m(x2)), "y3": T(m(x3))}
        if name not in ("Softmax(1)", "Flatten()", "Flatten(0, 1)"):  # no dim 1 on the 1-D input
            row["y1"] = T(m(x1))
        out["cases"].append(row)
    return out


# ---------------------------------------------------------------- reprs
def reprs():
    seq = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.GELU(), nn.GELU("tanh"), nn.Tanh(),
                        nn.Sigmoid(), nn.Softmax(dim=1), nn.Softmax(), nn.Identity(),
                        nn.BatchNorm1d(8, eps=1e-3, momentum=None, affine=False, track_running_stats=False),
                        nn.Sequential(nn.BatchNorm1d(8, momentum=0.2), nn.Identity()))
    return {
        "sequential": repr(seq),
        "batchnorm_default": repr(nn.BatchNorm1d(4)),
        "batchnorm_options": repr(nn.BatchNorm1d(16, eps=0.001, momentum=0.01, affine=False)),
        "batchnorm_cumulative": repr(nn.BatchNorm1d(2, eps=1e-7, momentum=None, track_running_stats=False)),
        "unflatten": repr(nn.Unflatten(1, (2, 2))),
        "unflatten_one": repr(nn.Unflatten(0, (4,))),
        "losses": repr(nn.ModuleList([nn.L1Loss(), nn.MSELoss(reduction="sum"), nn.CrossEntropyLoss(label_smoothing=0.1),
                                      nn.NLLLoss(), nn.BCELoss(), nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)),
                                      nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0), nn.KLDivLoss(reduction="batchmean")])),
        "bce_with_logits_state": list(nn.BCEWithLogitsLoss(weight=torch.ones(3), pos_weight=torch.ones(3)).state_dict().keys()),
    }


# ---------------------------------------------------------------- a nested model (C++ twin: NestedModel)
class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_query = nn.Linear(4, 4, bias=False)
        self.W_key = nn.Linear(4, 4, bias=False)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.norm = nn.BatchNorm1d(4)
        self.mlp = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 4))
        self.mlp_again = self.mlp  # the same module twice: named_modules and apply see it once


class NestedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())
        self.head = nn.Linear(4, 2)


def nested():
    m = NestedModel()
    visited = []
    m.apply(lambda mod: visited.append(type(mod).__name__))
    return {
        "named_modules": [[n, type(mod).__name__] for n, mod in m.named_modules()],
        "apply_order": visited,
        "state_dict_keys": list(m.state_dict().keys()),
    }


# ---------------------------------------------------------------- load_state_dict
def error_text(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    raise AssertionError("expected an error")


def load_errors():
    out = {}
    lin = nn.Linear(3, 3)
    out["linear_missing"] = error_text(lambda: lin.load_state_dict({"weight": torch.zeros(3, 3)}))
    out["linear_unexpected_and_size"] = error_text(lambda: lin.load_state_dict(
        {"weight": torch.zeros(2, 3), "bias": torch.ones(3), "y.z": torch.ones(1), "a": torch.ones(1)}))
    out["linear_size_not_strict"] = error_text(lambda: lin.load_state_dict(
        {"weight": torch.zeros(2, 3), "bias": torch.ones(3)}, strict=False))
    r = lin.load_state_dict({"weight": torch.zeros(3, 3), "x": torch.ones(1), "weight.q": torch.ones(1)}, strict=False)
    out["linear_not_strict_keys"] = {"missing": list(r.missing_keys), "unexpected": list(r.unexpected_keys)}

    # The nested model: its state_dict with one buffer dropped, keys added and head.bias resized.
    m = NestedModel()

    def edited():
        sd = dict(m.state_dict())
        del sd["blocks.0.norm.running_var"]
        del sd["blocks.1.mlp.2.bias"]
        sd["blocks.1.attn.W_value.weight"] = torch.zeros(4, 4)
        sd["head.weight.extra"] = torch.zeros(1)  # "weight" is head's own name: not unexpected
        sd["blocks.2.x"] = torch.zeros(1)
        sd["extra"] = torch.zeros(1)
        sd["head.bias"] = torch.zeros(3)
        return sd

    out["nested_strict"] = error_text(lambda: m.load_state_dict(edited()))
    sd = edited()
    sd["head.bias"] = torch.zeros(2)
    r = m.load_state_dict(sd, strict=False)
    out["nested_not_strict_keys"] = {"missing": list(r.missing_keys), "unexpected": list(r.unexpected_keys)}

    # A dict without num_batches_tracked (a plain dict, as from a file) loads and sets it to 0; a
    # one-element 1-D tensor loads into the 0-dim num_batches_tracked.
    bn = nn.BatchNorm1d(2)
    bn(torch.randn(4, 2))
    r = bn.load_state_dict({"weight": torch.ones(2), "bias": torch.zeros(2), "running_mean": torch.ones(2),
                            "running_var": torch.ones(2)})
    out["batchnorm_without_count"] = {"missing": list(r.missing_keys), "unexpected": list(r.unexpected_keys),
                                      "num_batches_tracked": int(bn.num_batches_tracked)}
    r = bn.load_state_dict({"weight": torch.ones(2), "bias": torch.zeros(2), "running_mean": torch.ones(2),
                            "running_var": torch.ones(2), "num_batches_tracked": torch.tensor([7])})
    out["batchnorm_count_from_1d"] = int(bn.num_batches_tracked)
    return out


def main():
    bn = []
    for i, (name, kwargs, shape, eval_shape, steps) in enumerate(BN_CASES):
        for dtype in (torch.float32, torch.float64):
            bn.append(batchnorm_case(name, kwargs, shape, eval_shape, steps, dtype, seed=100 + i))
    data = {
        "generated_by": "tools/golden/make_nn_modules_golden.py (PyTorch %s)" % torch.__version__,
        "batchnorm": bn,
        "batchnorm_second_order": batchnorm_second_order(),
        "activations": activations(),
        "reprs": reprs(),
        "nested": nested(),
        "load_errors": load_errors(),
    }
    with open(OUT, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
