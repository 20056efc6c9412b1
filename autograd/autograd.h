// The whole autograd layer in one include: tensors, ops, the engine, gradcheck, the generator.
#pragma once

#include "anomaly.h"
#include "dtype.h"
#include "forward_ad.h"
#include "func.h"
#include "function.h"
#include "functional.h"
#include "generator.h"
#include "gradcheck.h"
#include "graph.h"
#include "indexing.h"
#include "node.h"
#include "ops.h"
#include "shape.h"
#include "tape.h"
#include "tensor.h"
#include "threads.h"
