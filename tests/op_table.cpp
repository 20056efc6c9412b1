// The op table: the groups joined, and the helpers fuzz steps are made of (see op_table.h).
#include "op_table.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

namespace optable {

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> all;
    for (auto group : {core_ops, elementwise_ops, reduce_index_ops, loss_ops})
      for (OpInfo& op : group()) all.push_back(std::move(op));
    std::set<std::string> names;
    for (const OpInfo& op : all)
      if (!names.insert(op.name).second) throw std::logic_error("op table: duplicate name " + op.name);
    return all;
  }();
  return table;
}

// ---------------------------------------------------------------- fuzz helpers

int fuzz_int(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

Tensor fuzz_values(std::mt19937_64& rng, const Size& shape) {
  std::vector<double> v(static_cast<std::size_t>(shape.numel()));
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  for (double& x : v) x = u(rng);
  return ag::from_vector(v, shape.vec(), ag::kFloat64);
}

Size fuzz_broadcastable(std::mt19937_64& rng, const Size& s) {
  Size b;
  const int64_t drop = s.size() == 0 ? 0 : fuzz_int(rng, 0, static_cast<int>(s.size()) - 1);
  for (int64_t i = drop; i < s.size(); ++i) b.vec().push_back(fuzz_int(rng, 0, 2) == 0 ? 1 : s[i]);
  return b;
}

Tensor into(const Tensor& a, Domain d) { return ag::sigmoid(a) * (d.hi - d.lo) + d.lo; }

namespace {

std::string domain_text(const std::string& operand, const std::optional<Domain>& d) {
  if (!d) return operand;
  std::ostringstream os;
  os << "into(" << operand << ", [" << d->lo << ", " << d->hi << "])";
  return os.str();
}

}  // namespace

Fuzz elementwise_fuzz(std::function<Tensor(const Tensor&)> f, std::string name, std::optional<Domain> domain) {
  return [f = std::move(f), name = std::move(name), domain](std::mt19937_64&, const Size&, const Size&) {
    return std::optional<FuzzStep>(FuzzStep{[f, domain](const Tensor& a, const Tensor&) { return f(domain ? into(a, *domain) : a); },
                                            name + "(" + domain_text("a", domain) + ")"});
  };
}

Fuzz binary_fuzz(std::function<Tensor(const Tensor&, const Tensor&)> f, std::string name, std::optional<Domain> b_domain) {
  return [f = std::move(f), name = std::move(name), b_domain](std::mt19937_64& rng, const Size& sa, const Size& sb) {
    auto map = [b_domain](const Tensor& b) { return b_domain ? into(b, *b_domain) : b; };
    bool broadcasts = true;
    try {
      ag::broadcast_shapes(sa, sb, "fuzz");
    } catch (const std::exception&) {
      broadcasts = false;
    }
    if (broadcasts)
      return std::optional<FuzzStep>(
          FuzzStep{[f, map](const Tensor& a, const Tensor& b) { return f(a, map(b)); }, name + "(a, " + domain_text("b", b_domain) + ")"});
    Tensor c = fuzz_values(rng, fuzz_broadcastable(rng, sa));
    return std::optional<FuzzStep>(FuzzStep{[f, map, c](const Tensor& a, const Tensor&) { return f(a, map(c)); },
                                            name + "(a, " + domain_text("constant " + c.shape().str(), b_domain) + ")"});
  };
}

Fuzz dim_fuzz(std::function<Tensor(const Tensor&, int64_t)> f, std::string name, int64_t min_dim) {
  return [f = std::move(f), name = std::move(name), min_dim](std::mt19937_64& rng, const Size& sa, const Size&) -> std::optional<FuzzStep> {
    if (sa.size() < std::max<int64_t>(min_dim, 1)) return std::nullopt;
    const int64_t d = fuzz_int(rng, 0, static_cast<int>(sa.size()) - 1);
    return FuzzStep{[f, d](const Tensor& a, const Tensor&) { return f(a, d); }, name + "(a, " + std::to_string(d) + ")"};
  };
}

}  // namespace optable
