// Reads a golden JSON file written by a script in tools/golden/ (PyTorch 1.13), once per file.
#pragma once

#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace testutil {

inline const nlohmann::json& golden_json(const std::string& name) {
  static std::mutex mu;
  static std::map<std::string, nlohmann::json> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(name);
  if (it == loaded.end()) {
    std::ifstream f(std::string(AG_GOLDEN_DIR) + "/" + name);
    if (!f) throw std::runtime_error("cannot open tests/golden/" + name);
    it = loaded.emplace(name, nlohmann::json::parse(f)).first;
  }
  return it->second;
}

}  // namespace testutil
