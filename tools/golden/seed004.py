#!/usr/bin/python3
"""Seed 004's code run in order with torch.manual_seed(0) (the post sets no seed and prints no
values); writes tests/golden/seed004.txt, which examples/seeds/seed004.cpp must print exactly.
Run: /usr/bin/python3 tools/golden/seed004.py
"""
import math
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "seed004.txt")


class MultiHeadSelfAttention(torch.nn.Module):
    def __init__(self, D, kdim=None, vdim=None, heads=1):
        super().__init__()
        self._D = D
        self._heads = heads
        self._kdim = kdim if kdim is not None else D // heads
        self._vdim = vdim if vdim is not None else D // heads
        for h in range(self._heads):
            setattr(self, f"_wq_h{h}", torch.nn.Parameter(torch.randn(self._D, self._kdim)))
            setattr(self, f"_wk_h{h}", torch.nn.Parameter(torch.randn(self._D, self._kdim)))
            setattr(self, f"_wv_h{h}", torch.nn.Parameter(torch.randn(self._D, self._vdim)))
        self._wo = torch.nn.Parameter(torch.randn(self._heads * self._vdim, self._D))

    def forward(self, X):
        for h in range(self._heads):
            Q = X @ getattr(self, f"_wq_h{h}")
            K = X @ getattr(self, f"_wk_h{h}")
            V = X @ getattr(self, f"_wv_h{h}")
            head = Q @ K.t() / math.sqrt(float(self._kdim))
            head = torch.softmax(head, dim=-1)
            head = head @ V
            out = head if h == 0 else torch.cat([out, head], dim=1)
        return out @ self._wo


def main():
    lines = []
    torch.manual_seed(0)
    D, L = 4, 3
    lines.append("### In [self-attention]")
    wq = torch.nn.Parameter(torch.randn(D, D))
    wk = torch.nn.Parameter(torch.randn(D, D))
    wv = torch.nn.Parameter(torch.randn(D, D))

    def forward(X):
        Q = torch.matmul(X, wq)
        K = torch.matmul(X, wk)
        V = torch.matmul(X, wv)
        out = torch.matmul(Q, K.t()) / math.sqrt(float(D))
        out = torch.softmax(out, dim=1)
        return torch.matmul(out, V)

    X = torch.randn(L, D)
    lines.append(str(forward(X)))
    lines.append("### In [multi-head]")
    attn = MultiHeadSelfAttention(D, heads=2)
    lines.append(str(attn(X)))
    lines.append("### In [mask]")
    mask = torch.ones(L + 1, L + 1)
    mask = torch.tril(mask * (-1) * float("inf"), diagonal=-1)
    mask = mask.t()
    lines.append(str(mask))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
