#!/usr/bin/python3
"""The steps of tests/consumer/main.cpp (the program tools/test_all.sh builds against an installed
ag) in PyTorch; writes tests/golden/consumer.txt, which that program must print exactly.
Run: /usr/bin/python3 tools/golden/consumer.py
"""
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "consumer.txt")


def main():
    lines = []
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    x = torch.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]])
    target = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    lines.append(str(lin))
    for step in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(lin(x), target)
        loss.backward()
        opt.step()
        lines.append(f"step {step} loss {str(loss.detach())}")
    lines.append("weight.grad")
    lines.append(str(lin.weight.grad))
    lines.append("weight")
    lines.append(str(lin.weight.detach()))
    with open(OUT, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
