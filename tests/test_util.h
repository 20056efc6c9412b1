// Helpers shared by the test files.
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/softmax.h"

namespace testutil {

// What f throws, or "(no exception)": for asserting an error message in full.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// Number of elements whose bit patterns differ (NaNs compare equal to NaNs); reports the first.
template <class T>
int64_t bit_mismatches(const ag::Tensor& a, const ag::Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return -1;
  const std::vector<T> va = a.to_vector<T>(), vb = b.to_vector<T>();
  int64_t bad = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
    if (std::memcmp(&va[i], &vb[i], sizeof(T)) != 0) {
      if (bad == 0) ADD_FAILURE() << "first difference at element " << i << ": " << va[i] << " vs " << vb[i];
      ++bad;
    }
  }
  return bad;
}

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

// Number of elements where a and b differ by more than atol + rtol * |b|, inf and NaN having to
// match exactly (same sign of inf, NaN where the other is NaN); reports the first.
template <class T>
int64_t close_mismatches(const ag::Tensor& a, const ag::Tensor& b, double rtol, double atol) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return -1;
  const std::vector<T> va = a.to_vector<T>(), vb = b.to_vector<T>();
  int64_t bad = 0;
  for (std::size_t i = 0; i < va.size(); ++i) {
    const double x = va[i], y = vb[i];
    const bool ok = std::isfinite(x) && std::isfinite(y) ? std::abs(x - y) <= atol + rtol * std::abs(y)
                                                         : (std::isnan(x) && std::isnan(y)) || x == y;
    if (!ok) {
      if (bad == 0) ADD_FAILURE() << "first difference at element " << i << ": " << x << " vs " << y;
      ++bad;
    }
  }
  return bad;
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

// f(name) under each float row kernel this CPU runs (the AVX-512F rows and the AVX2 or plain ones,
// kernels::set_rows_avx512), the others skipped with a message; the automatic choice after.
template <class F>
void for_each_row_kernel(F f) {
  const bool had = ag::kernels::rows_avx512();
  for (const bool avx512 : {false, true}) {
    if (avx512 && !__builtin_cpu_supports("avx512f")) {
      std::cout << "[ SKIPPED  ] the AVX-512F rows: this CPU lacks AVX-512F\n";
      continue;
    }
    ag::kernels::set_rows_avx512(avx512);
    f(std::string(avx512 ? "avx512 rows" : "avx2 / plain rows"));
  }
  ag::kernels::set_rows_avx512(had);
}

}  // namespace testutil
