// Element types a tensor can hold, and the helpers that dispatch a kernel on them.
#pragma once

#include <cmath>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ag {

// float32 is the default, as in PyTorch. Int64 holds token ids and class indices, Bool holds
// masks; neither takes part in autograd.
enum class DType { Float32, Float64, Int64, Bool };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kDouble = DType::Float64;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kLong = DType::Int64;
inline constexpr DType kBool = DType::Bool;

inline std::size_t element_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}

// PyTorch's spelling: "torch.float32", used in printing and error messages.
inline std::string dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "torch.float32";
    case DType::Float64: return "torch.float64";
    case DType::Int64: return "torch.int64";
    case DType::Bool: return "torch.bool";
  }
  return "?";
}

inline bool is_floating(DType t) { return t == DType::Float32 || t == DType::Float64; }

// A number C++ handed us as a double that PyTorch would have seen as a Python int: whole, and
// small enough for int64 to hold exactly (inf, NaN and 1e30 are floats).
inline bool is_whole_number(double v) { return std::isfinite(v) && std::floor(v) == v && std::abs(v) <= 9007199254740992.0; }

// Result type of a binary op between two tensors (PyTorch's promotion restricted to our types).
inline DType promote(DType a, DType b) {
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  if (a == DType::Float32 || b == DType::Float32) return DType::Float32;
  if (a == DType::Int64 || b == DType::Int64) return DType::Int64;
  return DType::Bool;
}

// Calls f.template operator()<T>() with T = float or double. Kernels are written once as
// template lambdas: dispatch_float(t, "exp", [&]<typename T>() { ... });
template <class F>
decltype(auto) dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default:
      throw std::invalid_argument(std::string("[") + op + "] expected a floating point tensor, got " +
                                  dtype_name(t));
  }
}

// Same over every storage type (bool is stored as uint8_t).
template <class F>
decltype(auto) dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Bool: return f.template operator()<uint8_t>();
  }
  return f.template operator()<float>();
}

}  // namespace ag
