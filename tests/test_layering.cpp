// Layers stay layers: the kernels in autograd/kernels/ (loops, SIMD, BLAS) sit below the ops. A
// kernel takes tensors and raw strides and pointers and returns tensors without history; the
// autograd logic that calls it (nodes, differentiable ops, NoGradGuard) is in the op file in
// autograd/. So no file in autograd/kernels/ may include ops.h, node.h, autograd.h, indexing.h or
// inplace.h, directly or through another of the project's headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = AG_SOURCE_DIR;
const std::set<std::string> kAbove = {"autograd/ops.h", "autograd/node.h", "autograd/autograd.h", "autograd/indexing.h",
                                      "autograd/inplace.h"};

// The project files `file` (a path relative to kRoot) includes with #include "...", relative to
// kRoot as the build's include path resolves them (the root first, then the file's directory).
std::vector<std::string> includes_of(const std::string& file) {
  std::ifstream in(kRoot / file);
  std::vector<std::string> out;
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (!std::regex_search(line, m, include_re)) continue;
    const std::string name = m[1];
    if (fs::exists(kRoot / name)) out.push_back(fs::path(name).lexically_normal().generic_string());
    else if (const fs::path local = fs::path(file).parent_path() / name; fs::exists(kRoot / local))
      out.push_back(local.lexically_normal().generic_string());
  }
  return out;
}

// The chain of includes from `file` to a header above the kernels ("a -> b -> autograd/ops.h"),
// or "" if there is none.
std::string path_above(const std::string& file, std::set<std::string>& seen) {
  if (!seen.insert(file).second) return "";
  for (const std::string& inc : includes_of(file)) {
    if (kAbove.count(inc)) return file + " -> " + inc;
    if (std::string rest = path_above(inc, seen); !rest.empty()) return file + " -> " + rest;
  }
  return "";
}

}  // namespace

TEST(Layering, KernelsIncludeNoOpsOrNodes) {
  const fs::path dir = kRoot / "autograd" / "kernels";
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    ++files;
    const std::string file = fs::relative(entry.path(), kRoot).generic_string();
    std::set<std::string> seen;
    const std::string chain = path_above(file, seen);
    EXPECT_TRUE(chain.empty()) << "a kernel reaches up into the autograd layer: " << chain
                               << "\n  (move the autograd logic into the op file in autograd/; kernels use "
                                  "kernels/common.h's helpers: make_tensor, zeros_tensor, contiguous_values, ...)";
  }
  EXPECT_GT(files, 20) << "autograd/kernels/ should hold the kernels";
}

// The check itself sees an include, direct or through a header.
TEST(Layering, TheCheckSeesIncludes) {
  std::set<std::string> seen;
  EXPECT_EQ(path_above("autograd/layer_norm.cpp", seen).find("autograd/layer_norm.cpp -> "), 0u);
  seen.clear();
  EXPECT_NE(path_above("autograd/functional.cpp", seen), "");
  seen.clear();
  EXPECT_EQ(path_above("autograd/tensor.h", seen), "");
}
