#!/usr/bin/python3
"""Golden data for ag's higher-order API (ag::functional), from torch.autograd.functional, and for
forward mode (ag::forward_ad and ag::func), from torch.autograd.forward_ad and functorch.

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

Forward mode (one tangent v per input, drawn like jvp's):
    fwd_jvp       the output's tangent under torch.autograd.forward_ad (make_dual of every input,
                  unpack_dual of the output): one result
    func_jvp      functorch.jvp(f, inputs, vs)[1]: one result
    jacfwd        functorch.jacfwd(f, argnums=all): one per input (no vs)
    func_hessian  functorch.hessian(f, argnums=all), i.e. jacfwd of jacrev: n * n (no vs)
    fwd_over_rev  the Hessian-vector product by forward-over-reverse: the tangents of
                  torch.autograd.grad's results at dual inputs: one per input
"""
import math
import os
import zlib

import functorch
import torch
import torch.autograd.forward_ad as fwAD
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


# Forward mode: one function per family of ops, so that every family's jvp meets PyTorch's.
def softmax_lastdim(x, c):
    return torch.softmax(x, -1)


def log_softmax_dim0(x, c):
    return F.log_softmax(x, 0)


def layer_norm(x, w, b, c):
    return F.layer_norm(x, (4,), w, b)


def gelu_exact(x, c):
    return F.gelu(x)


def regression_losses(a, b, c):
    return (F.l1_loss(a, b) + F.smooth_l1_loss(a, b, beta=0.5) + F.huber_loss(a, b, delta=0.7)
            + F.mse_loss(a, b, reduction="sum"))


def classification_losses(x, y, c):
    (t,) = c  # targets in (0, 1)
    bce = F.binary_cross_entropy(torch.sigmoid(x), t)
    bcel = F.binary_cross_entropy_with_logits(x, t, pos_weight=torch.tensor([1.5, 0.5, 2.0], dtype=D))
    kl = F.kl_div(F.log_softmax(x, -1), F.softmax(y, -1), reduction="batchmean")
    nll = F.nll_loss(F.log_softmax(y, -1), torch.tensor([2, 0, 1, 1]))
    ce = F.cross_entropy(x, torch.tensor([1, 0, 2, 2]), label_smoothing=0.1)
    return torch.stack([bce, bcel, kl, nll, ce])


def unary_chain(x, c):
    # x > 0.5
    a = torch.exp(-x) + torch.log(x) + torch.tanh(x) + torch.sigmoid(x) + torch.relu(x - 1.0)
    b = torch.sin(x) * torch.cos(x) + torch.sqrt(x) + torch.rsqrt(x) + torch.reciprocal(x) + torch.abs(x - 1.3)
    d = F.silu(x) + F.softplus(x, beta=2.0) + F.elu(x - 1.0) + F.leaky_relu(x - 1.0, 0.1) + torch.log1p(x)
    e = torch.expm1(x) + torch.erf(x) + torch.square(x) + x ** 2.5 + (-x) + torch.clamp(x, 0.7, 1.2)
    return a * b + d * e


def binary_mix(x, y, c):
    # x, y > 0.5, broadcast (2, 3) with (3)
    return (x * y + x / y - (x - y) + x ** y + torch.maximum(x, y * 1.1) + torch.minimum(x, y * 0.9)
            + torch.where(x > y, x * x, y))


def stats(x, c):
    return torch.cat([x.var(1), x.std(0, unbiased=False), torch.logsumexp(x, 1), x.max(0)[0]])


def prod_cumsum_norm(x, c):
    return torch.cat([x.prod(1), x.cumsum(0).reshape(-1), x.norm().reshape(1), x.norm(p=1, dim=0)])


def gathers(x, c):
    idx = torch.tensor([[0, 2], [1, 1], [3, 0]])
    g = torch.gather(x, 1, idx)  # (3, 2)
    s = torch.zeros(3, 4, dtype=D).scatter_add(1, idx, x[:, :2])
    m = torch.masked_select(x, x > 0.0)
    return torch.cat([g.reshape(-1), s.reshape(-1), m, x[torch.tensor([2, 0, 2])].reshape(-1)])


def rearrange(x, c):
    # x (2, 3, 4)
    a = x.permute(2, 0, 1).flip(0).roll(1, 2)
    b = x.repeat(1, 2, 1)[:, 1:5:2].transpose(1, 2)
    return torch.cat([a.reshape(-1), b.reshape(-1), x.flatten(1).sum(0)])


def batched_linear(x, w, b, c):
    # x (2, 3, 4) @ (4, 5) broadcast, then F.linear with a (2, 5) weight
    return F.linear(torch.matmul(x, w), c[0], b)


def mlp_tanh_sq(W1, b1, W2, b2, c):
    # mlp_tanh_mse with the mean of squares written out (1.13's mse_loss has no forward-over-reverse)
    x, y = c
    h = torch.tanh(x @ W1 + b1)
    return ((h @ W2 + b2 - y) ** 2).mean()


def bmm(a, b, c):
    return torch.matmul(a, b)  # (2, 3, 4) @ (2, 4, 2)


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
    softmax_lastdim, log_softmax_dim0, layer_norm, gelu_exact, regression_losses, classification_losses,
    unary_chain, binary_mix, stats, prod_cumsum_norm, gathers, rearrange, batched_linear, bmm, mlp_tanh_sq,
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
    # forward mode: torch.autograd.forward_ad on every family of ops
    ("fwd_jvp", "softmax_lastdim", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "log_softmax_dim0", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "layer_norm", lambda: [rn(3, 4), 1.0 + 0.3 * rn(4), rn(4)], NONE),
    ("fwd_jvp", "gelu_exact", lambda: [rn(2, 3)], NONE),
    ("fwd_jvp", "gelu_tanh_pow", lambda: [pos(2, 3)], NONE),
    ("fwd_jvp", "cross_entropy_ignore", *LOGITS),
    ("fwd_jvp", "mlp_gelu_ce", *MLP_CE),
    ("fwd_jvp", "attention", *ATTN),
    ("fwd_jvp", "causal_attention", *ATTN),
    ("fwd_jvp", "masked_log_softmax", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "regression_losses", lambda: [rn(3, 4), rn(3, 4)], NONE),
    ("fwd_jvp", "classification_losses", lambda: [rn(4, 3), rn(4, 3)], lambda: [torch.rand(4, 3, dtype=D)]),
    ("fwd_jvp", "mse_two", lambda: [rn(3, 4), rn(3, 4)], NONE),
    ("fwd_jvp", "unary_chain", lambda: [pos(2, 3)], NONE),
    ("fwd_jvp", "binary_mix", lambda: [pos(2, 3), pos(3)], NONE),
    ("fwd_jvp", "elementwise_mix", *MIX),
    ("fwd_jvp", "composite", lambda: [rn(2, 3), pos(3)], NONE),
    ("fwd_jvp", "reductions", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "stats", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "prod_cumsum_norm", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "max_mean", *MAXM),
    ("fwd_jvp", "gathers", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "views", lambda: [rn(3, 4)], NONE),
    ("fwd_jvp", "rearrange", lambda: [rn(2, 3, 4)], NONE),
    ("fwd_jvp", "cat_stack_index", lambda: [rn(2, 3), rn(2, 2)], NONE),
    ("fwd_jvp", "embedding_layer_norm", lambda: [rn(5, 4), 1.0 + 0.3 * rn(4), rn(4)], NONE),
    ("fwd_jvp", "matmul", lambda: [rn(2, 3), rn(3, 2)], NONE),
    ("fwd_jvp", "bmm", lambda: [rn(2, 3, 4), rn(2, 4, 2)], NONE),
    ("fwd_jvp", "batched_linear", lambda: [rn(2, 3, 4), rn(4, 5), rn(2)], lambda: [rn(2, 5)]),
    ("fwd_jvp", "mlp_forward", lambda: [rn(4, 3), rn(3, 2), rn(2)], NONE),
    ("fwd_jvp", "linear_and_unused", *LIN),
    ("fwd_jvp", "scalar_to_vector", lambda: [rn()], lambda: [rn(3)]),
    # functorch
    ("func_jvp", "mlp_tanh_mse", *MLP_MSE),
    ("func_jvp", "softmax_matmul", lambda: [rn(3, 2), rn(2, 4)], NONE),
    ("jacfwd", "mlp_forward", lambda: [rn(4, 3), rn(3, 2), rn(2)], NONE),
    ("jacfwd", "mlp_tanh_mse", *MLP_MSE),
    ("jacfwd", "softmax_matmul", lambda: [rn(3, 2), rn(2, 4)], NONE),
    ("func_hessian", "mlp_tanh_mse", *MLP_MSE),
    # (PyTorch 1.13 has no forward rule for the backward of softmax, log_softmax or layer_norm, and
    # mse_loss's trips over its immutable zero tensors, so it cannot take a forward-over-reverse
    # derivative through them: no attention, cross-entropy, layer_norm or mse_loss here; ag's own
    # tests compare those with reverse-over-reverse)
    ("func_hessian", "elementwise_mix", *MIX),
    ("fwd_over_rev", "mlp_tanh_sq", *MLP_MSE),
    ("fwd_over_rev", "elementwise_mix", *MIX),
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
    elif kind in ("jvp", "hvp", "vhp", "fwd_jvp", "func_jvp", "fwd_over_rev"):
        vs = [rn(*x.shape) for x in inputs]
    else:
        vs = []
    if kind == "hessian":
        assert out.numel() == 1
        h = AF.hessian(f, ins)
        results = [h[i][j] for i in range(len(ins)) for j in range(len(ins))]
    elif kind == "jacobian":
        results = list(AF.jacobian(f, ins))
    elif kind == "fwd_jvp":
        with fwAD.dual_level():
            fo = f(*[fwAD.make_dual(x, v) for x, v in zip(inputs, vs)])
            primal, tangent = fwAD.unpack_dual(fo)
            assert torch.allclose(primal, out, rtol=0, atol=1e-14)
            results = [tangent if tangent is not None else torch.zeros_like(out)]
    elif kind == "func_jvp":
        fo, t = functorch.jvp(f, ins, tuple(vs))
        assert torch.allclose(fo, out, rtol=0, atol=1e-14)
        results = [t]
    elif kind in ("jacfwd", "func_hessian"):
        argnums = tuple(range(len(ins)))
        if kind == "jacfwd":
            results = list(functorch.jacfwd(f, argnums=argnums)(*ins))
        else:
            h = functorch.hessian(f, argnums=argnums)(*ins)
            results = [h[i][j] for i in range(len(ins)) for j in range(len(ins))]
    elif kind == "fwd_over_rev":
        # the tangents of torch.autograd.grad's results, under forward_ad (functorch.jvp of
        # functorch.grad trips over 1.13's immutable zero tensors here)
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x.clone().requires_grad_(), v) for x, v in zip(inputs, vs)]
            grads = torch.autograd.grad(f(*duals), duals, create_graph=True)
            results = [fwAD.unpack_dual(g).tangent for g in grads]
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
