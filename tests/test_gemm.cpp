// ag's own GEMM kernels (autograd/kernels/gemm.h) against their references: the textbook sum
// accumulated in long double, and OpenBLAS. Every kernel this CPU runs is forced through the
// dispatch (the others are skipped with a message), in float32 and float64, over sizes that are not
// multiples of the tiles (1, 7, 17, 63, 65, ...), every transpose combination, leading dimensions
// wider than the matrix, beta 0 (c holding NaN, never read) and 1, sums longer than a K block, and
// inf and NaN in a row or column of an operand.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/gemm.h"

using namespace ag;
using detail::GemmKernel;
using detail::MatLayout;

namespace {

const GemmKernel kOwn[] = {GemmKernel::Portable, GemmKernel::Avx2, GemmKernel::Avx512};

// An (r, c) operand stored row-major (trans false) or column-major (trans true) with `pad` unused
// elements after each line, so the leading dimension is wider than the matrix.
template <class T>
struct Operand {
  std::vector<T> data;
  MatLayout layout;
  T at(int i, int j) const { return layout.trans ? data[j * layout.ld + i] : data[i * layout.ld + j]; }
};

template <class T>
Operand<T> operand(int rows, int cols, bool trans, int pad, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  const int lines = trans ? cols : rows, len = trans ? rows : cols;
  Operand<T> o{std::vector<T>(static_cast<std::size_t>(lines) * (len + pad)), MatLayout{trans, len + pad}};
  for (T& x : o.data) x = static_cast<T>(nd(rng));
  return o;
}

// c = a @ b + beta c0 by the textbook sum in long double
template <class T>
std::vector<long double> reference(const Operand<T>& a, const Operand<T>& b, const std::vector<T>& c0, int m, int n, int k, int ldc,
                                   T beta) {
  std::vector<long double> r(static_cast<std::size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      long double s = beta != T(0) ? static_cast<long double>(beta) * c0[i * ldc + j] : 0.0L;
      for (int p = 0; p < k; ++p) s += static_cast<long double>(a.at(i, p)) * b.at(p, j);
      r[i * n + j] = s;
    }
  return r;
}

// c = a @ b + beta c by `kernel` (own) or OpenBLAS (through detail::gemm with the choice forced)
template <class T>
std::vector<T> run(GemmKernel kernel, const Operand<T>& a, const Operand<T>& b, std::vector<T> c, int m, int n, int k, int ldc, T beta) {
  if (kernel == GemmKernel::OpenBLAS) {
    detail::GemmKernelGuard g(GemmKernel::OpenBLAS);
    detail::gemm(a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), c.data(), ldc, beta);
  } else {
    detail::own_gemm(kernel, a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), c.data(), ldc, beta);
  }
  return c;
}

template <class T>
void check_sizes(GemmKernel kernel) {
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-13;  // relative to the sum of |terms|
  std::mt19937_64 rng(29);
  int checked = 0;
  for (int m : {1, 7, 12, 17, 63, 65, 200})  // 200: more than one MC block of rows
    for (int n : {1, 9, 16, 33, 65})
      for (int k : {1, 5, 64, 385, 700}) {
        const bool ta = (m + n + k) % 2 == 1, tb = (m * n + k) % 3 == 0;
        const int pad = k % 3;
        const Operand<T> a = operand<T>(m, k, ta, pad, rng), b = operand<T>(k, n, tb, pad, rng);
        const int ldc = n + pad;
        for (const T beta : {T(0), T(1)}) {
          std::vector<T> c0(static_cast<std::size_t>(m) * ldc);
          for (T& x : c0) x = static_cast<T>(0.5);
          std::vector<T> c = c0;
          if (beta == T(0)) std::fill(c.begin(), c.end(), std::numeric_limits<T>::quiet_NaN());  // never read
          const std::vector<T> out = run(kernel, a, b, c, m, n, k, ldc, beta);
          const std::vector<long double> ref = reference(a, b, c0, m, n, k, ldc, beta);
          int bad = 0;
          for (int i = 0; i < m; ++i) {
            for (int j = 0; j < n; ++j) {
              long double scale = 1;
              for (int p = 0; p < k; ++p) scale += std::abs(static_cast<long double>(a.at(i, p)) * b.at(p, j));
              if (std::abs(out[i * ldc + j] - ref[i * n + j]) > tol * scale) ++bad;
            }
            for (int j = n; j < ldc; ++j) bad += !std::isnan(out[i * ldc + j]) && out[i * ldc + j] != c[i * ldc + j];  // padding untouched
          }
          EXPECT_EQ(bad, 0) << gemm_kernel_name(kernel) << " " << m << " x " << n << " x " << k << " trans " << ta << tb << " beta "
                            << beta;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 7 * 5 * 5 * 2);
}

// A row of a with an inf and a column of b with a NaN: what the textbook sum gives, element by
// element (inf, -inf or NaN exactly where it does), and finite elsewhere.
template <class T>
void check_non_finite(GemmKernel kernel) {
  std::mt19937_64 rng(30);
  const int m = 19, n = 37, k = 400;
  for (const bool ta : {false, true}) {
    Operand<T> a = operand<T>(m, k, ta, 0, rng), b = operand<T>(k, n, !ta, 0, rng);
    (ta ? a.data[3 * a.layout.ld + 5] : a.data[5 * a.layout.ld + 3]) = std::numeric_limits<T>::infinity();  // a[5][3]
    (!ta ? b.data[7 * b.layout.ld + 11] : b.data[11 * b.layout.ld + 7]) = std::numeric_limits<T>::quiet_NaN();  // b[7][11]
    std::vector<T> c(static_cast<std::size_t>(m) * n, T(0));
    const std::vector<T> out = run(kernel, a, b, c, m, n, k, n, T(0));
    const std::vector<long double> ref = reference(a, b, c, m, n, k, n, T(0));
    int mismatched = 0, non_finite = 0;
    for (int i = 0; i < m * n; ++i) {
      const long double r = ref[static_cast<std::size_t>(i)];
      const T o = out[static_cast<std::size_t>(i)];
      if (std::isfinite(r)) {
        mismatched += !std::isfinite(o);
      } else {
        ++non_finite;
        mismatched += std::isnan(r) ? !std::isnan(o) : o != static_cast<T>(r);
      }
    }
    EXPECT_EQ(mismatched, 0) << gemm_kernel_name(kernel) << " trans " << ta;
    EXPECT_EQ(non_finite, n + m - 1) << "row 5 (inf) and column 11 (NaN)";
  }
}

// A band (blas.h) skips work, never changes a needed value: every entry the band says is needed
// has the bits of the same kernel's full GEMM (for KTo and KFrom, a holds the zeros the band
// promises), and no entry outside c's matrix is written. Through detail::gemm as well, on 3 of
// ag's threads, where a split GEMM shifts the band to each slab (rows when m >= n, else columns).
template <class T>
void check_bands(GemmKernel kernel, bool through_gemm, int threads = 3) {
  std::mt19937_64 rng(31);
  int checked = 0;
  // (through detail::gemm: shapes large enough to be split, by rows and by columns)
  const std::vector<std::array<int, 3>> shapes = through_gemm ? std::vector<std::array<int, 3>>{{300, 200, 300}, {64, 1200, 250}}
                                                              : std::vector<std::array<int, 3>>{{1, 1, 1}, {13, 40, 33}, {64, 64, 32},
                                                                                                {70, 33, 70}, {256, 32, 256}, {40, 600, 40}};
  for (const auto& [m, n, k] : shapes)
    for (const detail::Band::Kind kind : {detail::Band::LowerC, detail::Band::KTo, detail::Band::KFrom})
      for (const int offset : {-20, -1, 0, 5, 31})
        for (const bool ta : {false, true}) {
          const detail::Band band{kind, offset};
          Operand<T> a = operand<T>(m, k, ta, 1, rng);
          const Operand<T> b = operand<T>(k, n, (m + k) % 2 == 0, 2, rng);
          for (int i = 0; i < m; ++i)  // the zeros the band promises
            for (int p = 0; p < k; ++p)
              if ((kind == detail::Band::KTo && p > i + offset) || (kind == detail::Band::KFrom && p < i + offset))
                (ta ? a.data[p * a.layout.ld + i] : a.data[i * a.layout.ld + p]) = T(0);
          const int ldc = n + 3;
          for (const T beta : {T(0), T(1)}) {
            std::vector<T> c0(static_cast<std::size_t>(m) * ldc, T(0.25));
            const std::vector<T> full = run(kernel, a, b, c0, m, n, k, ldc, beta);
            std::vector<T> banded = c0;
            if (through_gemm) {  // split into blocks of rows and columns, each its own GEMM with the band shifted
              detail::GemmKernelGuard guard(kernel);
              const int before = get_num_threads();
              set_num_threads(threads);
              detail::gemm(a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), banded.data(), ldc, beta, band);
              set_num_threads(before);
            } else {
              detail::own_gemm(kernel, a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), banded.data(), ldc, beta, band);
            }
            int bad = 0;
            for (int i = 0; i < m; ++i)
              for (int j = 0; j < ldc; ++j) {
                const std::size_t at = static_cast<std::size_t>(i) * ldc + j;
                if (j >= n) bad += banded[at] != c0[at];  // padding untouched
                else if (kind != detail::Band::LowerC || j <= i + offset) bad += std::memcmp(&banded[at], &full[at], sizeof(T)) != 0;
              }
            EXPECT_EQ(bad, 0) << gemm_kernel_name(kernel) << " " << m << " x " << n << " x " << k << " band " << int(kind) << " offset "
                              << offset << " trans " << ta << " beta " << beta;
            ++checked;
          }
        }
  EXPECT_EQ(checked, static_cast<int>(shapes.size()) * 3 * 5 * 2 * 2);
}

// f(kernel) for each of ag's kernels this CPU runs, the others skipped with a message
template <class F>
void for_each_own_kernel(F f) {
  for (GemmKernel k : kOwn) {
    if (!detail::gemm_kernel_supported(k)) {
      std::cout << "[ SKIPPED  ] the " << gemm_kernel_name(k) << " kernel: this CPU lacks its instruction set\n";
      continue;
    }
    SCOPED_TRACE(gemm_kernel_name(k));
    f(k);
  }
}

}  // namespace

TEST(Gemm, BandsSkipWorkButNoNeededValueChanges) {
  for_each_own_kernel([](GemmKernel k) {
    check_bands<float>(k, false);
    check_bands<double>(k, false);
    check_bands<float>(k, true);
    check_bands<float>(k, true, 16);  // (a grid of row and column blocks: 8 x 2 for 300 x 200)
  });
}

TEST(Gemm, EveryOwnKernelMatchesTheTextbookSum) {
  for_each_own_kernel([](GemmKernel k) {
    check_sizes<float>(k);
    check_sizes<double>(k);
    check_non_finite<float>(k);
    check_non_finite<double>(k);
  });
}

TEST(Gemm, OpenBLASTheOtherReferenceMatchesTheTextbookSumToo) {
  check_sizes<float>(GemmKernel::OpenBLAS);
  check_sizes<double>(GemmKernel::OpenBLAS);
}

// A bias row added by the GEMM as it writes its tiles (beta 0, c never read) gives the bits of c
// holding the bias rows with beta 1 (what linear did before, and does for OpenBLAS): every kernel,
// both dtypes, sizes around the tiles, transposes, sums of more than one K block, and through
// detail::gemm split over 2 threads by rows and by columns, and over 16 in a grid of both (the
// bias then starts at the block's first column).
template <class T>
void check_bias(GemmKernel kernel) {
  std::mt19937_64 rng(31);
  int checked = 0;
  auto check = [&](int m, int n, int k, int threads) {
    const bool ta = (m + k) % 2 == 1, tb = (n + k) % 3 == 0;
    const Operand<T> a = operand<T>(m, k, ta, 1, rng), b = operand<T>(k, n, tb, 2, rng);
    const int ldc = n + 3;
    const Operand<T> bias_row = operand<T>(1, n, false, 0, rng);
    std::vector<T> rows(static_cast<std::size_t>(m) * ldc, T(-7)), fused(rows.size(), std::numeric_limits<T>::quiet_NaN());
    for (int i = 0; i < m; ++i) std::copy(bias_row.data.begin(), bias_row.data.end(), rows.begin() + i * ldc);
    for (int i = 0; i < m; ++i) std::fill(fused.begin() + i * ldc + n, fused.begin() + (i + 1) * ldc, T(-7));
    std::vector<T> through = fused;
    detail::own_gemm(kernel, a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), rows.data(), ldc, T(1));
    detail::own_gemm(kernel, a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), fused.data(), ldc, T(0), {},
                     bias_row.data.data());
    {
      detail::GemmKernelGuard g(kernel);
      const int before = get_num_threads();
      set_num_threads(threads);
      detail::gemm(a.layout, b.layout, m, n, k, a.data.data(), b.data.data(), through.data(), ldc, T(0), {}, bias_row.data.data());
      set_num_threads(before);
    }
    EXPECT_EQ(std::memcmp(rows.data(), fused.data(), rows.size() * sizeof(T)), 0)
        << gemm_kernel_name(kernel) << " " << m << " x " << n << " x " << k << " trans " << ta << tb;
    EXPECT_EQ(std::memcmp(rows.data(), through.data(), rows.size() * sizeof(T)), 0)
        << gemm_kernel_name(kernel) << " through gemm on " << threads << " threads, " << m << " x " << n << " x " << k;
    ++checked;
  };
  for (int m : {1, 7, 13, 65, 200})
    for (int n : {1, 17, 33, 300})
      for (int k : {0, 5, 385, 800}) check(m, n, k, 2);
  check(700, 300, 800, 16);  // 4 x 4 blocks of about 176 x 80
  EXPECT_EQ(checked, 5 * 4 * 4 + 1);
  EXPECT_THROW(detail::gemm(MatLayout{false, 1}, MatLayout{false, 1}, 1, 1, 1, std::vector<T>{1}.data(), std::vector<T>{1}.data(),
                            std::vector<T>{1}.data(), 1, T(1), {}, std::vector<T>{1}.data()),
               std::logic_error);
}

TEST(Gemm, ABiasRowGivesTheBitsOfCHoldingItWithBetaOne) {
  for_each_own_kernel([](GemmKernel k) {
    check_bias<float>(k);
    check_bias<double>(k);
  });
  // OpenBLAS: the bias copied into c's rows, then beta 1
  std::mt19937_64 rng(32);
  const Operand<float> a = operand<float>(70, 40, false, 0, rng), b = operand<float>(40, 30, true, 0, rng), bias = operand<float>(1, 30, false, 0, rng);
  std::vector<float> rows(70 * 30), fused(70 * 30, std::numeric_limits<float>::quiet_NaN());
  for (int i = 0; i < 70; ++i) std::copy(bias.data.begin(), bias.data.end(), rows.begin() + i * 30);
  detail::GemmKernelGuard g(GemmKernel::OpenBLAS);
  detail::gemm(a.layout, b.layout, 70, 30, 40, a.data.data(), b.data.data(), rows.data(), 30, 1.0f);
  detail::gemm(a.layout, b.layout, 70, 30, 40, a.data.data(), b.data.data(), fused.data(), 30, 0.0f, {}, bias.data.data());
  EXPECT_EQ(std::memcmp(rows.data(), fused.data(), rows.size() * sizeof(float)), 0);
}

// Through the ops: matmul forward and backward with each kernel forced equal OpenBLAS's to rounding.
TEST(Gemm, MatmulAndItsGradientsAgreeWithOpenBLASUnderEveryKernel) {
  manual_seed(3);
  for (DType dt : {kFloat32, kFloat64}) {
    const Tensor a0 = randn({2, 65, 17}, dt), b0 = randn({17, 33}, dt), g = randn({2, 65, 33}, dt);
    auto grads = [&](GemmKernel k) {
      detail::GemmKernelGuard guard(k);
      const Tensor a = a0.detach().requires_grad_(), b = b0.detach().t().contiguous().t().requires_grad_();  // b transposed
      const Tensor y = matmul(a, b);
      y.backward(g);
      return std::vector<Tensor>{y.detach(), a.grad(), b.grad()};
    };
    const std::vector<Tensor> ref = grads(GemmKernel::OpenBLAS);
    for (GemmKernel k : kOwn) {
      if (!detail::gemm_kernel_supported(k)) continue;
      const std::vector<Tensor> got = grads(k);
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double d = max(abs(got[i] - ref[i])).item(), scale = max(abs(ref[i])).item();
        EXPECT_LT(d, (dt == kFloat32 ? 1e-5 : 1e-13) * scale) << gemm_kernel_name(k) << " " << dtype_name(dt) << " output " << i;
      }
    }
  }
}

TEST(Gemm, TheChoiceFollowsTheInstructionSetsNotTheModelName) {
  // ag's own kernels wherever the CPU has AVX2 and FMA, whatever core OpenBLAS picked (its Prescott
  // on an AVX-512 CPU it does not know, or its own AVX-512 one), else OpenBLAS; AG_GEMM overrides
  // (not set in the tests)
  const GemmKernel best = detail::best_own_gemm_kernel();
  EXPECT_TRUE(detail::gemm_kernel_supported(best));
  EXPECT_TRUE(detail::gemm_kernel_supported(GemmKernel::Portable));
  if (!std::getenv("AG_GEMM")) {
    detail::reset_gemm_kernel();  // forget any forced choice: the automatic one
    const GemmKernel chosen = best != GemmKernel::Portable ? best : GemmKernel::OpenBLAS;
    EXPECT_EQ(detail::gemm_kernel(), chosen);
    std::cout << "[ INFO     ] OpenBLAS core " << detail::openblas_core() << ", ag's best kernel " << gemm_kernel_name(best)
              << ": detail::gemm uses " << gemm_kernel_name(chosen) << "\n";
  }
  for (GemmKernel k : kOwn) {
    if (detail::gemm_kernel_supported(k)) continue;
    try {
      detail::set_gemm_kernel(k);
      ADD_FAILURE() << "forcing " << gemm_kernel_name(k) << " on a CPU without it was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("this CPU cannot run the"), std::string::npos) << e.what();
    }
  }
}

// ag::config() says who computes the GEMMs, and where OpenBLAS runs a core older than the CPU
// allows, says so once with the OPENBLAS_CORETYPE value that would help.
TEST(Gemm, ConfigNamesTheKernelAndWarnsOfAnOldOpenBLASCore) {
  const std::string c = ag::config();
  EXPECT_EQ(c, ag::show_config());
  EXPECT_NE(c.find("threads: " + std::to_string(get_num_threads())), std::string::npos) << c;
  const GemmKernel k = detail::gemm_kernel();
  EXPECT_NE(c.find(k == GemmKernel::OpenBLAS ? "GEMM: OpenBLAS, its " + detail::openblas_core() + " kernels"
                                             : std::string("GEMM: ag's own ") + gemm_kernel_name(k) + " kernels"),
            std::string::npos)
      << c;
  const std::string w = ag::blas_core_warning();
  if (detail::openblas_core_is_older_than_cpu()) {
    EXPECT_NE(w.find("OpenBLAS runs its " + detail::openblas_core() + " kernels on this CPU"), std::string::npos) << w;
    EXPECT_NE(w.find(detail::best_own_gemm_kernel() == GemmKernel::Avx512 ? "OPENBLAS_CORETYPE=SkylakeX" : "OPENBLAS_CORETYPE=Haswell"),
              std::string::npos)
        << w;
    EXPECT_NE(c.find("note: " + w), std::string::npos) << c;
    // the kernel it names is the one in use, a forced one included
    for (GemmKernel forced : {GemmKernel::OpenBLAS, GemmKernel::Portable}) {
      detail::GemmKernelGuard guard(forced);
      EXPECT_NE(ag::blas_core_warning().find(forced == GemmKernel::OpenBLAS ? "ag still uses them (AG_GEMM=openblas)"
                                                                             : "with its own portable kernels instead"),
                std::string::npos)
          << ag::blas_core_warning();
    }
    EXPECT_EQ(c.find("note:"), c.rfind("note:")) << "said once";
  } else {
    EXPECT_EQ(w, "");
    EXPECT_EQ(c.find("note:"), std::string::npos) << c;
  }
}
