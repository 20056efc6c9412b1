// Helpers shared by the test files.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/autograd.h"

namespace testutil {

// A leaf with x's values (and dtype) whose memory layout is not row-major: dims reversed for 2-D
// and up, every other element of a buffer for 1-D.
inline ag::Tensor strided_leaf(const ag::Tensor& x) {
  using namespace ag;
  NoGradGuard g;
  Tensor v;
  if (x.dim() >= 2) {
    std::vector<int64_t> rev(x.shape().begin(), x.shape().end()), perm;
    std::reverse(rev.begin(), rev.end());
    for (int64_t i = x.dim() - 1; i >= 0; --i) perm.push_back(i);
    v = zeros(rev, x.dtype()).permute(perm);
  } else if (x.dim() == 1) {
    v = zeros({2 * x.size(0)}, x.dtype()).slice(0, std::nullopt, std::nullopt, 2);
  } else {
    v = zeros({}, x.dtype());
  }
  v.copy_(x);
  return v.requires_grad_();
}

struct CommandResult {
  int status;  // exit status, -1 if it did not exit normally
  std::string out;
};

// Runs a shell command and captures its standard output (redirect stderr in `cmd` as needed).
inline CommandResult run_command(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (p && std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int status = p ? ::pclose(p) : -1;
  return {status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace testutil
