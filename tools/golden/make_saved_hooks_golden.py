"""Writes tests/golden/saved_hooks.json from PyTorch 1.13, for tests/test_saved_hooks.cpp:
- "events": the pack and unpack calls of torch.autograd.graph.saved_tensors_hooks on a small
  graph, in order, each naming the tensor it saw (x, w, m, the intermediates; "?" for a node's own
  output, saved before the test could name it);
- "mlp" and "attention": the gradients of a float64 MLP and a causal attention block computed
  through torch.utils.checkpoint.checkpoint(..., use_reentrant=False), with the inputs they came
  from (drawn after torch.manual_seed(0), which ag reproduces bit for bit).

    /usr/bin/python3 tools/golden/make_saved_hooks_golden.py
"""
import json
import os

import torch
from torch.utils.checkpoint import checkpoint

torch.set_default_dtype(torch.float64)


def events():
    torch.manual_seed(0)
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(3, 4, requires_grad=True)
    m = torch.randn(4, 2, requires_grad=True)
    names = {"x": x, "w": w, "m": m}
    log = []

    def name(t):
        for k, v in names.items():
            if v.data_ptr() == t.data_ptr():
                return k
        return "?"

    def pack(t):
        log.append("pack:" + name(t))
        return t

    def unpack(t):
        log.append("unpack:" + name(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        h = x * w
        names["h"] = h
        t = h.tanh()
        names["t"] = t
        z = t @ m
        names["z"] = z
        e = z.exp()
        names["e"] = e
        s = (e / z.sigmoid()).pow(2).sum()
    s.backward()
    return log


def flat(ts):
    return [[list(t.shape), t.reshape(-1).tolist()] for t in ts]


def leaves(*shapes):
    """Tensors that require grad, drawn in order after torch.manual_seed(0)."""
    torch.manual_seed(0)
    return [torch.randn(*shape, requires_grad=True) for shape in shapes]


def mlp():
    w1, w2, w3, x = leaves((4, 8), (8, 8), (8, 2), (5, 4))
    f = lambda a: torch.tanh(torch.tanh(a @ w1) @ w2)
    loss = (checkpoint(f, x, use_reentrant=False) @ w3).pow(2).sum()
    return {"inputs": flat([w1, w2, w3, x]), "loss": loss.item(), "grads": flat(torch.autograd.grad(loss, [w1, w2, w3, x]))}


def attention():
    wq, wk, wv, x = leaves((4, 4), (4, 4), (4, 4), (6, 4))
    c = torch.randn(6, 4)
    mask = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)

    def block(a):
        q, k, v = a @ wq, a @ wk, a @ wv
        return torch.softmax((q @ k.t() / 2.0).masked_fill(mask, float("-inf")), -1) @ v

    loss = (checkpoint(block, x, use_reentrant=False) * c).sum()
    return {"inputs": flat([wq, wk, wv, x, c]), "loss": loss.item(),
            "grads": flat(torch.autograd.grad(loss, [wq, wk, wv, x]))}


out = {"torch": torch.__version__, "events": events(), "mlp": mlp(), "attention": attention()}
path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "saved_hooks.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote", os.path.normpath(path))
