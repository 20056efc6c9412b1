// DistributedDataParallel: PyTorch's gradient bucketing on the collectives of dist.h.
//
// The parameters, in reverse order (the order backward tends to finish them), are laid end to end
// in flat buffers cut into buckets of about bucket_cap_mb; a gradient may span two buckets. When
// backward has accumulated a parameter's .grad (a post-accumulate hook), its elements are copied
// into their buckets; a bucket whose elements have all arrived starts its all_reduce at once, in
// bucket order on every rank (collectives must be issued in the same order everywhere), while
// backward goes on with earlier layers. At the end of backward (a queued engine callback) the
// buckets not yet started start, all are waited for, divided by the world size and copied back
// into each .grad.
#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "dist/dist.h"

namespace ag::dist {

namespace {

// One parameter's share of a bucket: elements [param_off, param_off + n) of the parameter are
// elements [flat_off, flat_off + n) of the bucket.
struct Piece {
  std::size_t param;
  int64_t param_off, flat_off, n;
};

struct Bucket {
  Tensor flat;
  std::vector<Piece> pieces;
  int pending = 0;  // pieces whose gradient has not arrived in this backward
  bool launched = false;
  Work work;
};

// "name dtype [shape]" of every parameter and buffer: what must agree across ranks.
std::string describe(const nn::Module& m) {
  std::string s;
  for (const auto& [name, t] : m.named_parameters()) s += "parameter " + name + " " + dtype_name(t.dtype()) + " " + t.shape().str() + "\n";
  for (const auto& [name, t] : m.named_buffers()) s += "buffer " + name + " " + dtype_name(t.dtype()) + " " + t.shape().str() + "\n";
  return s;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::size_t b = 0;
  for (std::size_t e; (e = s.find('\n', b)) != std::string::npos; b = e + 1) out.push_back(s.substr(b, e - b));
  return out;
}

// How this rank's model differs from rank 0's (empty if it does not).
std::string difference(const std::string& mine, const std::string& theirs) {
  const auto a = lines_of(mine), b = lines_of(theirs);
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) return "it has " + a[i] + " where rank 0 has " + b[i];
  }
  if (a.size() != b.size()) {
    return "it has " + std::to_string(a.size()) + " parameters and buffers, rank 0 has " + std::to_string(b.size());
  }
  return "";
}

// Rank 0's string on every rank.
std::string broadcast_string(const std::string& s) {
  Tensor len = from_vector(std::vector<int64_t>{static_cast<int64_t>(s.size())}, {1});
  broadcast(len, 0);
  const auto n = static_cast<std::size_t>(len.to_vector<int64_t>()[0]);
  std::vector<int64_t> bytes(n, 0);
  if (rank() == 0) std::copy(s.begin(), s.end(), bytes.begin());
  Tensor t = from_vector(bytes, {static_cast<int64_t>(n)});
  broadcast(t, 0);
  std::string out;
  for (int64_t c : t.to_vector<int64_t>()) out.push_back(static_cast<char>(c));
  return out;
}

}  // namespace

struct DistributedDataParallel::Impl {
  DDPOptions options;
  std::vector<Tensor> params;  // the parameters that require grad, in bucket (reverse) order
  std::vector<std::vector<std::size_t>> buckets_of;  // per parameter, the buckets it spans
  std::vector<Bucket> buckets;
  std::vector<char> arrived;  // per parameter, in this backward
  std::size_t next_launch = 0;
  bool in_backward = false;
  std::chrono::nanoseconds last_wait{0};
  int64_t bytes = 0;

  void build(double cap_mb) {
    std::vector<int64_t> size;  // per bucket
    std::vector<DType> dtype;
    for (std::size_t p = 0; p < params.size(); ++p) {
      const Tensor& t = params[p];
      const auto esize = static_cast<int64_t>(element_size(t.dtype()));
      const int64_t cap = std::max<int64_t>(1, static_cast<int64_t>(cap_mb * 1024 * 1024) / esize);
      int64_t off = 0;
      do {
        if (buckets.empty() || dtype.back() != t.dtype() || size.back() >= cap) {
          buckets.emplace_back();
          size.push_back(0);
          dtype.push_back(t.dtype());
        }
        const int64_t n = std::min(t.numel() - off, cap - size.back());
        buckets.back().pieces.push_back({p, off, size.back(), n});
        buckets_of[p].push_back(buckets.size() - 1);
        size.back() += n;
        off += n;
      } while (off < t.numel());
      bytes += t.numel() * esize;
    }
    for (std::size_t i = 0; i < buckets.size(); ++i) buckets[i].flat = zeros({size[i]}, dtype[i]);
  }

  void start_backward() {
    in_backward = true;
    std::fill(arrived.begin(), arrived.end(), 0);
    for (Bucket& b : buckets) {
      b.pending = static_cast<int>(b.pieces.size());
      b.launched = false;
    }
    next_launch = 0;
    detail::queue_callback([this] { finish_backward(); });
  }

  void launch_ready(bool at_end = false) {
    if (!options.overlap && !at_end) return;
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      Bucket& b = buckets[next_launch++];
      b.work = all_reduce_async(b.flat, ReduceOp::SUM);
      b.launched = true;
    }
    for (std::size_t i = 0; i < next_launch; ++i) buckets[i].work.is_completed();  // lets MPI progress
  }

  // The gradient of parameter p (undefined: none on this rank, counted as zeros) into its buckets.
  void arrive(std::size_t p, const Tensor& grad) {
    if (arrived[p]) return;
    arrived[p] = 1;
    NoGradGuard g;
    const Tensor src = grad.defined() ? grad.detach().reshape({-1}) : Tensor();
    for (std::size_t bi : buckets_of[p]) {
      Bucket& b = buckets[bi];
      for (const Piece& pc : b.pieces) {
        if (pc.param != p) continue;
        Tensor dst = b.flat.narrow(0, pc.flat_off, pc.n);
        if (src.defined()) dst.copy_(src.narrow(0, pc.param_off, pc.n));
        else dst.zero_();
        --b.pending;
      }
    }
    launch_ready();
  }

  void finish_backward() {
    in_backward = false;
    for (std::size_t p = 0; p < params.size(); ++p) arrive(p, Tensor());
    launch_ready(true);
    const auto t0 = std::chrono::steady_clock::now();
    for (Bucket& b : buckets) b.work.wait();
    last_wait = std::chrono::steady_clock::now() - t0;
    NoGradGuard g;
    const double inv = 1.0 / static_cast<double>(world_size());
    for (Bucket& b : buckets) b.flat.mul_(inv);
    for (std::size_t p = 0; p < params.size(); ++p) {
      Tensor& t = params[p];
      Tensor grad = t.grad();
      if (!grad.defined() || !grad.is_contiguous() || grad.grad_fn()) {
        grad = zeros(t.shape().vec(), t.dtype());
        t.set_grad(grad);
      }
      Tensor dst = grad.view({-1});
      for (std::size_t bi : buckets_of[p]) {
        for (const Piece& pc : buckets[bi].pieces) {
          if (pc.param == p) dst.narrow(0, pc.param_off, pc.n).copy_(buckets[bi].flat.narrow(0, pc.flat_off, pc.n));
        }
      }
    }
  }
};

DistributedDataParallel::DistributedDataParallel(nn::Module& module, DDPOptions options)
    : nn::Module("DistributedDataParallel"), module_(module), impl_(std::make_shared<Impl>()) {
  if (!(options.bucket_cap_mb > 0)) throw std::invalid_argument("[DistributedDataParallel] bucket_cap_mb must be positive");
  impl_->options = options;
  // PyTorch's DDP holds the model as its child `module` (state_dict keys "module.*"); this one
  // does not own it.
  register_module("module", std::shared_ptr<nn::Module>(std::shared_ptr<void>(), &module_));

  // 1. the same model everywhere, or a clear error on every rank (never a garbled all_reduce)
  const std::string mine = describe(module_);
  const std::string diff = difference(mine, broadcast_string(mine));
  std::vector<int64_t> flags(static_cast<std::size_t>(world_size()), 0);
  flags[static_cast<std::size_t>(rank())] = diff.empty() ? 0 : 1;
  Tensor f = from_vector(flags, {static_cast<int64_t>(flags.size())});
  all_reduce(f, ReduceOp::MAX);
  std::string bad;
  const auto all = f.to_vector<int64_t>();
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r]) bad += (bad.empty() ? "" : ", ") + std::to_string(r);
  if (!bad.empty()) {
    throw std::runtime_error("[DistributedDataParallel] the model on rank(s) " + bad + " differs from rank 0's" +
                             (diff.empty() ? std::string() : ": on rank " + std::to_string(rank()) + ", " + diff));
  }

  // 2. rank 0's values everywhere
  for (Tensor t : module_.parameters()) broadcast(t, 0);
  sync_buffers();

  // 3. buckets, and the hooks that fill them
  for (const Tensor& t : module_.parameters())
    if (t.requires_grad()) impl_->params.push_back(t);
  std::reverse(impl_->params.begin(), impl_->params.end());
  impl_->buckets_of.resize(impl_->params.size());
  impl_->arrived.assign(impl_->params.size(), 0);
  impl_->build(options.bucket_cap_mb);
  for (std::size_t p = 0; p < impl_->params.size(); ++p) {
    // the hooks stay on the parameters after this wrapper is gone, and then do nothing
    std::weak_ptr<Impl> weak = impl_;
    impl_->params[p].register_post_accumulate_grad_hook([weak, p](const Tensor& leaf) {
      const std::shared_ptr<Impl> impl = weak.lock();
      if (!impl) return;
      if (!impl->in_backward) impl->start_backward();
      impl->arrive(p, leaf.grad());
    });
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

Tensor DistributedDataParallel::forward(const Tensor& x) {
  if (impl_->options.broadcast_buffers) sync_buffers();
  return module_.forward(x);
}

void DistributedDataParallel::sync_buffers() {
  for (Tensor t : module_.buffers()) broadcast(t, 0);
}

std::chrono::nanoseconds DistributedDataParallel::last_wait_time() const { return impl_->last_wait; }
int64_t DistributedDataParallel::bucket_count() const { return static_cast<int64_t>(impl_->buckets.size()); }
int64_t DistributedDataParallel::bytes_per_step() const { return impl_->bytes; }

}  // namespace ag::dist
