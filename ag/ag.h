// The one header a program needs: tensors, ops and autograd, nn modules, optimizers and
// learning-rate schedulers, checkpoints, data parallelism (ag::dist).
//
//   #include <ag/ag.h>
//
// Installed, it is include/ag/ag.h beside include/ag/{autograd,nn,optim}/, and the lines below
// find those headers next to this file. In the source tree this file is ag/ag.h and the same
// lines find autograd/, nn/, optim/ through the repo root, which is on ag's include path.
// Every public header includes its neighbours by paths relative to itself, so it works in both.
#pragma once

#include "autograd/autograd.h"
#include "autograd/format.h"
#include "dist/dist.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/batchnorm.h"
#include "nn/checkpoint.h"
#include "nn/clip_grad.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
