// Prints the op table as JSON for tools/golden/make_op_golden.py: per entry its name, PyTorch
// expression, samples' input shapes, input domain, derivative order and dtype flags.
//   build/tests/op_table_dump > table.json
#include <iostream>

#include <nlohmann/json.hpp>

#include "op_table.h"

int main() {
  std::cout << "[";
  const char* sep = "\n";
  for (const optable::OpInfo& op : optable::op_table()) {
    nlohmann::json samples = nlohmann::json::array();
    for (const optable::Sample& s : op.samples) {
      nlohmann::json shapes = nlohmann::json::array();
      for (const auto& shape : s.shapes) shapes.push_back(shape);  // [] for a 0-dim input
      samples.push_back(shapes);
    }
    const nlohmann::json entry = {{"name", op.name},
                                  {"torch", op.torch},
                                  {"samples", samples},
                                  {"domain", {op.domain.lo, op.domain.hi}},
                                  {"order", op.order},
                                  {"floating_only", op.floating_only},
                                  {"fd_unusable", op.fd_unusable},
                                  {"float32_unusable", op.float32_unusable}};
    std::cout << sep << entry.dump();  // one entry a line
    sep = ",\n";
  }
  std::cout << "\n]\n";
}
