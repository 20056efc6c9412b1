// Kernels of the binary elementwise ops and the comparisons (binary.cpp): one typed loop over
// operands broadcast to a shape, any strides, no history. The ops' rules (binary.cpp) are each
// one or two elementwise ops already, so they have no fast path of their own.
#pragma once

#include "autograd/tensor.h"

namespace ag::kernels {

enum class BinaryOp { Add, Sub, Mul, Div, Pow };
// "add", "sub", ...: the op's name in error messages
const char* op_name(BinaryOp op);
// out = a op b, a and b of dtype dt broadcast to shape; dt is floating point, or int64 for
// add, sub and mul.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, const Size& shape, DType dt);

// out = minimum(a, b) or maximum(a, b) (is_max), a and b of dtype dt (any) broadcast to shape;
// a NaN in either gives NaN.
Tensor min_max(bool is_max, const Tensor& a, const Tensor& b, const Size& shape, DType dt);
// out = cond ? a : b, cond bool, a and b of dtype dt, all three broadcast to shape.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, const Size& shape, DType dt);

enum class CompareOp { Gt, Lt, Ge, Le, Eq, Ne, And, Or };
// bool out = a cmp b, a and b of dtype dt broadcast to shape (And, Or: both nonzero, either one)
Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const Size& shape, DType dt);
// bool out = (t == 0)
Tensor logical_not(const Tensor& t);

}  // namespace ag::kernels
