// Dual levels, dual tensors and where tangents live. A tangent is a tensor held by its primal's
// TensorImpl (fw_grad); the ops push tangents through record() (record.cpp), each by its jvp rule.
// The level keeps a weak list of the tensors it gave a tangent, so leaving it frees them all.
#include "autograd/forward_ad.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "autograd/engine_task.h"
#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

std::atomic<bool> detail::g_dual_level_alive{false};
thread_local bool detail::g_jvp_running = false;

namespace {
// The tensors given a tangent in the live level. Pruned of dead ones when it doubles, so a long
// loop inside one level keeps it at most twice the live count.
std::mutex g_mutex;
std::vector<std::weak_ptr<TensorImpl>> g_with_tangent;
std::size_t g_prune_at = 1024;
}  // namespace

void detail::set_tangent(const Tensor& t, const Tensor& tangent) {
  t.impl()->fw_grad = tangent.impl_ptr();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_with_tangent.push_back(t.impl_ptr());
  if (g_with_tangent.size() >= g_prune_at) {
    std::erase_if(g_with_tangent, [](const std::weak_ptr<TensorImpl>& w) { return w.expired(); });
    g_prune_at = std::max<std::size_t>(1024, 2 * g_with_tangent.size());
  }
}

Tensor detail::detach_keeping_tangent(const Tensor& g) {
  Tensor d = g.detach();
  if (const Tensor t = tangent_of(g); t.defined()) set_tangent(d, t);
  return d;
}

Tensor detail::view_tangent_of_base(const Tensor& v) {
  const TensorImpl& vi = *v.impl();
  if (vi.no_fw_view || !vi.view_base || !vi.view_base->fw_grad) return Tensor();
  // the base's tangent laid out as the base (as an in-place op gives it one): the view's strides
  // and offset address the view's elements in it
  const TensorImpl& b = *vi.view_base;
  const Tensor bt(b.fw_grad);
  const auto span = static_cast<int64_t>(bt.impl()->storage->nbytes / element_size(bt.dtype()));
  int64_t hi = v.storage_offset();
  bool inside = v.storage_offset() >= 0;
  for (int64_t d = 0; d < v.dim(); ++d) {
    if (v.shape()[d] == 0) return Tensor();  // no element: nothing to read
    if (v.stride(d) < 0) inside = false;
    hi += (v.shape()[d] - 1) * v.stride(d);
  }
  if (bt.strides() != b.strides || bt.storage_offset() != b.offset || !inside || hi >= span) {
    throw std::runtime_error("[forward AD] a view (shape " + v.shape().str() + ") taken before its base (shape " +
                             b.shape.str() + ") got a tangent cannot read the base's tangent, laid out otherwise than "
                             "the base; take the view again");
  }
  const Tensor t = alias(bt, v.shape(), v.strides(), v.storage_offset());
  set_tangent(v, t);
  return t;
}

namespace forward_ad {

DualLevel::DualLevel() {
  bool expected = false;
  if (!detail::g_dual_level_alive.compare_exchange_strong(expected, true))
    throw std::runtime_error("[dual_level] Nested forward mode AD is not supported at the moment");
}

DualLevel::~DualLevel() {
  std::vector<std::weak_ptr<TensorImpl>> with_tangent;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    with_tangent.swap(g_with_tangent);
    g_prune_at = 1024;
  }
  // released outside the lock: a freed tangent may hold tensors that held tangents
  std::vector<std::shared_ptr<TensorImpl>> dropped;
  for (const std::weak_ptr<TensorImpl>& w : with_tangent)
    if (std::shared_ptr<TensorImpl> t = w.lock(); t && t->fw_grad) dropped.push_back(std::move(t->fw_grad));
  with_tangent.clear();
  dropped.clear();
  detail::g_dual_level_alive = false;
}

bool level_alive() { return detail::g_dual_level_alive.load(); }

Tensor make_dual(const Tensor& primal, const Tensor& tangent) {
  detail::check_defined(primal, "make_dual");
  detail::check_defined(tangent, "make_dual");
  if (!level_alive()) {
    throw std::runtime_error("[make_dual] Trying to create a dual Tensor for forward AD but no level exists, make sure "
                             "to enter_dual_level() first.");
  }
  if (!is_floating(primal.dtype()))
    throw std::invalid_argument("[make_dual] Expected primal to be floating point or complex, but got: " + dtype_name(primal.dtype()));
  if (!is_floating(tangent.dtype()))
    throw std::invalid_argument("[make_dual] Expected tangent to be floating point or complex, but got: " + dtype_name(tangent.dtype()));
  if (primal.shape() != tangent.shape()) {
    throw std::runtime_error("[make_dual] Trying to set a forward gradient that has a different size than that of the "
                             "original Tensor, this is not supported. Tensor is of size " + primal.shape().str() +
                             " while the given forward gradient is of size " + tangent.shape().str() + ".");
  }
  if (primal.impl()->fw_grad) {
    throw std::runtime_error("[make_dual] Making a dual Tensor based on a Tensor that already has a forward gradient at "
                             "the same level 0 is not supported.");
  }
  Tensor out = view(primal, primal.shape().vec());  // primal has no tangent: a plain view
  Tensor t = tangent;
  if (tangent.strides() != primal.strides() || tangent.storage_offset() != primal.storage_offset()) {
    if (tangent.requires_grad()) {
      t = tangent.clone();  // keeps its history (reverse-over-forward), in a layout of its own
    } else {
      // the tangent in the primal's layout (strides and offset in a buffer as large as the primal's)
      const auto span = static_cast<int64_t>(primal.impl()->storage->nbytes / element_size(primal.dtype()));
      t = detail::alias(detail::zeros_tensor({span}, tangent.dtype()), primal.shape(), primal.strides(), primal.storage_offset());
      detail::copy_into(t, tangent);
    }
  }
  detail::set_tangent(out, t);
  return out;
}

UnpackedDual unpack_dual(const Tensor& t) {
  detail::check_defined(t, "unpack_dual");
  if (!level_alive()) return {t, Tensor()};
  const Tensor tangent = t.impl()->fw_grad ? Tensor(t.impl()->fw_grad) : detail::view_tangent_of_base(t);
  if (!tangent.defined()) return {t, Tensor()};
  Tensor primal;
  {
    detail::JvpPause pause;  // the view of the primal pushes no tangent
    primal = view(t, t.shape().vec());
  }
  primal.impl()->no_fw_view = true;  // nor reads its base's
  return {primal, tangent};
}

}  // namespace forward_ad

}  // namespace ag
