"""Prints the PyTorch 1.13 numbers tests/test_forward_ad.cpp quotes in
ForwardAdReview.InPlaceOpsInAGraphComposeBothModesAsTheirOutOfPlaceForms: an in-place op on a
tensor in a graph whose operands are dual tensors, differentiated in both orders.

    /usr/bin/python3 tools/golden/inplace_dual_in_graph.py
"""
import torch
import torch.autograd.forward_ad as fwAD


def second(f, reverse_over_forward):
    """d/d(x, z) of sum(w * f(x, z)) pushed forward along (u, uz), or d/d(x, z) of its tangent."""
    x0 = torch.tensor([0.3, -1.2, 0.8], dtype=torch.float64, requires_grad=True)
    z0 = torch.tensor([1.1, 0.4, -0.6], dtype=torch.float64, requires_grad=True)
    w = torch.tensor([0.9, -0.1, 0.4], dtype=torch.float64)
    with fwAD.dual_level():
        x = fwAD.make_dual(x0, torch.tensor([1.0, 0.5, -2.0], dtype=torch.float64))
        z = fwAD.make_dual(z0, torch.tensor([0.2, -0.7, 1.3], dtype=torch.float64))
        y = (f(x, z) * w).sum()
        if reverse_over_forward:
            grads = torch.autograd.grad(fwAD.unpack_dual(y).tangent, (x0, z0), allow_unused=True)
            return [v for g in grads for v in (g if g is not None else torch.zeros(3)).tolist()]
        return [v for g in torch.autograd.grad(y, (x, z)) for v in fwAD.unpack_dual(g).tangent.tolist()]


def mul_(x, z):
    c = x * 1.0
    c.mul_(z)
    return c


def clamp_(x, z):
    c = x * z
    c.clamp_(-0.5, 0.5)
    return c * c


print("mul_, forward-over-reverse:  ", [round(v, 12) for v in second(mul_, False)])
print("clamp_, reverse-over-forward:", [round(v, 12) for v in second(clamp_, True)])
