#!/usr/bin/python3
"""PyTorch 1.13 reference for examples/second_order: two uses of gradients of gradients.

(a) Newton's method on a small L2-regularized logistic regression. Each step takes the exact
    Hessian of the loss with torch.autograd.functional.hessian over (w, b), the gradient with
    torch.autograd.grad, and solves H d = g by Gaussian elimination on the host (plain Python
    floats, the same arithmetic in the same order as the C++ example), then (w, b) -= d.
(b) A WGAN-GP style critic: a small tanh MLP trained with Adam on
        f(fake).mean() - f(real).mean() + lambda * ((|d f(x_hat) / d x_hat|_2 - 1)^2).mean()
    where the input gradient comes from torch.autograd.grad(create_graph=True), so the loss's
    backward differentiates through a backward pass. The same critic (same seed) is also trained
    with lambda = 0, to show what the penalty does to the critic's gradient norm.

Everything is float64. Prints a table; with --json prints one JSON object with every number
(tests/golden/second_order.json is this script's --json output, and tests/test_second_order.cpp
compares examples/second_order's --json with it).

Run: /usr/bin/python3 tools/golden/second_order_reference.py [--json]
     /usr/bin/python3 tools/golden/second_order_reference.py --json > tests/golden/second_order.json
"""
import argparse
import json
import math

import torch

DT = torch.float64

# ---- (a) Newton's method on logistic regression ----
N_POINTS, N_FEATURES, L2, MAX_STEPS, TOL = 64, 3, 0.1, 20, 1e-12


def solve(A, rhs):
    """x with A x = rhs: Gaussian elimination with partial pivoting on lists of floats."""
    n = len(rhs)
    M = [list(row) + [r] for row, r in zip(A, rhs)]
    for k in range(n):
        p = max(range(k, n), key=lambda i: abs(M[i][k]))  # first row with the largest |pivot|
        M[k], M[p] = M[p], M[k]
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            for j in range(k, n + 1):
                M[i][j] -= f * M[k][j]
    x = [0.0] * n
    for i in reversed(range(n)):
        s = M[i][n]
        for j in range(i + 1, n):
            s -= M[i][j] * x[j]
        x[i] = s / M[i][i]
    return x


def newton():
    torch.manual_seed(0)
    X = torch.randn(N_POINTS, N_FEATURES, dtype=DT)           # (N, d)
    w_true = torch.tensor([1.5, -2.0, 0.5], dtype=DT)
    noise = torch.randn(N_POINTS, dtype=DT)
    y = (X @ w_true + noise > 0).to(DT)                       # (N,) labels 0/1

    def loss_fn(w, b):
        z = X @ w + b                                         # (N,) logits
        # mean binary cross-entropy with logits: log(1 + exp(z)) - y z, plus L2 / 2 |w|^2
        return (torch.log(1 + torch.exp(z)) - y * z).mean() + L2 / 2 * (w * w).sum()

    w = torch.zeros(N_FEATURES, dtype=DT, requires_grad=True)
    b = torch.zeros(1, dtype=DT, requires_grad=True)
    rows = []
    for step in range(MAX_STEPS + 1):
        loss = loss_fn(w, b)
        gw, gb = torch.autograd.grad(loss, (w, b))
        g = gw.tolist() + gb.tolist()
        gnorm = math.sqrt(sum(v * v for v in g))
        rows.append({"step": step, "loss": loss.item(), "grad_norm": gnorm})
        if gnorm < TOL or step == MAX_STEPS:
            break
        # H as blocks: ((d2L/dw dw (d, d), d2L/dw db (d, 1)), (d2L/db dw (1, d), d2L/db db (1, 1)))
        (Hww, Hwb), (Hbw, Hbb) = torch.autograd.functional.hessian(loss_fn, (w, b))
        H = torch.cat([torch.cat([Hww, Hwb], 1), torch.cat([Hbw, Hbb], 1)], 0).tolist()  # (d+1, d+1)
        d = solve(H, g)
        with torch.no_grad():
            w -= torch.tensor(d[:N_FEATURES], dtype=DT)
            b -= torch.tensor(d[N_FEATURES:], dtype=DT)
    return {"steps": rows, "w": w.tolist(), "b": b.tolist()}


# ---- (b) WGAN-GP gradient penalty ----
N_SAMPLES, HIDDEN, GP_STEPS, LR = 64, 16, 25, 0.01


def critic_run(lam):
    torch.manual_seed(1)
    real = torch.randn(N_SAMPLES, 2, dtype=DT) * 0.5 + torch.tensor([2.0, 1.0], dtype=DT)  # (N, 2)
    fake = torch.randn(N_SAMPLES, 2, dtype=DT)                                             # (N, 2)
    critic = torch.nn.Sequential(torch.nn.Linear(2, HIDDEN), torch.nn.Tanh(),
                                 torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(),
                                 torch.nn.Linear(HIDDEN, 1)).double()
    opt = torch.optim.Adam(critic.parameters(), lr=LR, betas=(0.5, 0.9))
    rows = []
    for step in range(GP_STEPS):
        alpha = torch.rand(N_SAMPLES, 1, dtype=DT)                        # (N, 1)
        x_hat = (alpha * real + (1 - alpha) * fake).requires_grad_(True)  # (N, 2)
        out = critic(x_hat)                                               # (N, 1)
        # d f / d x_hat, kept as a graph (create_graph=True) so the penalty can be differentiated
        (gx,) = torch.autograd.grad(out, x_hat, grad_outputs=torch.ones_like(out), create_graph=True)
        gnorm = (gx * gx).sum(1).sqrt()                                   # (N,) |grad|_2 per point
        penalty = ((gnorm - 1) ** 2).mean()
        w_dist = critic(real).mean() - critic(fake).mean()
        loss = -w_dist + lam * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        rows.append({"step": step, "loss": loss.item(), "w_dist": w_dist.item(),
                     "penalty": penalty.item(), "grad_norm": gnorm.mean().item()})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object with every number")
    args = ap.parse_args()
    result = {"newton": newton(), "gp": critic_run(10.0), "no_gp": critic_run(0.0)}
    if args.json:
        print(json.dumps(result))
        return
    print("Newton's method, logistic regression (%d points, %d features, L2 %g)" % (N_POINTS, N_FEATURES, L2))
    for r in result["newton"]["steps"]:
        print("step %2d  loss %.12f  |grad| %.3e" % (r["step"], r["loss"], r["grad_norm"]))
    print("w", " ".join("%.12f" % v for v in result["newton"]["w"]), " b %.12f" % result["newton"]["b"][0])
    print()
    for key, lam in (("gp", 10.0), ("no_gp", 0.0)):
        print("WGAN critic, lambda %g" % lam)
        for r in result[key]:
            print("step %2d  loss %12.8f  W %11.8f  penalty %11.8f  mean |df/dx| %.8f"
                  % (r["step"], r["loss"], r["w_dist"], r["penalty"], r["grad_norm"]))
        print()


if __name__ == "__main__":
    main()
