// The whole autograd layer in one include: tensors, ops, the engine, gradcheck, the generator.
#pragma once

#include "autograd/dtype.h"
#include "autograd/functional.h"
#include "autograd/generator.h"
#include "autograd/gradcheck.h"
#include "autograd/graph.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "autograd/shape.h"
#include "autograd/tensor.h"
