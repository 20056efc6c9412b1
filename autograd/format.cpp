#include "autograd/format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ag {

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  // Python switches to exponent notation from 1e16 up and below 1e-4, like %g; it always shows a
  // decimal point or an exponent.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace ag
