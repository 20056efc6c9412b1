// Rearranging ops: flip, roll, repeat (new tensors), chunk and split (views of consecutive parts),
// flatten and unflatten (reshapes). Each backward moves the gradient back where its element came
// from: flip and roll undo themselves, repeat sums the tiles, the parts of a split are slices.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/kernels/common.h"
#include "autograd/node.h"
#include "autograd/ops.h"

namespace ag {

using detail::shape_error;

namespace {

// 1 for each dim of t listed in dims (wrapped); a dim listed twice is an error, as in PyTorch.
DimVector listed_dims(const Tensor& t, const DimVector& dims, const char* op) {
  DimVector m(static_cast<std::size_t>(t.dim()), 0);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, t.dim(), op, t.shape());
    if (t.dim() == 0) continue;
    if (m[static_cast<std::size_t>(w)]) shape_error(op, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    m[static_cast<std::size_t>(w)] = 1;
  }
  return m;
}

std::string list_str(const std::vector<int64_t>& v) { return Size(v).str(); }

// Names every part's node as PyTorch names the node of split's outputs.
std::vector<Tensor> named(std::vector<Tensor> parts, const char* name) {
  for (Tensor& p : parts)
    detail::name_node(p, name, nullptr);
  return parts;
}

std::vector<Tensor> split_sizes_of(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim, const char* name) {
  std::vector<Tensor> parts;
  int64_t at = 0;
  for (int64_t s : sizes) {
    parts.push_back(narrow(t, dim, at, s));
    at += s;
  }
  return named(std::move(parts), name);
}

}  // namespace

Tensor flip(const Tensor& t, const DimVector& dims) {
  detail::check_defined(t, "flip");
  const DimVector m = listed_dims(t, dims, "flip");
  // t read backwards along the flipped dims: negative strides from the last element
  Strides st = t.strides();
  int64_t off = t.storage_offset();
  for (int64_t d = 0; d < t.dim() && t.numel() > 0; ++d) {
    if (!m[static_cast<std::size_t>(d)]) continue;
    off += (t.shape()[d] - 1) * st[static_cast<std::size_t>(d)];
    st[static_cast<std::size_t>(d)] = -st[static_cast<std::size_t>(d)];
  }
  // laid out as t (PyTorch's empty_like(t, preserve_format)), so a transposed t flips to a transposed result
  Tensor out = detail::make_tensor(t.shape(), detail::elementwise_strides(t.shape(), {&t}), t.dtype());
  if (t.numel() > 0) detail::copy_into(out, detail::alias(t, t.shape(), st, off));
  if (needs_grad(t)) {
    // y = flip(x, dims)  =>  dx = flip(g, dims)
    record(out, "FlipBackward0", {t}, [dims](const Tensor& g) -> Grads { return {flip(g, dims)}; },
           [&](const Tangents& d) { return flip(d[0], dims); });  // jvp: dy = flip(dx, dims)
  }
  return out;
}

Tensor roll(const Tensor& t, const DimVector& shifts, const DimVector& dims) {
  detail::check_defined(t, "roll");
  if (shifts.empty()) shape_error("roll", "`shifts` required");
  if (dims.empty() ? shifts.size() != 1 : shifts.size() != dims.size()) {
    shape_error("roll", "shifts and dimensions must align. shifts: " + std::to_string(shifts.size()) +
                            ", dims:" + std::to_string(dims.size()));
  }
  if (t.dim() == 0 && !dims.empty()) {
    throw std::out_of_range("[roll] dimension specified as " + std::to_string(dims[0]) + " but tensor has no dimensions");
  }
  Tensor out;
  {
    NoGradGuard g;
    // no dims: roll the flattened tensor and view it back
    Tensor r = dims.empty() ? reshape(t, {t.numel()}) : t;
    for (std::size_t i = 0; i < shifts.size(); ++i) {
      const int64_t d = dims.empty() ? 0 : wrap_dim(dims[i], t.dim(), "roll", t.shape());
      const int64_t n = r.size(d);
      if (n == 0) continue;
      const int64_t s = ((shifts[i] % n) + n) % n;  // element j moves to (j + s) mod n
      if (s != 0) r = cat({narrow(r, d, n - s, s), narrow(r, d, 0, n - s)}, d);
    }
    out = r.shares_storage(t) ? clone(r, MemoryFormat::Contiguous) : r;
    if (dims.empty()) out = reshape(out, t.shape().vec());
  }
  if (needs_grad(t)) {
    // y = roll(x, shifts, dims)  =>  dx = roll(g, -shifts, dims)
    DimVector back;
    for (int64_t s : shifts) back.push_back(-s);
    record(out, "RollBackward0", {t}, [back, dims](const Tensor& g) -> Grads { return {roll(g, back, dims)}; },
           [&](const Tangents& d) { return roll(d[0], shifts, dims); });  // jvp: dy = roll(dx, shifts, dims)
  }
  return out;
}

Tensor roll(const Tensor& t, int64_t shift) { return roll(t, DimVector{shift}, DimVector{}); }
Tensor roll(const Tensor& t, int64_t shift, int64_t dim) { return roll(t, DimVector{shift}, DimVector{dim}); }

Tensor repeat(const Tensor& t, const DimVector& sizes) {
  detail::check_defined(t, "repeat");
  const int64_t k = static_cast<int64_t>(sizes.size()) - t.dim();  // leading dims added
  if (k < 0) {
    shape_error("repeat", "number of dimensions of repeat dims " + Size(sizes).str() +
                              " can not be smaller than number of dimensions of tensor " + t.shape().str());
  }
  // t as (1, s0, 1, s1, ...) broadcast to (r0, s0, r1, s1, ...) is the result before merging each pair
  DimVector single, tiled, merged, repeat_axes;
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    const int64_t s = i < k ? 1 : t.shape()[i - k], r = sizes[static_cast<std::size_t>(i)];
    if (r < 0) shape_error("repeat", "negative repeat " + std::to_string(r) + " in " + Size(sizes).str());
    single.push_back(1);
    single.push_back(s);
    tiled.push_back(r);
    tiled.push_back(s);
    merged.push_back(detail::checked_mul(r, s, "repeat"));
    repeat_axes.push_back(2 * i);
  }
  Tensor out;
  {
    NoGradGuard g;
    out = reshape(contiguous(expand(reshape(t, single), tiled)), merged);
    if (out.shares_storage(t)) out = clone(out, MemoryFormat::Contiguous);  // no tiling at all (a 0-dim t, or every r and s 1)
  }
  if (needs_grad(t)) {
    // y = tiles of x  =>  dx = the sum of g over the tiles: g as (r0, s0, r1, s1, ...) summed over the r axes
    record(out, "RepeatBackward0", {t}, [tiled, repeat_axes, from = t.shape()](const Tensor& g) -> Grads {
      return {reshape(sum(reshape(g, tiled), repeat_axes), from.vec())};
    },
    [&](const Tangents& d) { return repeat(d[0], sizes); });  // jvp: dy = repeat(dx, sizes)
  }
  return out;
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  detail::check_defined(t, "split");
  if (t.dim() == 0) shape_error("split", "split expects at least a 1-dimensional tensor");
  dim = wrap_dim(dim, t.dim(), "split", t.shape());
  const int64_t n = t.shape()[dim];
  if (split_size < 0) shape_error("split", "split expects split_size be non-negative, but got split_size=" + std::to_string(split_size));
  if (split_size == 0 && n != 0) {
    shape_error("split", "split_size can only be 0 if dimension size is 0, but got dimension size of " + std::to_string(n));
  }
  const int64_t parts = split_size == 0 || n == 0 ? 1 : (n - 1) / split_size + 1;  // ceil(n / size), no overflow
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::min(split_size, n - i * split_size));
  // parts[i] = x.narrow(dim, i * size, size_i)  =>  dx = the parts' gradients side by side (SliceBackward0's rule each)
  return split_sizes_of(t, sizes, dim, "SplitBackward0");
}

std::vector<Tensor> split(const Tensor& t, const std::vector<int64_t>& split_sizes, int64_t dim) {
  detail::check_defined(t, "split");
  if (t.dim() == 0) shape_error("split", "split expects at least a 1-dimensional tensor");
  dim = wrap_dim(dim, t.dim(), "split", t.shape());
  const int64_t n = t.shape()[dim];
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    if (s < 0) {
      shape_error("split", "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=" +
                               list_str(split_sizes));
    }
    total = s > n - total ? n + 1 : total + s;  // stops past n, never overflows
  }
  if (total != n) {
    shape_error("split", "split_with_sizes expects split_sizes to sum exactly to " + std::to_string(n) +
                             " (input tensor's size at dimension " + std::to_string(dim) + "), but got split_sizes=" +
                             list_str(split_sizes));
  }
  return split_sizes_of(t, split_sizes, dim, "SplitWithSizesBackward0");
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  detail::check_defined(t, "chunk");
  if (t.dim() == 0) shape_error("chunk", "chunk expects at least a 1-dimensional tensor");
  if (chunks <= 0) shape_error("chunk", "chunk expects `chunks` to be greater than 0, got: " + std::to_string(chunks));
  dim = wrap_dim(dim, t.dim(), "chunk", t.shape());
  const int64_t n = t.shape()[dim], split_size = n == 0 ? 0 : (n - 1) / chunks + 1;
  // an empty dim gives `chunks` empty parts (split would give one), as in PyTorch
  if (n == 0) return split(t, std::vector<int64_t>(static_cast<std::size_t>(chunks), 0), dim);
  return split(t, split_size, dim);
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  detail::check_defined(t, "flatten");
  start_dim = wrap_dim(start_dim, t.dim(), "flatten", t.shape());
  end_dim = wrap_dim(end_dim, t.dim(), "flatten", t.shape());
  if (t.dim() == 0) return reshape(t, {1});
  if (start_dim > end_dim) shape_error("flatten", "flatten() has invalid args: start_dim cannot come after end_dim");
  if (start_dim == end_dim) return t;
  DimVector s;
  for (int64_t d = 0; d < start_dim; ++d) s.push_back(t.shape()[d]);
  int64_t merged = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) merged = detail::checked_mul(merged, t.shape()[d], "flatten");
  s.push_back(merged);
  for (int64_t d = end_dim + 1; d < t.dim(); ++d) s.push_back(t.shape()[d]);
  return reshape(t, s);
}

Tensor unflatten(const Tensor& t, int64_t dim, const DimVector& sizes) {
  detail::check_defined(t, "unflatten");
  if (t.dim() == 0) throw std::out_of_range("[unflatten] dimension specified as " + std::to_string(dim) + " but tensor has no dimensions");
  dim = wrap_dim(dim, t.dim(), "unflatten", t.shape());
  if (sizes.empty()) shape_error("unflatten", "sizes must be non-empty");
  const int64_t n = t.shape()[dim];
  DimVector s = sizes;
  int64_t known = 1, infer = -1;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) shape_error("unflatten", "only one dimension can be inferred in sizes " + Size(sizes).str());
      infer = static_cast<int64_t>(i);
    } else {
      if (s[i] < 0) {
        shape_error("unflatten", "provided sizes " + Size(sizes).str() + " hold a negative size other than -1");
      }
      known = detail::checked_mul(known, s[i], "unflatten");
    }
  }
  if (infer >= 0 && known == 0) {
    shape_error("unflatten", "cannot infer the -1 in sizes " + Size(sizes).str() + " for dim " + std::to_string(dim) +
                                 " of size " + std::to_string(n) + ": with a 0 among the sizes it can be any value");
  }
  if (infer >= 0 && n % known == 0) s[static_cast<std::size_t>(infer)] = n / known;
  if (std::any_of(s.begin(), s.end(), [](int64_t v) { return v < 0; }) || detail::check_shape(Size(s), "unflatten") != n) {
    shape_error("unflatten", "provided sizes " + Size(sizes).str() + " don't multiply up to the size of dim " +
                                 std::to_string(dim) + " (" + std::to_string(n) + ") in the input tensor of shape " +
                                 t.shape().str());
  }
  DimVector shape = t.shape().vec();
  shape.erase(shape.begin() + dim);
  for (std::size_t i = 0; i < s.size(); ++i) shape.insert(shape.begin() + dim + static_cast<int64_t>(i), s[i]);
  return view(t, shape);
}

}  // namespace ag
