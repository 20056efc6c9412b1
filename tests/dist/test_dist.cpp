// ag::dist under mpirun (ctest runs this binary with 2 and with 3 ranks): the collectives on
// every dtype and odd sizes, views, errors that never hang; DistributedDataParallel's broadcast,
// gradient mean, buckets that split a gradient, unused parameters and mismatched models; and
// train_text --distributed equal to one process.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <ag/ag.h>

#include "train_text/trainer.h"

using namespace ag;
namespace dist = ag::dist;

namespace {

int R() { return dist::rank(); }
int N() { return dist::world_size(); }

// max |a - b| / max |b| (0 when both are all zeros)
double rel_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double d = 0, m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(x[i] - y[i]));
    m = std::max(m, std::abs(y[i]));
  }
  return m > 0 ? d / m : d;
}

// Same dtype, shape and values.
bool equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

// 0/1 values starting at (r mod 2): tell ranks apart in every dtype, bool included
Tensor parity(int64_t n, int r, DType dt) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>((i + r) % 2));
  return from_vector(v, {n}, kFloat64).to(dt);
}

}  // namespace

TEST(DistCollectives, AllReduceSumsEveryDtypeAndOddSizes) {
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    for (int64_t n : {0, 1, 1000003}) {
      SCOPED_TRACE(dtype_name(dt) + " n=" + std::to_string(n));
      Tensor t = (arange(static_cast<double>(n)) * (R() + 1)).to(dt);
      dist::all_reduce(t);
      const double factor = N() * (N() + 1) / 2.0;  // 1 + 2 + ... + N
      EXPECT_EQ(t.dtype(), dt);
      ASSERT_EQ(t.numel(), n);
      EXPECT_TRUE(equal(t, (arange(static_cast<double>(n)) * factor).to(dt)));
    }
  }
}

TEST(DistCollectives, ReduceOps) {
  const double r = R(), n = N();
  auto reduced = [&](dist::ReduceOp op) {
    Tensor t = from_vector(std::vector<double>{r + 1, -r, 2.0}, {3}, kFloat64);
    dist::all_reduce(t, op);
    return t.to_vector<double>();
  };
  EXPECT_EQ(reduced(dist::ReduceOp::MIN), (std::vector<double>{1, -(n - 1), 2}));
  EXPECT_EQ(reduced(dist::ReduceOp::MAX), (std::vector<double>{n, 0, 2}));
  EXPECT_EQ(reduced(dist::ReduceOp::PRODUCT), (std::vector<double>{std::tgamma(n + 1), 0, std::pow(2.0, n)}));
  const auto avg = reduced(dist::ReduceOp::AVG);
  EXPECT_DOUBLE_EQ(avg[0], (n + 1) / 2);
  EXPECT_DOUBLE_EQ(avg[1], -(n - 1) / 2);
  EXPECT_DOUBLE_EQ(avg[2], 2.0);
}

TEST(DistCollectives, NonContiguousViewsChangeOnlyTheirElements) {
  Tensor base = full({4, 6}, static_cast<double>(R() + 1), kFloat32);
  Tensor cols = base.narrow(1, 1, 3);  // strided: columns 1..3
  ASSERT_FALSE(cols.is_contiguous());
  dist::all_reduce(cols);
  const float sum = static_cast<float>(N() * (N() + 1) / 2);
  for (int64_t i = 0; i < 4; ++i) {
    for (int64_t j = 0; j < 6; ++j) {
      const float want = j >= 1 && j <= 3 ? sum : static_cast<float>(R() + 1);
      EXPECT_EQ(base[i][j].item(), want) << i << "," << j;
    }
  }
  Tensor m = arange(12.0).view({3, 4}) * (R() + 1);
  Tensor mt = m.t();
  dist::broadcast(mt, N() - 1);  // the last rank's values, through a transposed view
  EXPECT_TRUE(equal(m, arange(12.0).view({3, 4}) * N()));
}

TEST(DistCollectives, BroadcastEveryDtypeFromEveryRoot) {
  for (int root = 0; root < N(); ++root) {
    for (DType dt : {kFloat32, kFloat64, kInt64, kBool}) {
      SCOPED_TRACE(dtype_name(dt) + " root " + std::to_string(root));
      Tensor t = parity(7, R(), dt);
      dist::broadcast(t, root);
      EXPECT_TRUE(equal(t, parity(7, root, dt)));
    }
  }
}

TEST(DistCollectives, AsyncAllReduceAndBarrier) {
  Tensor t = full({1000}, 1.0, kFloat64);
  dist::Work w = dist::all_reduce_async(t, dist::ReduceOp::AVG);
  w.wait();
  EXPECT_TRUE(w.is_completed());
  EXPECT_TRUE(equal(t, full({1000}, 1.0, kFloat64)));
  dist::barrier();
}

// Each is refused on every rank before anything is sent, so no rank waits for another.
TEST(DistCollectives, BadCallsThrowOnEveryRankWithoutHanging) {
  Tensor i = arange(3.0).to(kInt64), b = ones({2}, kBool), f = zeros({4, 4});
  EXPECT_THROW(
      try { dist::all_reduce(i, dist::ReduceOp::AVG); } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("[dist::all_reduce] rank " + std::to_string(R()) + ": ReduceOp::AVG needs a floating"),
                  std::string::npos) << e.what();
        throw;
      },
      std::runtime_error);
  EXPECT_THROW(dist::all_reduce(b), std::runtime_error);
  EXPECT_THROW(dist::broadcast(f, N()), std::runtime_error);
  EXPECT_THROW(dist::broadcast(f, -1), std::runtime_error);
  Tensor ft = f.t();
  EXPECT_THROW(dist::all_reduce_async(ft), std::runtime_error);
  Tensor undefined;
  EXPECT_THROW(dist::all_reduce(undefined), std::logic_error);
  EXPECT_THROW(dist::set_timeout(std::chrono::milliseconds(0)), std::invalid_argument);
  dist::barrier();  // everyone is still in step
}

namespace {

// A two-layer net; with `use_b` false its second branch gets no gradient.
struct Net : nn::Module {
  explicit Net(int64_t hidden = 7) : Module("Net") {
    a = register_module("a", std::make_shared<nn::Linear>(5, hidden));
    b = register_module("b", std::make_shared<nn::Linear>(hidden, 3));
    c = register_module("c", std::make_shared<nn::Linear>(hidden, 3));
    to(kFloat64);
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = tanh(a->forward(x));
    return use_c ? b->forward(h) + c->forward(h) : b->forward(h);
  }
  std::shared_ptr<nn::Linear> a, b, c;
  bool use_c = true;
};

Tensor rank_input() {
  manual_seed(100 + static_cast<uint64_t>(R()));
  return randn({4, 5}, kFloat64);
}

// The gradients one rank computes without DDP on the same parameters, averaged across ranks.
std::vector<Tensor> reference_grads(const Net& trained, bool use_c) {
  Net ref;
  ref.load_state_dict(trained.state_dict());
  ref.use_c = use_c;
  ref.forward(rank_input()).pow(2.0).sum().backward();
  std::vector<Tensor> out;
  for (const Tensor& p : ref.parameters()) {
    Tensor g = p.grad().defined() ? p.grad() : zeros_like(p);
    dist::all_reduce(g, dist::ReduceOp::AVG);
    out.push_back(g);
  }
  return out;
}

}  // namespace

TEST(DistributedDataParallel, BroadcastsRankZerosParametersAndAveragesGradients) {
  for (double cap_mb : {1.0, 40.0 / (1024 * 1024)}) {  // one bucket; 5-element buckets
    SCOPED_TRACE("bucket_cap_mb " + std::to_string(cap_mb));
    manual_seed(static_cast<uint64_t>(R()));  // different initial values on every rank
    Net net;
    dist::DistributedDataParallel ddp(net, {.bucket_cap_mb = cap_mb});
    for (const Tensor& p : net.parameters()) {  // rank 0's values everywhere
      Tensor lo = p.detach().clone(), hi = p.detach().clone();
      dist::all_reduce(lo, dist::ReduceOp::MIN);
      dist::all_reduce(hi, dist::ReduceOp::MAX);
      EXPECT_TRUE(equal(lo, hi));
    }
    // 90 float64 elements in 5-element buckets: c.bias (3 elements, first: reverse order) fills
    // part of the first, so every weight spans several buckets
    if (cap_mb < 1) EXPECT_EQ(ddp.bucket_count(), 18);
    else EXPECT_EQ(ddp.bucket_count(), 1);
    EXPECT_EQ(ddp.parameters().size(), 6u);  // the wrapped module's, as PyTorch's DDP
    EXPECT_EQ(ddp.named_parameters()[0].first, "module.a.weight");
    const std::vector<Tensor> want = reference_grads(net, true);
    for (int step = 0; step < 2; ++step) {  // a second backward sees fresh buckets
      net.zero_grad(true);
      ddp.forward(rank_input()).pow(2.0).sum().backward();
      const auto ps = net.parameters();
      for (std::size_t k = 0; k < ps.size(); ++k) {
        ASSERT_TRUE(ps[k].grad().defined());
        EXPECT_LE(rel_diff(ps[k].grad(), want[k]), 1e-15) << net.named_parameters()[k].first;
      }
    }
  }
}

TEST(DistributedDataParallel, AParameterWithoutGradientOnARankCountsAsZero) {
  manual_seed(3);
  Net net;
  net.use_c = R() != 1;  // rank 1 leaves branch c out
  dist::DistributedDataParallel ddp(net, {.bucket_cap_mb = 100.0 / (1024 * 1024)});
  const std::vector<Tensor> want = reference_grads(net, net.use_c);
  ddp.forward(rank_input()).pow(2.0).sum().backward();
  const auto ps = net.parameters();
  for (std::size_t k = 0; k < ps.size(); ++k) {
    ASSERT_TRUE(ps[k].grad().defined());
    EXPECT_LE(rel_diff(ps[k].grad(), want[k]), 1e-15) << net.named_parameters()[k].first;
  }
}

TEST(DistributedDataParallel, RefusesModelsThatDifferAcrossRanksOnEveryRank) {
  const std::string r1 = "the model on rank(s) 1 differs from rank 0's";
  {
    Net net(R() == 1 ? 8 : 7);  // other shapes on rank 1
    try {
      dist::DistributedDataParallel ddp(net);
      ADD_FAILURE() << "no error";
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(r1), std::string::npos) << m;
      if (R() == 1) EXPECT_NE(m.find("it has parameter a.weight torch.float64 [8, 5] where rank 0 has parameter a.weight torch.float64 [7, 5]"), std::string::npos) << m;
    }
  }
  {
    Net net;
    if (R() == 1) net.register_buffer("extra", zeros({2}));  // one more tensor on rank 1
    EXPECT_THROW(dist::DistributedDataParallel ddp(net), std::runtime_error);
  }
  dist::barrier();
}

namespace {

// train_text for 20 steps on a small model, distributed or alone, its blocks checkpointed or not
train_text::Report train(bool distributed, const std::string& dtype, int64_t batch, bool checkpoint = false) {
  train_text::Config c;
  c.file = AG_TRAIN_TEXT_DEFAULT;
  c.steps = 20;
  c.batch = batch;
  c.context = 16;
  c.dim = 32;
  c.heads = 4;
  c.layers = 2;
  c.sample = 0;
  c.dtype = dtype;
  c.distributed = distributed;
  c.checkpoint = checkpoint;
  return train_text::run(c);
}

}  // namespace

// The equivalence: 2 ranks x global batch 8 (3 ranks: 9) equal 1 process x the same batch
// after 20 steps, float64 within 1e-12 relative, float32 within 1e-5.
TEST(DistTrainText, RanksTakeTheStepsOneProcessTakes) {
  const int64_t batch = N() == 3 ? 9 : 4 * N();
  for (const auto& [dtype, tol] : {std::pair<std::string, double>{"float64", 1e-12}, {"float32", 1e-5}}) {
    SCOPED_TRACE(dtype);
    const train_text::Report d = train(true, dtype, batch), one = train(false, dtype, batch);
    EXPECT_EQ(d.world_size, N());
    ASSERT_EQ(d.final_state.size(), one.final_state.size());
    double worst = 0;
    for (std::size_t k = 0; k < d.final_state.size(); ++k) {
      ASSERT_EQ(d.final_state[k].first, one.final_state[k].first);
      worst = std::max(worst, rel_diff(d.final_state[k].second, one.final_state[k].second));
    }
    EXPECT_LE(worst, tol);
    EXPECT_NEAR(d.final_train_loss, one.final_train_loss, tol * 10);
    EXPECT_NEAR(d.final_val_loss, one.final_val_loss, tol * 10);
    EXPECT_LT(d.final_val_loss, d.first_val_loss);  // it trained
    if (R() == 0) std::printf("%s: %d ranks, parameters differ by %.3g relative to one process\n", dtype.c_str(), N(), worst);
  }
}

// Activation checkpointing through DistributedDataParallel changes no bit: the blocks run again
// inside backward while the gradient buckets are all-reduced, and give the same gradients.
TEST(DistTrainText, CheckpointedBlocksChangeNoBitOfADistributedRun) {
  const int64_t batch = N() == 3 ? 9 : 4 * N();
  const train_text::Report plain = train(true, "float32", batch), ckpt = train(true, "float32", batch, /*checkpoint=*/true);
  ASSERT_EQ(ckpt.final_state.size(), plain.final_state.size());
  double worst = 0;
  for (std::size_t k = 0; k < plain.final_state.size(); ++k) worst = std::max(worst, rel_diff(ckpt.final_state[k].second, plain.final_state[k].second));
  EXPECT_EQ(worst, 0.0);
  EXPECT_EQ(ckpt.final_train_loss, plain.final_train_loss);
  EXPECT_EQ(ckpt.final_val_loss, plain.final_val_loss);
}

// On ranks other than 0: just the failures, each naming its rank.
struct FailurePrinter : ::testing::EmptyTestEventListener {
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed()) std::printf("rank %d: %s:%d: %s\n", R(), r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }
};

int main(int argc, char** argv) {
  dist::InitGuard mpi(&argc, &argv, std::chrono::seconds(120));
  ::testing::InitGoogleTest(&argc, argv);
  if (R() != 0) {  // one report (rank 0's); the others print only their failures
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter);
  }
  const int failed = RUN_ALL_TESTS();
  Tensor any = from_vector(std::vector<int64_t>{failed}, {1});
  dist::all_reduce(any, dist::ReduceOp::MAX);
  if (R() == 0 && any.item() != 0 && failed == 0) std::printf("a test failed on another rank\n");
  return any.item() != 0 ? 1 : 0;
}
