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
(c) Hessian-free Newton on a 2-layer tanh MLP regression: each step solves (H + damping I) d = g
    by conjugate gradient, where every H v is a forward-over-reverse Hessian-vector product (the
    tangent of torch.autograd.grad's result at a dual input, torch.autograd.forward_ad), so H is
    never formed; theta -= d if that lowers the loss (then the damping halves), else the damping
    grows 4x (Levenberg-Marquardt).

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
import torch.autograd.forward_ad as fwAD

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


# ---- (c) Hessian-free Newton on a small MLP ----
HF_POINTS, HF_HIDDEN, HF_STEPS, HF_CG_ITERS, HF_DAMPING = 64, 8, 15, 20, 1.0


def hessian_free():
    torch.manual_seed(2)
    X = torch.randn(HF_POINTS, 2, dtype=DT)                                 # (N, 2)
    y = torch.sin(2 * X[:, 0:1]) * torch.cos(X[:, 1:2])                     # (N, 1)
    shapes = [(2, HF_HIDDEN), (HF_HIDDEN,), (HF_HIDDEN, 1), (1,)]           # W1, b1, W2, b2
    sizes = [math.prod(s) for s in shapes]
    theta = torch.randn(sum(sizes), dtype=DT) * 0.5                         # all parameters, flat

    def loss_fn(t):
        W1, b1, W2, b2 = [p.view(s) for p, s in zip(t.split(sizes), shapes)]
        out = torch.tanh(X @ W1 + b1) @ W2 + b2
        return ((out - y) ** 2).mean()

    def grad_fn(t):                                                         # dL/dtheta, with its graph
        return torch.autograd.grad(loss_fn(t), t, create_graph=True)[0]

    def hvp(t, v):                                                          # H v, forward over reverse
        with fwAD.dual_level():
            return fwAD.unpack_dual(grad_fn(fwAD.make_dual(t.detach().requires_grad_(), v))).tangent

    rows = []
    damping = HF_DAMPING
    for step in range(HF_STEPS + 1):
        t = theta.detach().requires_grad_()
        loss = loss_fn(t)
        g = grad_fn(t).detach()
        rows.append({"step": step, "loss": loss.item(), "grad_norm": g.norm().item(), "damping": damping})
        if step == HF_STEPS:
            break
        # conjugate gradient on (H + damping I) d = g, from d = 0
        d = torch.zeros_like(g)
        r = g.clone()
        p = r.clone()
        rr = (r * r).sum()
        for _ in range(HF_CG_ITERS):
            Ap = hvp(theta, p) + damping * p
            pAp = (p * Ap).sum()
            if pAp <= 0:                                                    # negative curvature: stop
                break
            alpha = rr / pAp
            d = d + alpha * p
            r = r - alpha * Ap
            rr_new = (r * r).sum()
            if rr_new.sqrt() < 1e-10:
                break
            p = r + (rr_new / rr) * p
            rr = rr_new
        # Levenberg-Marquardt: keep the step if it lowers the loss and trust the model more (halve
        # the damping); otherwise stay and damp more
        with torch.no_grad():
            if loss_fn(theta - d) < loss:
                theta = theta - d
                damping = damping / 2
            else:
                damping = damping * 4
    return {"steps": rows, "theta": theta.tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object with every number")
    args = ap.parse_args()
    result = {"newton": newton(), "gp": critic_run(10.0), "no_gp": critic_run(0.0), "hessian_free": hessian_free()}
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
    print("Hessian-free Newton, tanh MLP (%d points, %d hidden, CG %d iterations)" % (HF_POINTS, HF_HIDDEN, HF_CG_ITERS))
    for r in result["hessian_free"]["steps"]:
        print("step %2d  loss %.12f  |grad| %.3e  damping %g" % (r["step"], r["loss"], r["grad_norm"], r["damping"]))


if __name__ == "__main__":
    main()
