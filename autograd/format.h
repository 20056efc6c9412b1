// Number formatting shared by messages and reprs.
#pragma once

#include <string>

namespace ag {

// Python's repr() of a float: the shortest string that reads back to the same double
// ("0.1", "-1.0", "1e-05", "inf"), so messages read exactly like PyTorch's.
std::string py_float_repr(double v);

}  // namespace ag
