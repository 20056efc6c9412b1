#!/usr/bin/python3
"""Golden data for ag's higher-order API (ag::functional), from torch.autograd.functional.

Run with Debian's PyTorch 1.13 (apt-get install python3-torch):
    /usr/bin/python3 tools/golden/make_higher_order_golden.py
It writes tests/golden/higher_order_cases.txt, which tests/test_functional_golden.cpp reads with
tests/golden_io.h. Everything is float64. The inputs, constants and v tensors are drawn here
(torch.manual_seed per case) and written into the file: the C++ side reads them, it never
regenerates them. Integer targets and masks are literals, written the same way in both files.

Each case is one call of hessian, jacobian, hvp, vhp, jvp or vjp on one of the functions below;
every function has a C++ twin of the same name in tests/test_functional_golden.cpp. A function
takes its inputs (the tensors differentiated) and then its constants (`c`, fixed tensors from the
file that are not differentiated). The format, one case:

    case <kind> <function>
    inputs <n>           then n lines   input <tensor>
    consts <m>           then m lines   const <tensor>
    vs <k>               then k lines   v <tensor>     (k = 0: v omitted in the call)
    output <tensor>                     fn(inputs, consts)
    results <r>          then r lines   result <tensor>

where <tensor> is "ndim d1 ... dn : v1 v2 ..." (row-major). Results: hessian H[0][0], H[0][1], ...,
H[n-1][n-1] (r = n * n); jacobian one per input (r = n); vjp, hvp, vhp one per input; jvp one.
"""
import math
import os
import zlib

import torch
import torch.autograd.functional as AF
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "tests", "golden", "higher_order_cases.txt")

D = torch.float64


# ---------------------------------------------------------------- the functions (C++ twins in
# tests/test_functional_golden.cpp, same names; keep them in step)
def mlp_tanh_mse(W1, b1, W2, b2, c):
    x, y = c
    h = torch.tanh(x @ W1 + b1)
    return F.mse_loss(h @ W2 + b2, y)


def mlp_gelu_ce(W1, b1, W2, b2, c):
    (x,) = c
    h = F.gelu(x @ W1 + b1)
    return F.cross_entropy(h @ W2 + b2, torch.tensor([0, 2, 1, 2, 0]))


def attention(q, k, v, c):
    (w,) = c
    a = torch.softmax(q @ k.transpose(0, 1) / math.sqrt(2.0), -1)
    return ((a @ v) * w).sum()


def causal_attention(q, k, v, c):
    (w,) = c
    mask = torch.triu(torch.ones(3, 3, dtype=D), 1).bool()
    s = (q @ k.transpose(0, 1)).masked_fill(mask, -math.inf) / math.sqrt(2.0)
    return ((torch.softmax(s, -1) @ v) * w).sum()


def layer_norm_sq(x, w, b, c):
    (u,) = c
    return (F.layer_norm(x, (4,), w, b) ** 2 * u).sum()


def cross_entropy(logits, c):
    return F.cross_entropy(logits, torch.tensor([0, 2, 1, 2]))


def cross_entropy_ignore(logits, c):
    return F.cross_entropy(logits, torch.tensor([0, 2, 1, 2]), ignore_index=2)


def log_softmax_sigmoid_exp_log(x, y, c):
    a = F.log_softmax(x, -1) * torch.sigmoid(y)  # (2, 3) * (3)
    b = torch.log(torch.exp(0.5 * x).sum(0) + 1.0) * y
    return a.sum() + b.sum()


def elementwise_mix(x, y, c):
    # x, y > 0.5
    t = torch.sqrt(x) / (y + 2.0) + x ** 3 * y - torch.relu(x - 1.0) * y + torch.log(x / y) + x ** y
    return t.sum()


def linear_and_unused(x, y, z, c):
    # y enters linearly (H[1][1] = 0), z not at all (its blocks are 0)
    (u,) = c
    return torch.exp(x).sum() + (x * y).sum() + (y * u).sum()


def max_mean(x, c):
    return (x.max(1)[0] ** 2).sum() + (x.mean(0) ** 2).sum() * x.max()


def softmax_dim0(x, c):
    return torch.softmax(x, 0)


def matmul(a, b, c):
    return a @ b


def composite(x, y, c):
    # y > 0.5
    return torch.tanh(x) * y - x / (y * y + 1.0) + torch.sqrt(torch.sigmoid(x - y)) + torch.relu(x) * 2.0


def cat_stack_index(a, b, c):
    m = torch.cat([a, b], 1)  # (2, 5)
    s = torch.stack([m, m * m], 0)  # (2, 2, 5)
    return s.index_select(2, torch.tensor([4, 0, 4, 1]))


def views(x, c):
    # x (3, 4)
    a = x.t().reshape(2, 6)[:, 1::2]  # (2, 3)
    b = x.reshape(12)[3:9].view(2, 3)
    e = x.select(1, 2).unsqueeze(0).expand(2, 3)
    return torch.triu(a * b, 1) + torch.tril(e + a, 0)


def embedding_layer_norm(w, g, b, c):
    e = F.embedding(torch.tensor([[1, 4], [1, 0], [3, 1]]), w)  # (3, 2, 4)
    return F.layer_norm(e, (4,), g, b)


def masked_log_softmax(x, c):
    mask = torch.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
    return F.log_softmax(x.masked_fill(mask, -1e9), -1)


def mse_two(a, b, c):
    return F.mse_loss(a, b)


def reductions(x, c):
    return torch.cat([x.max(1)[0], x.mean(0), x.sum(1), x.max().unsqueeze(0)])


def gelu_tanh_pow(x, c):
    # x > 0.5
    return F.gelu(x, approximate="tanh") * x ** 1.5


def unused_input(a, b, c):
    return a * 2.0 + 1.0


def mlp_forward(x, W, b, c):
    return torch.tanh(x @ W + b)


def softmax_matmul(a, b, c):
    return torch.softmax(a @ b, -1)


def scalar_to_vector(s, c):
    (u,) = c
    return torch.exp(s * u)


# ---------------------------------------------------------------- the cases
def rn(*shape):
    return torch.randn(shape, dtype=D)


def pos(*shape):
    return torch.rand(shape, dtype=D) + 0.5


# (kind, function, inputs, consts, v): each a function returning a list of tensors, called after
# torch.manual_seed; v's "out" means one tensor of the output's shape (vjp); None means omitted.
FUNCS = {f.__name__: f for f in [
    mlp_tanh_mse, mlp_gelu_ce, attention, causal_attention, layer_norm_sq, cross_entropy,
    cross_entropy_ignore, log_softmax_sigmoid_exp_log, elementwise_mix, linear_and_unused, max_mean,
    softmax_dim0, matmul, composite, cat_stack_index, views, embedding_layer_norm, masked_log_softmax,
    mse_two, reductions, gelu_tanh_pow, unused_input, mlp_forward, softmax_matmul, scalar_to_vector,
]}

MLP_MSE = (lambda: [rn(3, 4), rn(4), rn(4, 2), rn(2)], lambda: [rn(5, 3), rn(5, 2)])
MLP_CE = (lambda: [rn(3, 4), rn(4), rn(4, 3), rn(3)], lambda: [rn(5, 3)])
ATTN = (lambda: [rn(3, 2), rn(3, 2), rn(3, 2)], lambda: [rn(3, 2)])
LN = (lambda: [rn(3, 4), 1.0 + 0.3 * rn(4), rn(4)], lambda: [rn(3, 4)])
LOGITS = (lambda: [rn(4, 3)], lambda: [])
LSE = (lambda: [rn(2, 3), rn(3)], lambda: [])
MIX = (lambda: [pos(4), pos(4)], lambda: [])
LIN = (lambda: [rn(2, 3), rn(2, 3), rn(2)], lambda: [rn(2, 3)])
MAXM = (lambda: [rn(3, 4)], lambda: [])
NONE = lambda: []

CASES = [
    # hessian
    ("hessian", "mlp_tanh_mse", *MLP_MSE),
    ("hessian", "mlp_gelu_ce", *MLP_CE),
    ("hessian", "attention", *ATTN),
    ("hessian", "causal_attention", *ATTN),
    ("hessian", "layer_norm_sq", *LN),
    ("hessian", "cross_entropy", *LOGITS),
    ("hessian", "cross_entropy_ignore", *LOGITS),
    ("hessian", "log_softmax_sigmoid_exp_log", *LSE),
    ("hessian", "elementwise_mix", *MIX),
    ("hessian", "linear_and_unused", *LIN),
    ("hessian", "max_mean", *MAXM),
    # jacobian
    ("jacobian", "softmax_dim0", lambda: [rn(3, 4)], NONE),
    ("jacobian", "matmul", lambda: [rn(2, 3), rn(3, 2)], NONE),
    ("jacobian", "composite", lambda: [rn(2, 3), pos(3)], NONE),
    ("jacobian", "cat_stack_index", lambda: [rn(2, 3), rn(2, 2)], NONE),
    ("jacobian", "views", lambda: [rn(3, 4)], NONE),
    ("jacobian", "embedding_layer_norm", lambda: [rn(5, 4), 1.0 + 0.3 * rn(4), rn(4)], NONE),
    ("jacobian", "masked_log_softmax", lambda: [rn(3, 4)], NONE),
    ("jacobian", "mse_two", lambda: [rn(3, 4), rn(3, 4)], NONE),
    ("jacobian", "reductions", lambda: [rn(3, 4)], NONE),
    ("jacobian", "gelu_tanh_pow", lambda: [pos(2, 3)], NONE),
    ("jacobian", "unused_input", lambda: [rn(2, 2), rn(3)], NONE),
    ("jacobian", "cross_entropy_ignore", *LOGITS),
    ("jacobian", "scalar_to_vector", lambda: [rn()], lambda: [rn(3)]),
    # vjp (v of the output's shape; omitted for a scalar output)
    ("vjp", "mlp_forward", lambda: [rn(4, 3), rn(3, 2), rn(2)], NONE),
    ("vjp", "composite", lambda: [rn(2, 3), pos(3)], NONE),
    ("vjp", "embedding_layer_norm", lambda: [rn(5, 4), 1.0 + 0.3 * rn(4), rn(4)], NONE),
    ("vjp", "cat_stack_index", lambda: [rn(2, 3), rn(2, 2)], NONE),
    ("vjp", "unused_input", lambda: [rn(2, 2), rn(3)], NONE),
    ("vjp", "mlp_gelu_ce", *MLP_CE, None),
    ("vjp", "attention", *ATTN),
    # jvp (one v per input; omitted for one one-element input)
    ("jvp", "softmax_matmul", lambda: [rn(3, 2), rn(2, 4)], NONE),
    ("jvp", "mlp_forward", lambda: [rn(4, 3), rn(3, 2), rn(2)], NONE),
    ("jvp", "views", lambda: [rn(3, 4)], NONE),
    ("jvp", "masked_log_softmax", lambda: [rn(3, 4)], NONE),
    ("jvp", "unused_input", lambda: [rn(2, 2), rn(3)], NONE),
    ("jvp", "layer_norm_sq", *LN),
    ("jvp", "scalar_to_vector", lambda: [rn()], lambda: [rn(3)], None),
    # hvp and vhp (one v per input)
    ("hvp", "mlp_tanh_mse", *MLP_MSE),
    ("hvp", "attention", *ATTN),
    ("hvp", "layer_norm_sq", *LN),
    ("hvp", "cross_entropy_ignore", *LOGITS),
    ("hvp", "log_softmax_sigmoid_exp_log", *LSE),
    ("hvp", "linear_and_unused", *LIN),
    ("vhp", "mlp_gelu_ce", *MLP_CE),
    ("vhp", "causal_attention", *ATTN),
    ("vhp", "layer_norm_sq", *LN),
    ("vhp", "cross_entropy", *LOGITS),
    ("vhp", "elementwise_mix", *MIX),
    ("vhp", "linear_and_unused", *LIN),
    ("vhp", "max_mean", *MAXM),
]


def num(v):
    assert math.isfinite(v), v
    return repr(float(v))


def tensor_line(t):
    dims = "".join(f" {s}" for s in t.shape)
    vals = "".join(f" {num(v)}" for v in t.detach().reshape(-1).tolist())
    return f"{t.dim()}{dims} :{vals}"


def run_case(kind, name, make_inputs, make_consts, v_mode="default"):
    torch.manual_seed(zlib.crc32(f"{kind} {name}".encode()))
    inputs = [t.to(D) for t in make_inputs()]
    consts = [t.to(D) for t in make_consts()]
    fn = FUNCS[name]

    def f(*xs):
        return fn(*xs, consts)

    out = f(*inputs)
    ins = tuple(inputs)
    if v_mode is None:
        vs = []
    elif kind == "vjp":
        vs = [rn(*out.shape)]
    elif kind in ("jvp", "hvp", "vhp"):
        vs = [rn(*x.shape) for x in inputs]
    else:
        vs = []
    if kind == "hessian":
        assert out.numel() == 1
        h = AF.hessian(f, ins)
        results = [h[i][j] for i in range(len(ins)) for j in range(len(ins))]
    elif kind == "jacobian":
        results = list(AF.jacobian(f, ins))
    else:
        call = {"vjp": AF.vjp, "jvp": AF.jvp, "hvp": AF.hvp, "vhp": AF.vhp}[kind]
        if kind == "vjp":
            v = vs[0] if vs else None
        else:
            v = tuple(vs) if vs else None
        fo, res = call(f, ins, v)
        assert torch.equal(fo, out)
        results = [res] if kind == "jvp" else list(res)
    for r in results:
        assert r.dtype == D and torch.isfinite(r).all(), (kind, name)
    return inputs, consts, vs, out, results


def main():
    with open(OUT, "w") as fo:
        fo.write(f"# generated by tools/golden/make_higher_order_golden.py (PyTorch {torch.__version__}); do not edit\n")
        for case in CASES:
            kind, name = case[0], case[1]
            inputs, consts, vs, out, results = run_case(*case)
            fo.write(f"case {kind} {name}\n")
            for kw, ts in (("input", inputs), ("const", consts), ("v", vs)):
                fo.write(f"{'vs' if kw == 'v' else kw + 's'} {len(ts)}\n")
                for t in ts:
                    fo.write(f"{kw} {tensor_line(t)}\n")
            fo.write(f"output {tensor_line(out)}\n")
            fo.write(f"results {len(results)}\n")
            for r in results:
                fo.write(f"result {tensor_line(r)}\n")
    print("wrote", os.path.normpath(OUT), len(CASES), "cases")


if __name__ == "__main__":
    main()
