// second_order: gradients of gradients, in two examples people know from PyTorch.
//
// (a) Newton's method on a small L2-regularized logistic regression: every step takes the exact
//     Hessian with functional::hessian (torch.autograd.functional.hessian), the gradient with
//     ag::grad (torch.autograd.grad), solves H d = g and steps (w, b) -= d. It converges in a
//     handful of steps, the gradient norm squaring each time.
// (b) A WGAN-GP critic: the loss holds |d f(x_hat) / d x_hat|_2, taken with
//     ag::grad(..., create_graph=true), so loss.backward() differentiates through a backward pass.
//     The same critic is trained once more without the penalty to show what the penalty does.
// (c) Hessian-free Newton on a small tanh MLP: each step solves (H + damping I) d = g by
//     conjugate gradient, where every H v is a forward-over-reverse Hessian-vector product
//     (ag::func::jvp of ag::grad: the gradient's tangent when the parameters carry v), so H is
//     never formed; the damping adapts (Levenberg-Marquardt).
//
// It is tools/golden/second_order_reference.py line by line: same seeds, data, model, optimizer
// and printed table; --json prints the reference's JSON keys (tests/test_second_order.cpp compares
// the two). Everything is float64.
#include <cxxopts.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <ag/ag.h>

using namespace ag;

namespace {

const DType DT = kFloat64;

// ---- (a) Newton's method on logistic regression ----
const int64_t N_POINTS = 64, N_FEATURES = 3, MAX_STEPS = 20;
const double L2 = 0.1, TOL = 1e-12;

// x with A x = rhs: Gaussian elimination with partial pivoting, on the host (the reference's
// solve(), the same operations in the same order).
std::vector<double> solve(std::vector<std::vector<double>> M, const std::vector<double>& rhs) {
  const std::size_t n = rhs.size();
  for (std::size_t i = 0; i < n; ++i) M[i].push_back(rhs[i]);  // augmented (n, n + 1)
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t p = k;  // first row with the largest |pivot|, as Python's max()
    for (std::size_t i = k + 1; i < n; ++i)
      if (std::abs(M[i][k]) > std::abs(M[p][k])) p = i;
    std::swap(M[k], M[p]);
    for (std::size_t i = k + 1; i < n; ++i) {
      const double f = M[i][k] / M[k][k];
      for (std::size_t j = k; j <= n; ++j) M[i][j] -= f * M[k][j];
    }
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double s = M[i][n];
    for (std::size_t j = i + 1; j < n; ++j) s -= M[i][j] * x[j];
    x[i] = s / M[i][i];
  }
  return x;
}

struct NewtonRow {
  int64_t step;
  double loss, grad_norm;
};
struct NewtonResult {
  std::vector<NewtonRow> steps;
  std::vector<double> w, b;
};

NewtonResult newton() {
  manual_seed(0);
  Tensor X = randn({N_POINTS, N_FEATURES}, DT);  // (N, d)
  Tensor w_true = tensor({1.5, -2.0, 0.5}, DT);
  Tensor noise = randn({N_POINTS}, DT);
  Tensor y = (matmul(X, w_true) + noise > 0).to(DT);  // (N,) labels 0/1

  // The loss as a function of its inputs {w, b}, the form functional::hessian takes.
  functional::Fn loss_fn = [&](const std::vector<Tensor>& in) {
    const Tensor& w = in[0];
    const Tensor& b = in[1];
    Tensor z = matmul(X, w) + b;  // (N,) logits
    // mean binary cross-entropy with logits: log(1 + exp(z)) - y z, plus L2 / 2 |w|^2
    return (log(1.0 + exp(z)) - y * z).mean() + L2 / 2 * (w * w).sum();
  };

  Tensor w = zeros({N_FEATURES}, DT).requires_grad_();
  Tensor b = zeros({1}, DT).requires_grad_();
  NewtonResult r;
  for (int64_t step = 0; step <= MAX_STEPS; ++step) {
    Tensor loss = loss_fn({w, b});
    // gw, gb = torch.autograd.grad(loss, (w, b))
    const std::vector<Tensor> gs = ag::grad({loss}, {w, b});
    std::vector<double> g = gs[0].to_vector<double>();
    g.push_back(gs[1].item());
    double sq = 0;
    for (double v : g) sq += v * v;
    const double gnorm = std::sqrt(sq);
    r.steps.push_back({step, loss.item(), gnorm});
    if (gnorm < TOL || step == MAX_STEPS) break;
    // H as blocks: {{d2L/dw dw (d, d), d2L/dw db (d, 1)}, {d2L/db dw (1, d), d2L/db db (1, 1)}}
    const std::vector<std::vector<Tensor>> Hb = functional::hessian(loss_fn, {w, b});
    Tensor H = cat({cat({Hb[0][0], Hb[0][1]}, 1), cat({Hb[1][0], Hb[1][1]}, 1)}, 0);  // (d+1, d+1)
    std::vector<std::vector<double>> Hrows;
    for (int64_t i = 0; i < H.size(0); ++i) Hrows.push_back(H[i].to_vector<double>());
    const std::vector<double> d = solve(Hrows, g);
    {
      NoGradGuard no_grad;  // with torch.no_grad(): w -= d[:3]; b -= d[3:]
      w.add_(from_vector(std::vector<double>(d.begin(), d.begin() + N_FEATURES), {N_FEATURES}, DT), -1.0);
      b.add_(from_vector(std::vector<double>(d.begin() + N_FEATURES, d.end()), {1}, DT), -1.0);
    }
  }
  r.w = w.to_vector<double>();
  r.b = b.to_vector<double>();
  return r;
}

// ---- (b) WGAN-GP gradient penalty ----
const int64_t N_SAMPLES = 64, HIDDEN = 16, GP_STEPS = 25;
const double LR = 0.01;

struct CriticRow {
  int64_t step;
  double loss, w_dist, penalty, grad_norm;
};

std::vector<CriticRow> critic_run(double lambda) {
  manual_seed(1);
  Tensor real = randn({N_SAMPLES, 2}, DT) * 0.5 + tensor({2.0, 1.0}, DT);  // (N, 2)
  Tensor fake = randn({N_SAMPLES, 2}, DT);                                  // (N, 2)
  // nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)).double()
  nn::Sequential critic({std::make_shared<nn::Linear>(2, HIDDEN), std::make_shared<nn::Tanh>(),
                         std::make_shared<nn::Linear>(HIDDEN, HIDDEN), std::make_shared<nn::Tanh>(),
                         std::make_shared<nn::Linear>(HIDDEN, 1)});
  critic.to(DT);
  optim::AdamOptions ao;
  ao.lr = LR;
  ao.betas = {0.5, 0.9};
  optim::Adam opt(critic.parameters(), ao);

  std::vector<CriticRow> rows;
  for (int64_t step = 0; step < GP_STEPS; ++step) {
    Tensor alpha = rand({N_SAMPLES, 1}, DT);                             // (N, 1)
    Tensor x_hat = (alpha * real + (1.0 - alpha) * fake).requires_grad_();  // (N, 2)
    Tensor out = critic(x_hat);                                          // (N, 1)
    // d f / d x_hat, kept as a graph (create_graph=true) so the penalty can be differentiated
    Tensor gx = ag::grad({out}, {x_hat}, {ones_like(out)}, std::nullopt, /*create_graph=*/true)[0];
    Tensor gnorm = (gx * gx).sum({1}).sqrt();  // (N,) |grad|_2 per point
    Tensor penalty = (gnorm - 1.0).pow(2).mean();
    Tensor w_dist = critic(real).mean() - critic(fake).mean();
    Tensor loss = -w_dist + lambda * penalty;
    opt.zero_grad();
    loss.backward();  // through tanh, linear and their backward passes: second derivatives
    opt.step();
    rows.push_back({step, loss.item(), w_dist.item(), penalty.item(), gnorm.mean().item()});
  }
  return rows;
}

// ---- (c) Hessian-free Newton on a small MLP ----
const int64_t HF_POINTS = 64, HF_HIDDEN = 8, HF_STEPS = 15, HF_CG_ITERS = 20;
const double HF_DAMPING = 1.0;

struct HfRow {
  int64_t step;
  double loss, grad_norm, damping;
};
struct HfResult {
  std::vector<HfRow> steps;
  std::vector<double> theta;
};

HfResult hessian_free() {
  manual_seed(2);
  Tensor X = randn({HF_POINTS, 2}, DT);                                 // (N, 2)
  Tensor y = sin(2.0 * X.slice(1, 0, 1)) * cos(X.slice(1, 1, 2));       // (N, 1)
  const std::vector<DimVector> shapes = {{2, HF_HIDDEN}, {HF_HIDDEN}, {HF_HIDDEN, 1}, {1}};  // W1, b1, W2, b2
  std::vector<int64_t> sizes;
  for (const DimVector& s : shapes) sizes.push_back(s.size() == 2 ? s[0] * s[1] : s[0]);
  Tensor theta = randn({sizes[0] + sizes[1] + sizes[2] + sizes[3]}, DT) * 0.5;  // all parameters, flat

  auto loss_fn = [&](const Tensor& t) {
    const std::vector<Tensor> p = split(t, sizes, 0);
    Tensor out = matmul(tanh(matmul(X, p[0].view(shapes[0])) + p[1].view(shapes[1])), p[2].view(shapes[2])) +
                 p[3].view(shapes[3]);
    return (out - y).pow(2).mean();
  };
  // dL/dtheta, with its graph
  auto grad_fn = [&](const Tensor& t) { return ag::grad({loss_fn(t)}, {t}, {}, std::nullopt, /*create_graph=*/true)[0]; };
  // H v, forward over reverse: the tangent of the gradient when theta carries the tangent v
  auto hvp = [&](const Tensor& t, const Tensor& v) {
    return func::jvp([&](const std::vector<Tensor>& in) { return grad_fn(in[0]); }, {t.detach().requires_grad_()}, {v})
        .second;
  };

  HfResult r;
  double damping = HF_DAMPING;
  for (int64_t step = 0; step <= HF_STEPS; ++step) {
    Tensor t = theta.detach().requires_grad_();
    Tensor loss = loss_fn(t);
    Tensor g = grad_fn(t).detach();
    r.steps.push_back({step, loss.item(), norm(g).item(), damping});
    if (step == HF_STEPS) break;
    // conjugate gradient on (H + damping I) d = g, from d = 0
    Tensor d = zeros_like(g), res = g.clone(), p = res.clone();
    Tensor rr = (res * res).sum();
    for (int64_t i = 0; i < HF_CG_ITERS; ++i) {
      Tensor Ap = hvp(theta, p) + damping * p;
      Tensor pAp = (p * Ap).sum();
      if (pAp.item() <= 0) break;  // negative curvature: stop
      Tensor alpha = rr / pAp;
      d = d + alpha * p;
      res = res - alpha * Ap;
      Tensor rr_new = (res * res).sum();
      if (rr_new.sqrt().item() < 1e-10) break;
      p = res + (rr_new / rr) * p;
      rr = rr_new;
    }
    // Levenberg-Marquardt: keep the step if it lowers the loss and trust the model more (halve the
    // damping); otherwise stay and damp more
    NoGradGuard no_grad;
    if (loss_fn(theta - d).item() < loss.item()) {
      theta = theta - d;
      damping = damping / 2;
    } else {
      damping = damping * 4;
    }
  }
  r.theta = theta.to_vector<double>();
  return r;
}

// ---- output ----
std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string list(const std::vector<double>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

std::string critic_json(const std::vector<CriticRow>& rows) {
  std::string s = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CriticRow& r = rows[i];
    s += std::string(i ? ", " : "") + "{\"step\": " + std::to_string(r.step) + ", \"loss\": " + num(r.loss) +
         ", \"w_dist\": " + num(r.w_dist) + ", \"penalty\": " + num(r.penalty) + ", \"grad_norm\": " +
         num(r.grad_norm) + "}";
  }
  return s + "]";
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options cli("second_order",
                       "Newton's method with the exact Hessian, a WGAN-GP gradient penalty, and Hessian-free Newton "
                       "with forward-over-reverse Hessian-vector products (float64)");
  cli.add_options()("json", "print one JSON object with every number")("h,help", "show this help");
  bool json = false;
  try {
    auto args = cli.parse(argc, argv);
    if (args.count("help")) {
      std::cout << cli.help() << "\n";
      return 0;
    }
    if (!args.unmatched().empty()) throw std::invalid_argument("unexpected argument '" + args.unmatched()[0] + "'");
    json = args.count("json") > 0;
  } catch (const std::exception& e) {
    std::cerr << "second_order: " << e.what() << " (see --help)\n";
    return 2;
  }

  const NewtonResult nr = newton();
  const std::vector<CriticRow> gp = critic_run(10.0), no_gp = critic_run(0.0);
  const HfResult hf = hessian_free();

  if (json) {
    std::string s = "{\"newton\": {\"steps\": [";
    for (std::size_t i = 0; i < nr.steps.size(); ++i)
      s += std::string(i ? ", " : "") + "{\"step\": " + std::to_string(nr.steps[i].step) + ", \"loss\": " +
           num(nr.steps[i].loss) + ", \"grad_norm\": " + num(nr.steps[i].grad_norm) + "}";
    s += "], \"w\": " + list(nr.w) + ", \"b\": " + list(nr.b) + "}, \"gp\": " + critic_json(gp) +
         ", \"no_gp\": " + critic_json(no_gp) + ", \"hessian_free\": {\"steps\": [";
    for (std::size_t i = 0; i < hf.steps.size(); ++i)
      s += std::string(i ? ", " : "") + "{\"step\": " + std::to_string(hf.steps[i].step) + ", \"loss\": " +
           num(hf.steps[i].loss) + ", \"grad_norm\": " + num(hf.steps[i].grad_norm) + ", \"damping\": " +
           num(hf.steps[i].damping) + "}";
    s += "], \"theta\": " + list(hf.theta) + "}}";
    std::cout << s << "\n";
    return 0;
  }
  std::printf("Newton's method, logistic regression (%d points, %d features, L2 %g)\n", static_cast<int>(N_POINTS),
              static_cast<int>(N_FEATURES), L2);
  for (const NewtonRow& r : nr.steps)
    std::printf("step %2d  loss %.12f  |grad| %.3e\n", static_cast<int>(r.step), r.loss, r.grad_norm);
  std::printf("w");
  for (double v : nr.w) std::printf(" %.12f", v);
  std::printf("  b %.12f\n\n", nr.b[0]);
  for (const auto& [rows, lambda] : {std::pair{&gp, 10.0}, std::pair{&no_gp, 0.0}}) {
    std::printf("WGAN critic, lambda %g\n", lambda);
    for (const CriticRow& r : *rows)
      std::printf("step %2d  loss %12.8f  W %11.8f  penalty %11.8f  mean |df/dx| %.8f\n", static_cast<int>(r.step),
                  r.loss, r.w_dist, r.penalty, r.grad_norm);
    std::printf("\n");
  }
  std::printf("Hessian-free Newton, tanh MLP (%d points, %d hidden, CG %d iterations)\n", static_cast<int>(HF_POINTS),
              static_cast<int>(HF_HIDDEN), static_cast<int>(HF_CG_ITERS));
  for (const HfRow& r : hf.steps)
    std::printf("step %2d  loss %.12f  |grad| %.3e  damping %g\n", static_cast<int>(r.step), r.loss, r.grad_norm, r.damping);
  return 0;
}
