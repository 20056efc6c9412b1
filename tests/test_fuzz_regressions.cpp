// Regression tests for what the public-API fuzzer (tests/fuzz/api_fuzzer.cpp) found: each is the
// minimized crashing input (also in tests/fuzz/api_corpus/, named after the test) decoded into
// plain ag calls. The contract is the fuzzer's: a call returns a value or throws a std::exception;
// where PyTorch accepts the call the test expects PyTorch's value instead (the comments say what
// PyTorch does). Several were undefined behaviour (a float converted to an integer out of range, a
// signed overflow, an offset added to a null pointer) that happens to give a plausible value
// without sanitizers: those fail in the ASan + UBSan build (tools/test_all.sh stage 3), which
// aborts on the report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "ag/ag.h"

namespace {

using ag::Tensor;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// api_corpus/ArangeNonFiniteOrHugeEndThrows: arange(1e308) converted ceil(1e308) to int64 (UB).
// PyTorch: torch.arange(float('inf')) raises "unsupported range: 0 -> inf" (also for NaN), and
// torch.arange(1e308) "invalid size, possible overflow?".
TEST(FuzzRegression, ArangeNonFiniteOrHugeEndThrows) {
  EXPECT_THROW(ag::arange(1e308), std::exception);
  EXPECT_THROW(ag::arange(kInf), std::exception);
  EXPECT_THROW(ag::arange(kNaN), std::exception);
  EXPECT_THROW(ag::arange(0.0, 9.3e18, 1.0), std::exception);
  EXPECT_THROW(ag::arange(-kInf, 0.0, 1.0), std::exception);
}

// api_corpus/ArangeBoolThrows: arange(1e-310, 1e10, 7, kBool) wrote 259 into a bool (uint8: UB).
// PyTorch: torch.arange(0, 300, dtype=torch.bool) raises '"arange_cpu" not implemented for 'Bool''.
TEST(FuzzRegression, ArangeBoolThrows) {
  EXPECT_THROW(ag::arange(0.0, 300.0, 1.0, ag::kBool), std::exception);
  EXPECT_THROW(ag::arange(0.0, 2.0, 1.0, ag::kBool), std::exception);
}

// api_corpus/FullBoolWithOutOfRangeValueIsTrue: full({}, inf, kBool) converted inf to uint8 (UB).
// PyTorch: converting a number to bool cannot overflow (c10::checked_convert skips bool): any
// nonzero value is True, so torch.full((), float('inf'), dtype=torch.bool) is tensor(True), as
// are -9.3e18 and 2.5 (stored as 1, not 2).
TEST(FuzzRegression, FullBoolWithOutOfRangeValueIsTrue) {
  for (double v : {kInf, -kInf, -9.3e18, 1e308, 2.5, 259.0}) {
    const Tensor t = ag::full({2}, v, ag::kBool);
    EXPECT_EQ(t.to(ag::kFloat32).to_vector<double>(), (std::vector<double>{1.0, 1.0})) << v;
  }
  EXPECT_EQ(ag::full({}, kNaN, ag::kBool).to(ag::kInt64).item(), 1.0);  // NaN != 0: True
  Tensor z = ag::zeros({3}, ag::kBool);
  z.fill_(-9.3e18);
  EXPECT_EQ(z.to(ag::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
}

// api_corpus/FullInt64WithOutOfRangeValueThrows: full / fill_ converted 1e308 to int64 (UB).
// PyTorch: torch.full((2,), 1e308, dtype=torch.int64) raises "value cannot be converted to type
// int64_t without overflow" (c10::checked_convert), as do inf, NaN and 9.3e18 (> INT64_MAX).
TEST(FuzzRegression, FullInt64WithOutOfRangeValueThrows) {
  for (double v : {1e308, kInf, -kInf, kNaN, 9.3e18, -9.3e18}) {
    EXPECT_THROW(ag::full({2}, v, ag::kInt64), std::exception) << v;
    Tensor z = ag::zeros({2}, ag::kInt64);
    EXPECT_THROW(z.fill_(v), std::exception) << v;
    EXPECT_EQ(z.to_vector<int64_t>(), (std::vector<int64_t>{0, 0})) << "nothing written when it throws";
  }
  EXPECT_EQ(ag::full({1}, -9.2e18, ag::kInt64).item(), -9.2e18);  // in range: fine
}

// api_corpus/TensorLiteralOutOfRangeToInt64Throws: tensor({0.0, 1e308, 0.0}, kInt64) and
// tensor(std::vector<double>{0, 0, 0, 0, NaN}, kInt64) converted out-of-range doubles to int64 (UB).
// PyTorch (Python 3.10+): torch.tensor([0., 1e308, 0.], dtype=torch.int64) raises "value cannot
// be converted to type int64 without overflow" (a float is converted with c10::checked_convert);
// likewise NaN and inf. An in-range float is truncated: torch.tensor([2.7], dtype=torch.int64) is [2].
TEST(FuzzRegression, TensorLiteralOutOfRangeToInt64Throws) {
  EXPECT_THROW(ag::tensor({0.0, 1e308, 0.0}, ag::kInt64), std::exception);
  EXPECT_THROW(ag::tensor({kInf}, ag::kInt64), std::exception);
  EXPECT_THROW(ag::tensor(std::vector<double>{0, 0, 0, 0, kNaN}, ag::kInt64), std::exception);
  EXPECT_THROW(ag::tensor(std::vector<double>{-9.3e18}, ag::kInt64), std::exception);
  EXPECT_EQ(ag::tensor({2.7}, ag::kInt64).item(), 2.0);
}

// api_corpus/LinspaceInt64OutOfRangeThrows: linspace(9.3e18, 0, 4, kInt64) converted 9.3e18 to
// int64 (UB). PyTorch: torch.linspace(9.3e18, 0, 4, dtype=torch.int64) raises "value cannot be
// converted to type int64_t without overflow" (the start is converted to the dtype first).
TEST(FuzzRegression, LinspaceInt64OutOfRangeThrows) {
  EXPECT_THROW(ag::linspace(9.3e18, 0, 4, ag::kInt64), std::exception);
  EXPECT_THROW(ag::linspace(0, kInf, 4, ag::kInt64), std::exception);
  EXPECT_THROW(ag::linspace(kNaN, 0, 2, ag::kInt64), std::exception);
}

// api_corpus/ToInt64OfOutOfRangeFloatIsInt64Min: full({}, -9.3e18).to(kInt64) converted a float out
// of int64's range (UB in C++). PyTorch accepts it: on x86 CPUs the conversion (cvttss2si) gives
// INT64_MIN for every value out of range, NaN and +-inf included, so
// torch.tensor([-9.3e18, float('inf'), float('nan')]).to(torch.int64) is [INT64_MIN] * 3.
TEST(FuzzRegression, ToInt64OfOutOfRangeFloatIsInt64Min) {
  const auto m = static_cast<double>(kMin);
  EXPECT_EQ(ag::full({}, -9.3e18).to(ag::kInt64).item(), m);
  EXPECT_EQ(ag::tensor({-9.3e18, 9.3e18, kInf, -kInf, kNaN}, ag::kFloat64).to(ag::kInt64).to_vector<double>(),
            (std::vector<double>{m, m, m, m, m}));
  EXPECT_EQ(ag::tensor({1e30f}).to(ag::kInt64).item(), m);
}

// api_corpus/MaskedFillOutOfRangeValue: masked_fill_ of a bool tensor with inf converted inf to
// uint8 (UB). PyTorch: a bool target takes any nonzero value as True (no overflow check for
// bool), so torch.zeros(2, dtype=torch.bool).masked_fill_(mask, float('inf')) is [True, True];
// an int64 target with 1e308 raises "value cannot be converted to type int64_t without overflow".
TEST(FuzzRegression, MaskedFillOutOfRangeValue) {
  const Tensor mask = ag::ones({2}, ag::kBool);
  Tensor b = ag::zeros({2}, ag::kBool);
  b.masked_fill_(mask, kInf);
  EXPECT_EQ(b.to(ag::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ag::masked_fill(ag::zeros({2}, ag::kBool), mask, -9.3e18).to(ag::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 1}));
  Tensor e = ag::zeros({0, 0}, ag::kBool);  // the fuzzer's input: an empty tensor, still converted
  EXPECT_NO_THROW(e.masked_fill_(ag::zeros({0, 0}, ag::kBool), kInf));
  Tensor i = ag::zeros({2}, ag::kInt64);
  EXPECT_THROW(i.masked_fill_(mask, 1e308), std::exception);
  EXPECT_THROW(ag::masked_fill(i, mask, kNaN), std::exception);
}

// api_corpus/ShapeWithZeroDimWhoseProductOverflowsThrows: zeros({INT64_MAX, 3, 0, 0}) was accepted
// (a zero dim makes numel 0), then Size::numel overflowed on it (UB) in fill_, rand, randn.
// PyTorch multiplies the sizes in order in uint64 with a sticky overflow flag
// (computeStorageNbytesContiguous / c10::safe_multiplies_u64): an overflow before the zero raises
// "Storage size calculation overflowed with sizes=[9223372036854775807, 3, 0, 0]"; with the zero
// first the product stays 0 and the (empty) tensor is made.
TEST(FuzzRegression, ShapeWithZeroDimWhoseProductOverflowsThrows) {
  EXPECT_THROW(ag::zeros({kMax, 3, 0, 0}), std::exception);
  EXPECT_THROW(ag::ones({kMax, 3, 0}), std::exception);
  EXPECT_THROW(ag::empty({int64_t{1} << 32, int64_t{1} << 32, 0}), std::exception);
  EXPECT_THROW(ag::randn({kMax, 7, 0, 0}), std::exception);
  EXPECT_THROW(ag::rand({int64_t{1} << 32, int64_t{1} << 32, 0}), std::exception);
  EXPECT_THROW(ag::full({kMax, 2, 2, 0}, 1.0), std::exception);
  // api_corpus/ShapeWithZeroDimWhoseProductOverflowsThrows_repeat: repeat's output shape
  // [2^31, 5 * 2^31, 0, 0] (PyTorch: the same "Storage size calculation overflowed")
  EXPECT_THROW(ag::zeros({5, 0, 0}).repeat({int64_t{1} << 31, int64_t{1} << 31, 0, 0}), std::exception);
  const Tensor ok = ag::zeros({0, 3, kMax});
  EXPECT_EQ(ok.numel(), 0);
  EXPECT_EQ(ok.sum().item(), 0.0);
}

// api_corpus/FromVectorOverflowingShapeThrows: from_vector(4 values, {2^62, 2^62, 0, 0}) and
// from_vector(2 values, {INT64_MIN, INT64_MIN}) computed Size::numel of the unchecked shape (signed
// overflow, UB). PyTorch has no from_vector; torch.tensor(values).view(shape) raises for either
// shape (negative dim; an overflowing or mismatched element count).
TEST(FuzzRegression, FromVectorOverflowingShapeThrows) {
  EXPECT_THROW(ag::from_vector(std::vector<int64_t>(4, 1), {int64_t{1} << 62, int64_t{1} << 62, 0, 0}), std::exception);
  EXPECT_THROW(ag::from_vector(std::vector<double>(2, 1.5), {kMin, kMin}), std::exception);
  EXPECT_THROW(ag::from_vector(std::vector<float>(2, 1.5f), {kMax, 2}), std::exception);
  EXPECT_THROW(ag::from_vector(std::vector<double>{}, {kMax, 3, 0}), std::exception);
}

// api_corpus/EmptyViewWithOffsetIsUsable: a view of an empty tensor at a nonzero offset
// (zeros({6, 0, 0, 0}).select(0, -3), zeros({0, 2}).narrow(1, 1, 1), zeros({2^31, 0})[1]) has a null
// storage, and the kernels added the offset to the null pointer (UB) in add_, neg and x[i] = v.
// PyTorch: TensorImpl::data() returns nullptr for an empty tensor ("computing an offset into an
// empty tensor would be UB"), and every op returns an empty result.
TEST(FuzzRegression, EmptyViewWithOffsetIsUsable) {
  Tensor s = ag::zeros({6, 0, 0, 0}).select(0, -3);
  EXPECT_NO_THROW(s.add_(s, 0.0));
  EXPECT_NO_THROW(s.mul_(s));
  EXPECT_EQ(s.numel(), 0);
  const Tensor n = ag::zeros({0, 2}).narrow(1, 1, 1);
  EXPECT_EQ((-n).numel(), 0);
  EXPECT_EQ(n.logical_not().numel(), 0);
  EXPECT_EQ((n + 1.0).numel(), 0);
  EXPECT_EQ(n.sum().item(), 0.0);
  const Tensor big = ag::zeros({int64_t{1} << 31, 0});
  EXPECT_NO_THROW(big[1] = 0.0);
  EXPECT_NO_THROW(big[1] = ag::ones({0}));
  EXPECT_EQ(big[1].to_vector<double>().size(), 0u);
}

// api_corpus/SplitSizesOverflowThrows: split({2^62, 2^62}, 0) summed the sizes in int64 (signed
// overflow, UB). PyTorch: torch.zeros(6).split([2**62, 2**62]) raises "split_with_sizes expects
// split_sizes to sum exactly to 6".
TEST(FuzzRegression, SplitSizesOverflowThrows) {
  const Tensor x = ag::zeros({6});
  EXPECT_THROW(x.split(std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62}, 0), std::exception);
  EXPECT_THROW(x.split(std::vector<int64_t>{kMax, kMax, 8}, 0), std::exception);
  EXPECT_THROW(ag::zeros({6, 0, 0, 0}).split(std::vector<int64_t>{int64_t{1} << 62, int64_t{1} << 62}, 0),
               std::exception);
}

// api_corpus/VarWithHugeCorrection: var(zeros({}), {}, correction INT64_MIN) computed n - correction
// in int64 (signed overflow, UB). PyTorch takes the correction as a number and divides by
// max(0, n - correction) in floating point: torch.var(torch.zeros(()), dim=[],
// correction=-2**63) is tensor(0.) (0 / 9.2e18); with correction=2**63-1 the divisor is 0 and the
// result NaN (with a "degrees of freedom <= 0" warning).
TEST(FuzzRegression, VarWithHugeCorrection) {
  EXPECT_EQ(ag::var(ag::zeros({}), std::optional<ag::DimVector>(ag::DimVector{}), std::optional<int64_t>(kMin)).item(), 0.0);
  EXPECT_EQ(ag::std(ag::ones({3}), std::optional<ag::DimVector>(ag::DimVector{0}), std::optional<int64_t>(kMin)).item(), 0.0);
  EXPECT_TRUE(std::isnan(ag::var(ag::ones({3}), std::optional<ag::DimVector>(), std::optional<int64_t>(kMax)).item()));
}

// api_corpus/InPlaceOnViewWithItsBaseAsOperandDoesNotLeak: w = Linear(0, 0, false).weight; b = -w;
// v = b.slice(0, 0, 0, 1); v.mul_(b) leaked b's graph (LeakSanitizer: the TensorImpl that
// readable_operand / value_before made and the node that holds it keep each other alive). PyTorch
// frees everything when the handles go (a saved output is held without its grad_fn, no cycle).
TEST(FuzzRegression, InPlaceOnViewWithItsBaseAsOperandDoesNotLeak) {
  std::weak_ptr<ag::TensorImpl> base, view;
  {
    ag::nn::Linear lin(0, 0, false);
    const Tensor b = -lin.weight;
    Tensor v = b.slice(0, 0, 0, 1);
    v.mul_(b);
    base = b.impl_ptr();
    view = v.impl_ptr();
  }
  EXPECT_TRUE(base.expired());
  EXPECT_TRUE(view.expired());
}

// api_corpus/SavedInputModifiedInPlaceDoesNotLeak: w = Linear(2, 1).weight; s = zeros_like(w);
// s.add_(w); l = s.log(); s.add_(l) leaked the graph. log saved s itself (history and all); the
// add_ then gave s a grad_fn whose edge leads to log's node, which held s: a cycle. PyTorch's
// SavedVariable keeps the data and the grad_fn it had apart, so nothing points back; ag now saves
// a non-leaf as a new alias with the history it had when saved. Backward through the saved
// tensor still reports the in-place change (its storage version moved).
TEST(FuzzRegression, SavedInputModifiedInPlaceDoesNotLeak) {
  std::weak_ptr<ag::Node> log_node;
  std::weak_ptr<ag::TensorImpl> s_impl;
  {
    ag::nn::Linear lin(2, 1);
    Tensor s = ag::zeros_like(lin.weight);
    s.add_(lin.weight, 0.5);
    const Tensor l = s.log();
    s.add_(l, 0.5);
    log_node = l.grad_fn();
    s_impl = s.impl_ptr();
    EXPECT_THROW(s.sum().backward(), std::runtime_error);  // log's saved input was modified
  }
  EXPECT_TRUE(log_node.expired());
  EXPECT_TRUE(s_impl.expired());
  // A tensor that did not require grad when saved, later given a history by an in-place op.
  std::weak_ptr<ag::Node> mul_node;
  {
    const Tensor a = ag::ones({2}, ag::Options().requires_grad(true));
    Tensor b = ag::zeros({2});
    const Tensor m = a * b;  // saves b
    b.add_(m);               // b's history now leads to m's node
    mul_node = m.grad_fn();
  }
  EXPECT_TRUE(mul_node.expired());
  // A view saved, then its base written in place with a value computed from the view: the saved
  // view kept its base (and so the base's new history) alive.
  std::weak_ptr<ag::TensorImpl> base_impl;
  {
    const Tensor w = ag::ones({2}, ag::Options().requires_grad(true));
    Tensor t = w * 1.0;
    const Tensor l = t.narrow(0, 0, 1).log();  // saves the view
    t.add_(l.expand({2}));
    base_impl = t.impl_ptr();
  }
  EXPECT_TRUE(base_impl.expired());
}

// api_corpus/GradOfAnotherInputWithItselfAsGradOutputDoesNotLeak: x = randn({2, 3, 4}, requires
// grad); s = x.sum({1}, true); v = x.select(1, 0); grad({v}, {s}, {v}, create_graph=true,
// allow_unused=true) left v as the pending gradient of v's own node (not needed: s is not below
// it), a cycle. The engine now drops every pending gradient a recording pass leaves.
TEST(FuzzRegression, GradOfAnotherInputWithItselfAsGradOutputDoesNotLeak) {
  std::weak_ptr<ag::Node> node;
  {
    const Tensor x = ag::randn({2, 3, 4}, ag::Options().requires_grad(true));
    const Tensor s = x.sum({1}, true);
    const Tensor v = x.select(1, 0);
    const std::vector<Tensor> g = ag::grad({v}, {s}, {v}, std::nullopt, true, true);
    ASSERT_EQ(g.size(), 1u);
    EXPECT_FALSE(g[0].defined());  // unused
    node = v.grad_fn();
  }
  EXPECT_TRUE(node.expired());
}

// api_corpus/BackwardWithGradientThatHasHistoryDoesNotLeak: x = zeros({}, float64, requires
// grad); y = kl_div(x, x, "batchmean"); y.backward(y) stored in x.grad a view of y (SumBackward
// expands the gradient), which held y, its graph and so x: a cycle. Without create_graph PyTorch
// records nothing in backward, and x.grad has no history; ag now detaches such a gradient.
TEST(FuzzRegression, BackwardWithGradientThatHasHistoryDoesNotLeak) {
  std::weak_ptr<ag::Node> root;
  std::weak_ptr<ag::TensorImpl> x_impl;
  {
    const Tensor x = ag::zeros({}, ag::Options(ag::kFloat64).requires_grad(true));
    const Tensor y = ag::kl_div(x, x, "batchmean", false);
    y.backward(y);
    EXPECT_FALSE(x.grad().requires_grad());
    EXPECT_FALSE(x.grad().grad_fn());
    EXPECT_THROW(y.backward(y), std::runtime_error);  // its saved tensors were freed
    root = y.grad_fn();
    x_impl = x.impl_ptr();
  }
  EXPECT_TRUE(root.expired());
  EXPECT_TRUE(x_impl.expired());
  // The given gradient is a leaf that requires grad: x.grad is not that leaf (PyTorch: x.grad
  // does not require grad), and the value passes through.
  const Tensor x = ag::ones({2}, ag::Options().requires_grad(true));
  const Tensor g = ag::full({2}, 3.0, ag::Options().requires_grad(true));
  (x * 1.0).backward(g);
  EXPECT_FALSE(x.grad().requires_grad());
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3.0, 3.0}));
}

}  // namespace

// api_corpus/EmptyTensorWithHugeDimsIsUsable: zeros({0, 2^62, 2}) is a valid empty tensor (its
// numel, 0 * 2^62 * 2 in order, fits), but clone() walks its dims in memory order, {2^62, 2, 0},
// and Size::numel overflowed there (UB) before reaching the 0. PyTorch: clone, sum over dims and
// index_select of such a tensor give empty tensors; flattening the huge dims raises.
namespace {
TEST(FuzzRegression, EmptyTensorWithHugeDimsIsUsable) {
  const Tensor e = ag::zeros({0, int64_t{1} << 62, 2});
  EXPECT_EQ(e.clone().numel(), 0);
  EXPECT_EQ(e.contiguous().numel(), 0);
  EXPECT_EQ(e.to(ag::kFloat64).numel(), 0);
  EXPECT_EQ(e.sum(ag::DimVector{1, 2}).shape(), (ag::Size{0}));
  EXPECT_EQ(e.mean(ag::DimVector{1, 2}).numel(), 0);
  EXPECT_EQ(e.index_select(2, ag::tensor({int64_t{1}})).numel(), 0);
  EXPECT_THROW(e.flatten(1, 2), std::exception);
  // api_corpus/EmptyTensorWithHugeDimsSlices: a view's offset, index * stride, overflowed (UB)
  const Tensor f = ag::zeros({3, 0, int64_t{1} << 62});
  EXPECT_EQ(f.slice(0, 2, 3).shape(), (ag::Size{1, 0, int64_t{1} << 62}));
  EXPECT_EQ(f.select(0, 2).numel(), 0);
  EXPECT_EQ(f[2].unsqueeze(0).numel(), 0);
  EXPECT_EQ(f.slice(2, 1, std::nullopt, 3).numel(), 0);
  // api_corpus/EmptyTensorWithHugeDimsAssigns: x[1] = 2.5 added the wrapped offset to the data
  // pointer (UB); an empty view now keeps its input's offset
  Tensor g = ag::zeros({int64_t{1} << 31, 0, int64_t{1} << 31});
  EXPECT_NO_THROW(g[1] = 2.5);
  EXPECT_EQ(g[int64_t{1} << 30].storage_offset(), 0);
  // api_corpus/EmptyTensorWithHugeDimsTriu: triu's rows * cols overflowed (UB)
  EXPECT_EQ(ag::zeros({0, int64_t{1} << 62, 2}).triu().numel(), 0);
  EXPECT_EQ(ag::zeros({0, int64_t{1} << 62, 2}).tril(1).numel(), 0);
  // api_corpus/EmptyTensorWithHugeDimsIndexSelect: index_select of a (2^31, 0) tensor along dim 1
  // with an empty index walked its 2^31 empty rows (19 s under the fuzzer's sanitizers), and so
  // did its backward's scatter
  Tensor h = ag::zeros({int64_t{1} << 31, 0}).requires_grad_();
  Tensor hs = h.index_select(1, ag::from_vector(std::vector<int64_t>{}, {0}));
  EXPECT_EQ(hs.shape(), (ag::Size{int64_t{1} << 31, 0}));
  hs.sum().backward();
  EXPECT_EQ(h.grad().shape(), h.shape());
  // (found probing every reduction with such shapes) prod's backward over 0 rows of 2^40
  // elements allocated its 2^40-element scratch row
  Tensor p = ag::zeros({0, int64_t{1} << 40}).requires_grad_();
  ag::prod(p, 1).sum().backward();
  EXPECT_EQ(p.grad().shape(), p.shape());
}
}  // namespace

// api_corpus/BackwardWithGradientOfAnotherDtype: square(x) for a float32 0-dim x, backward with a
// float64 gradient: the rule read the float32 saved x as doubles (heap-buffer-overflow). PyTorch
// casts a given gradient to its output's dtype, an int64 or bool one too.
namespace {
TEST(FuzzRegression, BackwardWithGradientOfAnotherDtype) {
  Tensor x = ag::tensor({1.5, 2.0}).requires_grad_();
  for (const Tensor& g : {ag::tensor({1.0, 2.0}, ag::kFloat64), ag::tensor({1, 2}), ag::tensor({true, false})}) {
    ag::square(x).backward(g);
    EXPECT_EQ(x.grad().dtype(), ag::kFloat32);
    const std::vector<double> want = g.dtype() == ag::kBool ? std::vector<double>{3, 0} : std::vector<double>{3, 8};
    EXPECT_EQ(x.grad().to_vector<double>(), want);
    x.set_grad({});
  }
  const Tensor s = ag::randn({}).requires_grad_();
  ag::square(s).backward(ag::randn({}, ag::kFloat64));
  EXPECT_EQ(s.grad().dtype(), ag::kFloat32);
  const std::vector<Tensor> d = ag::grad({x * x}, {x}, {ag::tensor({1.0, 2.0}, ag::kFloat64)});
  EXPECT_EQ(d[0].dtype(), ag::kFloat32);
  EXPECT_EQ(d[0].to_vector<double>(), (std::vector<double>{3, 8}));
}
}  // namespace

// api_corpus/LeafViewThatRequiresGradDoesNotLeak: v = x[:, 1:3] of a plain x, v.requires_grad_(),
// then an in-place op on a view of v gave x (v's base) a history ending at v: a reference cycle
// (v -> base x -> CopySlices -> ... -> v). PyTorch raises "a view of a leaf Variable that requires
// grad is being used in an in-place operation" there; with x.add_(v.sum() * 2) it keeps the cycle.
namespace {
TEST(FuzzRegression, LeafViewThatRequiresGradDoesNotLeak) {
  const int64_t baseline = ag::live_nodes();
  {
    Tensor x = ag::randn({2, 7, 3});
    Tensor v = x.slice(1, 1, 3);
    v.requires_grad_();
    Tensor v2 = v.slice(1, 0, 2);
    EXPECT_THROW(v2.mul_(0.5), std::runtime_error);
    x.add_(v.sum() * 2.0);  // x now has a history that leads to v
    EXPECT_FALSE(x.is_leaf());
    x.sum().backward();
    EXPECT_EQ(v.grad().sum().item(), 2.0 * 42 * 12);  // each of v's 12 elements reaches 42 of x, twice
  }
  EXPECT_EQ(ag::live_nodes(), baseline);
}
}  // namespace
