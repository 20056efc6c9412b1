// The op table: the groups joined (see op_table.h).
#include "op_table.h"

#include <set>
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

}  // namespace optable
