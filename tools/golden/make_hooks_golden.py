#!/usr/bin/python3
"""Golden data for tests/test_hooks.cpp (issue 12: looking inside the engine), from PyTorch 1.13.

Run: /usr/bin/python3 tools/golden/make_hooks_golden.py > tests/golden/hooks.json

- walks: grad_fn.next_functions printed recursively (one line per node: its type name and the
  input index of the edge that led to it) for the seed tutorials' attention graphs;
- hooks: gradients and hook calls for hook order, replacement, removal, leaf hooks (which see the
  summed gradient once) and retain_grad on views, reused tensors and repeated backward calls.
"""
import json
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def walk(fn, depth=0, idx=None, out=None):
    out = [] if out is None else out
    name = "None" if fn is None else type(fn).__name__
    out.append("  " * depth + name + ("" if idx is None else " [%d]" % idx))
    if fn is not None:
        for f, i in fn.next_functions:
            walk(f, depth + 1, i, out)
    return out


# ---- the seed tutorials' modules (seeds 000, 001, 003) ----
class SelfAttention000(nn.Module):
    def __init__(self, d_in, d_out_kq, d_out_v):
        super().__init__()
        self.d_out_kq = d_out_kq
        self.W_query = nn.Parameter(torch.rand(d_in, d_out_kq))
        self.W_key = nn.Parameter(torch.rand(d_in, d_out_kq))
        self.W_value = nn.Parameter(torch.rand(d_in, d_out_v))

    def forward(self, x):
        keys = x @ self.W_key
        queries = x @ self.W_query
        values = x @ self.W_value
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / self.d_out_kq**0.5, dim=-1)
        return attn_weights @ values


class SelfAttention001(nn.Module):
    def __init__(self, d_model=2, row_dim=0, col_dim=1):
        super().__init__()
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, d_model, bias=False)
        self.W_v = nn.Linear(d_model, d_model, bias=False)
        self.row_dim, self.col_dim = row_dim, col_dim

    def forward(self, token_encodings, mask=None):
        q = self.W_q(token_encodings)
        k = self.W_k(token_encodings)
        v = self.W_v(token_encodings)
        sims = torch.matmul(q, k.transpose(dim0=self.row_dim, dim1=self.col_dim))
        scaled_sims = sims / torch.tensor(k.size(self.col_dim) ** 0.5)
        if mask is not None:
            scaled_sims = scaled_sims.masked_fill(mask=mask, value=-1e9)
        attention_percents = F.softmax(scaled_sims, dim=self.col_dim)
        return torch.matmul(attention_percents, v)


class SelfAttentionV2(nn.Module):
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = queries @ keys.T
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return attn_weights @ values


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.W_K = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_Q = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_V = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        keys = self.W_K(x)
        values = self.W_V(x)
        queries = self.W_Q(x)
        attn_scores = queries @ keys.transpose(1, 2)
        attn_scores = attn_scores.masked_fill(self.mask.bool(), -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        return self.dropout(attn_weights) @ values


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)


inputs = torch.tensor([[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
                       [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]])
batch = torch.stack((inputs, inputs))
enc = torch.tensor([[1.16, 0.23], [0.57, 1.36], [4.41, -2.16]])
mask = torch.tril(torch.ones(3, 3)) == 0
torch.manual_seed(123)
walks = {
    "seed000_SelfAttention": walk(SelfAttention000(3, 2, 4)(inputs).grad_fn),
    "seed001_SelfAttention_masked": walk(SelfAttention001()(enc, mask).grad_fn),
    "seed003_SelfAttentionV2": walk(SelfAttentionV2(3, 2)(inputs).grad_fn),
    "seed003_CausalAttention": walk(CausalAttention(3, 2, 6, 0.0)(batch).grad_fn),
    "seed003_MultiHeadAttention": walk(MultiHeadAttention(3, 2, 6, 0.0, 2)(batch).grad_fn),
}


def vals(t):
    return t.detach().reshape(-1).tolist()


def fmt(t):
    return "[" + ", ".join("%g" % v for v in vals(t)) + "]"


hooks = {}
# hook order and replacement; retain_grad keeps the gradient after every hook (1.13)
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
calls = []
y.register_hook(lambda g: (calls.append("a %s" % fmt(g)), g * 10)[1])
y.retain_grad()
y.register_hook(lambda g: (calls.append("b %s" % fmt(g)), None)[1])
y.register_hook(lambda g: (calls.append("c %s" % fmt(g)), g + 1)[1])
(y * torch.tensor([3.0, 4.0])).sum().backward()
hooks["order"] = {"calls": calls, "y_grad": vals(y.grad), "x_grad": vals(x.grad)}

# a removed hook does not run; ids are positions
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 2
h0 = y.register_hook(lambda g: g * 10)
y.register_hook(lambda g: g * 3)
h0.remove()
y.sum().backward()
hooks["removed"] = {"x_grad": vals(x.grad)}

# a leaf hook sees the sum of the leaf's gradients once, before accumulation into .grad
x = torch.tensor([1.0, 2.0], requires_grad=True)
calls = []
x.register_hook(lambda g: (calls.append(vals(g)), g * 3)[1])
(x * x + x).sum().backward()
first = vals(x.grad)
(x * 5).sum().backward()
hooks["leaf"] = {"calls": calls, "grad_after_first": first, "grad_after_second": vals(x.grad)}

# retain_grad on a view and on a tensor used twice; two backward calls accumulate
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
c = a * 1.5
v = c[1]
v.retain_grad()
b = a * 3
b.retain_grad()
loss = v * v + (b * b + b).sum()
loss.backward(retain_graph=True)
once = {"v": vals(v.grad), "b": vals(b.grad)}
loss.backward()
hooks["retain"] = {"once": once, "twice": {"v": vals(v.grad), "b": vals(b.grad)}, "a": vals(a.grad)}

# retain_grad follows the tensor through in-place ops (its .grad is the new version's gradient)
x = torch.tensor([1.0, 2.0], requires_grad=True)
a = x * 2
a.retain_grad()
a.mul_(3)
b = x * 2
b.retain_grad()
b.masked_fill_(torch.tensor([True, False]), 5.0)
(a * a + b * b).sum().backward()
hooks["retain_inplace"] = {"a": vals(a.grad), "b": vals(b.grad), "x": vals(x.grad)}

# create_graph: a hook's replacement is differentiated through
x = torch.tensor([0.5, -1.5], requires_grad=True)
y = x ** 3
y.register_hook(lambda g: g * y)  # dL/dy * y
(gx,) = torch.autograd.grad(y.sum(), x, create_graph=True)  # 3 x^2 * x^3 = 3 x^5
(ggx,) = torch.autograd.grad(gx.sum(), x)  # 15 x^4
hooks["create_graph"] = {"gx": vals(gx), "ggx": vals(ggx)}

# anomaly mode: the message of the first node whose rule returns NaN, in a chain of 20 ops where
# op 12 (sqrt of a negative number) makes the first NaN of the forward pass
import warnings
warnings.simplefilter("ignore")
x = torch.tensor([0.5, 1.5, 2.0], requires_grad=True)
anomaly = {}
with torch.autograd.detect_anomaly():
    h = x
    for i in range(20):
        if i == 11:
            h = torch.sqrt(h - 10.0)
        elif i % 3 == 0:
            h = torch.tanh(h) * 1.5
        elif i % 3 == 1:
            h = h * h + 0.25
        else:
            h = torch.exp(-h)
    try:
        h.sum().backward()
    except RuntimeError as e:
        anomaly["message"] = str(e)

print(json.dumps({"walks": walks, "hooks": hooks, "anomaly": anomaly}, indent=1))
