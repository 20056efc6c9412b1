#include "optim/optimizer.h"

#include "autograd/format.h"

#include <cmath>
#include <stdexcept>

namespace ag::optim {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument(msg);
}

// The parameter, its gradient and a state tensor as raw contiguous arrays. Every step loops over
// the parameter's numel with the gradient beside it, so a gradient of another shape or dtype
// (set_grad refuses one, but a .grad written through impl() is not checked) is an error before
// the loop, never a read past its buffer.
template <class T>
T* raw(const Tensor& t, const Tensor& param, const char* who) {
  if (t.dtype() != param.dtype() || t.shape() != param.shape()) {
    throw std::invalid_argument(std::string("[") + who + "] the gradient (" + dtype_name(t.dtype()) + ", shape " +
                                t.shape().str() + ") does not match its parameter (" + dtype_name(param.dtype()) +
                                ", shape " + param.shape().str() + ")");
  }
  if (!t.is_contiguous()) throw std::invalid_argument(std::string("[") + who + "] expects contiguous parameters and gradients");
  return t.data_ptr<T>();
}

// Adam's (and AdamW's) update of one parameter, element by element in one pass: each element
// gets the operations of PyTorch's single-tensor Adam in its order, so the bits do not depend on
// how the loop is vectorized. The variants are separate loops, so each one vectorizes (no branch
// per element). Floats run an AVX-512F build where the CPU has it (16 at a time).
template <class T>
struct AdamConsts {
  T beta1, beta2, one_m_b1, one_m_b2, wd, decay, bc2, eps, neg_step;
};
template <class T, bool L2, bool DecayFirst, bool Amsgrad>
__attribute__((always_inline)) inline void adam_loop(int64_t n, T* __restrict pp, const T* __restrict pg, T* __restrict m,
                                                     T* __restrict v, T* __restrict vmax, const AdamConsts<T>& c) {
  for (int64_t j = 0; j < n; ++j) {
    T p = pp[j];
    if constexpr (DecayFirst) p = p * c.decay;                               // param.mul_(1 - lr*wd)
    const T grad = L2 ? pg[j] + c.wd * p : pg[j];                            // grad = grad.add(param, alpha=wd)
    const T mj = m[j] * c.beta1 + c.one_m_b1 * grad;                         // exp_avg.mul_(b1).add_(grad, alpha=1-b1)
    const T vj = v[j] * c.beta2 + c.one_m_b2 * (grad * grad);                // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)
    m[j] = mj;
    v[j] = vj;
    T second = vj;
    if constexpr (Amsgrad) second = vmax[j] = vmax[j] > vj ? vmax[j] : vj;   // torch.maximum(max_exp_avg_sq, exp_avg_sq)
    const T denom = std::sqrt(second) / c.bc2 + c.eps;                       // (v.sqrt() / bc2_sqrt).add_(eps)
    pp[j] = p + c.neg_step * (mj / denom);                                   // param.addcdiv_(m, denom, -step_size)
  }
}
template <class T>
__attribute__((always_inline)) inline void adam_body(int64_t n, T* pp, const T* pg, T* m, T* v, T* vmax, const AdamConsts<T>& c,
                                                     bool l2, bool decay_first) {
  if (vmax) {
    if (l2) adam_loop<T, true, false, true>(n, pp, pg, m, v, vmax, c);
    else if (decay_first) adam_loop<T, false, true, true>(n, pp, pg, m, v, vmax, c);
    else adam_loop<T, false, false, true>(n, pp, pg, m, v, vmax, c);
  } else {
    if (l2) adam_loop<T, true, false, false>(n, pp, pg, m, v, vmax, c);
    else if (decay_first) adam_loop<T, false, true, false>(n, pp, pg, m, v, vmax, c);
    else adam_loop<T, false, false, false>(n, pp, pg, m, v, vmax, c);
  }
}
__attribute__((target_clones("avx512f", "default"))) void adam_update(int64_t n, float* pp, const float* pg, float* m, float* v,
                                                                       float* vmax, const AdamConsts<float>& c, bool l2,
                                                                       bool decay_first) {
  adam_body(n, pp, pg, m, v, vmax, c, l2, decay_first);
}
void adam_update(int64_t n, double* pp, const double* pg, double* m, double* v, double* vmax, const AdamConsts<double>& c, bool l2,
                 bool decay_first) {
  adam_body(n, pp, pg, m, v, vmax, c, l2, decay_first);
}

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr) : params_(std::move(params)), lr_(lr) {
  if (params_.empty()) throw std::invalid_argument("optimizer got an empty parameter list");
  for (const Tensor& p : params_) {
    if (!p.defined() || !p.is_floating_point()) throw std::invalid_argument("optimizer can only optimize floating point tensors");
    if (!p.is_leaf()) throw std::invalid_argument("can't optimize a non-leaf Tensor");
  }
}

void Optimizer::zero_grad(bool set_to_none) { zero_grads(params_, set_to_none); }

void Optimizer::set_lr(double lr) {
  require(lr >= 0.0, "Invalid learning rate: " + py_float_repr(lr));
  lr_ = lr;
}

void Optimizer::set_momentum(double) { throw std::invalid_argument("set_momentum: this optimizer has no momentum"); }

void Optimizer::set_betas(std::pair<double, double>) { throw std::invalid_argument("set_betas: this optimizer has no betas"); }

static void check_momentum(double momentum) { require(momentum >= 0.0, "Invalid momentum value: " + py_float_repr(momentum)); }

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, const SGDOptions& o) : Optimizer(std::move(params), o.lr.value_or(0.0)), opt_(o) {
  require(o.lr.has_value(), "SGD: lr is required (there is no default learning rate)");
  require(*o.lr >= 0.0, "Invalid learning rate: " + py_float_repr(*o.lr));
  check_momentum(o.momentum);
  require(o.weight_decay >= 0.0, "Invalid weight_decay value: " + py_float_repr(o.weight_decay));
  require(!o.nesterov || (o.momentum > 0 && o.dampening == 0), "Nesterov momentum requires a momentum and zero dampening");
  momentum_buffer_.resize(params_.size());
}

void SGD::set_momentum(double momentum) {
  check_momentum(momentum);
  opt_.momentum = momentum;
}

void SGD::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    dispatch_float(p.dtype(), "SGD", [&]<typename T>() {
      T* pp = raw<T>(p, p, "SGD");
      const T* pg = raw<T>(g, p, "SGD");
      const int64_t n = p.numel();
      const T wd = static_cast<T>(opt_.weight_decay), mom = static_cast<T>(opt_.momentum);
      const T keep = static_cast<T>(1.0 - opt_.dampening), lr = static_cast<T>(lr_);
      const bool first = !momentum_buffer_[i].defined();
      if (opt_.momentum != 0.0 && first) momentum_buffer_[i] = zeros(p.shape().vec(), p.dtype());
      T* buf = opt_.momentum != 0.0 ? momentum_buffer_[i].data_ptr<T>() : nullptr;
      for (int64_t j = 0; j < n; ++j) {
        T d = pg[j];
        if (opt_.weight_decay != 0.0) d = d + wd * pp[j];  // d_p = d_p.add(param, alpha=wd)
        if (buf) {
          buf[j] = first ? d : buf[j] * mom + keep * d;  // buf.mul_(momentum).add_(d_p, alpha=1-dampening)
          d = opt_.nesterov ? d + mom * buf[j] : buf[j];
        }
        pp[j] = pp[j] - lr * d;  // param.add_(d_p, alpha=-lr)
      }
    });
    ++p.impl()->storage->version;
  }
}

// ---- Adam / AdamW ----

static void check_betas(std::pair<double, double> betas) {
  require(betas.first >= 0.0 && betas.first < 1.0, "Invalid beta parameter at index 0: " + py_float_repr(betas.first));
  require(betas.second >= 0.0 && betas.second < 1.0, "Invalid beta parameter at index 1: " + py_float_repr(betas.second));
}

static void check_adam(const AdamOptions& o) {
  require(o.lr >= 0.0, "Invalid learning rate: " + py_float_repr(o.lr));
  require(o.eps >= 0.0, "Invalid epsilon value: " + py_float_repr(o.eps));
  check_betas(o.betas);
  require(o.weight_decay >= 0.0, "Invalid weight_decay value: " + py_float_repr(o.weight_decay));
}

void Adam::set_betas(std::pair<double, double> betas) {
  check_betas(betas);
  opt_.betas = betas;
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o) : Adam(std::move(params), o, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& o, bool decoupled, const char*)
    : Optimizer(std::move(params), o.lr), opt_(o), decoupled_(decoupled) {
  check_adam(o);
  step_.assign(params_.size(), 0);
  exp_avg_.resize(params_.size());
  exp_avg_sq_.resize(params_.size());
  max_exp_avg_sq_.resize(params_.size());
}

static AdamOptions as_adam(const AdamWOptions& o) { return {o.lr, o.betas, o.eps, o.weight_decay, o.amsgrad}; }

AdamW::AdamW(std::vector<Tensor> params, const AdamWOptions& o) : Adam(std::move(params), as_adam(o), true, "AdamW") {}

void Adam::step() {
  NoGradGuard no_grad;
  const double b1 = opt_.betas.first, b2 = opt_.betas.second;
  double last_step = 0, bias_correction1 = 0, bias_correction2 = 0;  // parameters at one step share these
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const double step = static_cast<double>(++step_[i]);  // this parameter's state['step']
    if (step != last_step) {
      bias_correction1 = 1 - std::pow(b1, step);
      bias_correction2 = 1 - std::pow(b2, step);
      last_step = step;
    }
    const double step_size = lr_ / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    if (!exp_avg_[i].defined()) {
      exp_avg_[i] = zeros(p.shape().vec(), p.dtype());
      exp_avg_sq_[i] = zeros(p.shape().vec(), p.dtype());
      if (opt_.amsgrad) max_exp_avg_sq_[i] = zeros(p.shape().vec(), p.dtype());
    }
    dispatch_float(p.dtype(), decoupled_ ? "AdamW" : "Adam", [&]<typename T>() {
      T* pp = raw<T>(p, p, "Adam");
      const T* pg = raw<T>(g, p, "Adam");
      T* m = exp_avg_[i].data_ptr<T>();
      T* v = exp_avg_sq_[i].data_ptr<T>();
      T* vmax = opt_.amsgrad ? max_exp_avg_sq_[i].data_ptr<T>() : nullptr;
      const T beta1 = static_cast<T>(b1), beta2 = static_cast<T>(b2);
      const T one_m_b1 = static_cast<T>(1 - b1), one_m_b2 = static_cast<T>(1 - b2);
      const T wd = static_cast<T>(opt_.weight_decay), decay = static_cast<T>(1 - lr_ * opt_.weight_decay);
      const T bc2 = static_cast<T>(bias_correction2_sqrt), eps = static_cast<T>(opt_.eps);
      const T neg_step = static_cast<T>(-step_size);
      const AdamConsts<T> c{beta1, beta2, one_m_b1, one_m_b2, wd, decay, bc2, eps, neg_step};
      const bool l2 = !decoupled_ && opt_.weight_decay != 0.0, decay_first = decoupled_ && opt_.weight_decay != 0.0;
      adam_update(p.numel(), pp, pg, m, v, vmax, c, l2, decay_first);
    });
    ++p.impl()->storage->version;
  }
}

// ---- RMSprop / Adagrad ----
// PyTorch's CPU kernels round add(x, alpha=a) and addcmul as one fused multiply-add and addcdiv
// as self + (value * t1) / t2; std::fma and that order reproduce PyTorch's float64 bits.

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& o) : Optimizer(std::move(params), o.lr), opt_(o) {
  require(o.lr >= 0.0, "Invalid learning rate: " + py_float_repr(o.lr));
  require(o.eps >= 0.0, "Invalid epsilon value: " + py_float_repr(o.eps));
  check_momentum(o.momentum);
  require(o.weight_decay >= 0.0, "Invalid weight_decay value: " + py_float_repr(o.weight_decay));
  require(o.alpha >= 0.0, "Invalid alpha value: " + py_float_repr(o.alpha));
  square_avg_.resize(params_.size());
  grad_avg_.resize(params_.size());
  momentum_buffer_.resize(params_.size());
}

void RMSprop::set_momentum(double momentum) {
  check_momentum(momentum);
  opt_.momentum = momentum;
}

void RMSprop::step() {
  NoGradGuard no_grad;
  const bool use_momentum = opt_.momentum > 0;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!square_avg_[i].defined()) square_avg_[i] = zeros(p.shape().vec(), p.dtype());
    if (opt_.centered && !grad_avg_[i].defined()) grad_avg_[i] = zeros(p.shape().vec(), p.dtype());
    // created when momentum first turns positive (PyTorch creates it at the first step)
    if (use_momentum && !momentum_buffer_[i].defined()) momentum_buffer_[i] = zeros(p.shape().vec(), p.dtype());
    dispatch_float(p.dtype(), "RMSprop", [&]<typename T>() {
      T* pp = raw<T>(p, p, "RMSprop");
      const T* pg = raw<T>(g, p, "RMSprop");
      T* v = square_avg_[i].data_ptr<T>();
      T* a = opt_.centered ? grad_avg_[i].data_ptr<T>() : nullptr;
      T* buf = use_momentum ? momentum_buffer_[i].data_ptr<T>() : nullptr;
      const T alpha = static_cast<T>(opt_.alpha), one_m_alpha = static_cast<T>(1 - opt_.alpha);
      const T wd = static_cast<T>(opt_.weight_decay), eps = static_cast<T>(opt_.eps);
      const T mom = static_cast<T>(opt_.momentum), neg_lr = static_cast<T>(-lr_);
      const int64_t n = p.numel();
      for (int64_t j = 0; j < n; ++j) {
        const T grad = opt_.weight_decay != 0.0 ? std::fma(pp[j], wd, pg[j]) : pg[j];  // grad.add(param, alpha=wd)
        v[j] = std::fma(one_m_alpha * grad, grad, v[j] * alpha);  // square_avg.mul_(alpha).addcmul_(grad, grad, value=1-alpha)
        T avg;
        if (a) {
          a[j] = std::fma(grad, one_m_alpha, a[j] * alpha);  // grad_avg.mul_(alpha).add_(grad, alpha=1-alpha)
          avg = std::sqrt(std::fma(-a[j], a[j], v[j]));     // square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        } else {
          avg = std::sqrt(v[j]);
        }
        avg = avg + eps;
        if (buf) {
          buf[j] = buf[j] * mom + grad / avg;       // buf.mul_(momentum).addcdiv_(grad, avg)
          pp[j] = std::fma(buf[j], neg_lr, pp[j]);  // param.add_(buf, alpha=-lr)
        } else {
          pp[j] = pp[j] + (neg_lr * grad) / avg;    // param.addcdiv_(grad, avg, value=-lr)
        }
      }
    });
    ++p.impl()->storage->version;
  }
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& o) : Optimizer(std::move(params), o.lr), opt_(o) {
  require(o.lr >= 0.0, "Invalid learning rate: " + py_float_repr(o.lr));
  require(o.lr_decay >= 0.0, "Invalid lr_decay value: " + py_float_repr(o.lr_decay));
  require(o.weight_decay >= 0.0, "Invalid weight_decay value: " + py_float_repr(o.weight_decay));
  require(o.initial_accumulator_value >= 0.0,
          "Invalid initial_accumulator_value value: " + py_float_repr(o.initial_accumulator_value));
  require(o.eps >= 0.0, "Invalid epsilon value: " + py_float_repr(o.eps));
  for (const Tensor& p : params_) sum_.push_back(full_like(p, o.initial_accumulator_value));  // state['sum']
  step_.assign(params_.size(), 0);
}

void Adagrad::step() {
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    const double clr = lr_ / (1 + static_cast<double>(++step_[i] - 1) * opt_.lr_decay);
    dispatch_float(p.dtype(), "Adagrad", [&]<typename T>() {
      T* pp = raw<T>(p, p, "Adagrad");
      const T* pg = raw<T>(g, p, "Adagrad");
      T* sum = sum_[i].data_ptr<T>();
      const T wd = static_cast<T>(opt_.weight_decay), eps = static_cast<T>(opt_.eps), neg_clr = static_cast<T>(-clr);
      const int64_t n = p.numel();
      for (int64_t j = 0; j < n; ++j) {
        const T grad = opt_.weight_decay != 0.0 ? std::fma(pp[j], wd, pg[j]) : pg[j];  // grad.add(param, alpha=wd)
        sum[j] = std::fma(grad, grad, sum[j]);                                          // state_sum.addcmul_(grad, grad, value=1)
        pp[j] = pp[j] + (neg_clr * grad) / (std::sqrt(sum[j]) + eps);                   // param.addcdiv_(grad, std, value=-clr)
      }
    });
    ++p.impl()->storage->version;
  }
}

}  // namespace ag::optim
