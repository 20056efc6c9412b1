# -*- coding: utf-8 -*-
# makemore, part 2 (an MLP, after Bengio et al. 2003): a character-level language model that
# reads three characters and predicts the next, trained on a list of names, then sampled.
# examples/tutorials/makemore_mlp.cpp is its translation, line by line.
#
# Two changes from the lecture's notebook, both so that the C++ run can draw the same numbers:
#   - the words are shuffled with torch.randperm instead of Python's random.shuffle;
#   - data/names.txt is a list of 1546 names written for this repository (makemore's names.txt,
#     32033 names, is not shipped here), so the run is shorter: 10000 steps, the rate cut at 7000.
import os

import torch
import torch.nn.functional as F

# read in all the words
words = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'names.txt'), 'r').read().splitlines()
print(len(words), 'words; the first three:', words[0], words[1], words[2])

# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
vocab_size = len(itos)
print('vocabulary:', vocab_size, 'characters')

# build the dataset
block_size = 3  # context length: how many characters do we take to predict the next one?

def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append
    X = torch.tensor(X)
    Y = torch.tensor(Y)
    print('dataset:', X.shape[0], 'examples of', X.shape[1], 'characters')
    return X, Y

g = torch.Generator().manual_seed(42)
perm = torch.randperm(len(words), generator=g)
words = [words[i] for i in perm.tolist()]
n1 = int(0.8 * len(words))
n2 = int(0.9 * len(words))
Xtr, Ytr = build_dataset(words[:n1])     # 80%
Xdev, Ydev = build_dataset(words[n1:n2]) # 10%
Xte, Yte = build_dataset(words[n2:])     # 10%

# the model: a 10-dimensional embedding of each character, a hidden layer of 200 tanh units
g = torch.Generator().manual_seed(2147483647)  # for reproducibility
C = torch.randn((vocab_size, 10), generator=g)
W1 = torch.randn((30, 200), generator=g) * 0.2
b1 = torch.randn(200, generator=g) * 0.01
W2 = torch.randn((200, vocab_size), generator=g) * 0.01
b2 = torch.randn(vocab_size, generator=g) * 0
parameters = [C, W1, b1, W2, b2]
print('parameters:', sum(p.nelement() for p in parameters))  # number of parameters in total
for p in parameters:
    p.requires_grad = True

max_steps = 10000
batch_size = 32
for i in range(max_steps):

    # minibatch construct
    ix = torch.randint(0, Xtr.shape[0], (batch_size,), generator=g)

    # forward pass
    emb = C[Xtr[ix]]  # (32, 3, 10)
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (32, 200)
    logits = h @ W2 + b2  # (32, 27)
    loss = F.cross_entropy(logits, Ytr[ix])

    # backward pass
    for p in parameters:
        p.grad = None
    loss.backward()

    # update
    lr = 0.1 if i < 7000 else 0.01
    for p in parameters:
        p.data += -lr * p.grad

    # track stats
    if i % 500 == 0:
        print(i, loss.item())

# the loss on each split, with the final parameters
@torch.no_grad()  # this decorator disables gradient tracking
def split_loss(split):
    x, y = {
        'train': (Xtr, Ytr),
        'val': (Xdev, Ydev),
        'test': (Xte, Yte),
    }[split]
    emb = C[x]  # (N, block_size, n_embd)
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (N, 200)
    logits = h @ W2 + b2  # (N, vocab_size)
    loss = F.cross_entropy(logits, y)
    print(split, 'loss:', loss.item())

split_loss('train')
split_loss('val')

# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(20):

    out = []
    context = [0] * block_size  # initialize with all ...
    while True:
        emb = C[torch.tensor([context])]  # (1, block_size, n_embd)
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break

    print('sample:', ''.join(itos[i] for i in out))
