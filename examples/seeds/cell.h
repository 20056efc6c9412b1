// Helpers for the seed replays: each notebook cell's printed output is preceded by a marker line
// "### In [N]" so that tests can compare it, block by block, with the seed document.
#pragma once

#include <iostream>
#include <string>

#include "autograd/autograd.h"

namespace seeds {

inline void cell(const std::string& n) { std::cout << "### In [" << n << "]\n"; }

// print(x) for anything with operator<<, plus Python's print of a torch.Size and of a string
template <class T>
void print(const T& x) {
  std::cout << x << "\n";
}
inline void print(const std::string& label, const ag::Size& s) { std::cout << label << " " << s << "\n"; }

}  // namespace seeds
