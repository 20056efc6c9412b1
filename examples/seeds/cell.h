// Helpers for the seed replays: each notebook cell's printed output is preceded by a marker line
// "### In [N]" so that tests can compare it, block by block, with the seed document.
#pragma once

#include <iostream>
#include <string>

#include <ag/ag.h>

namespace seeds {

inline void cell(const std::string& n) { std::cout << "### In [" << n << "]\n"; }

// The replays take no arguments; anything else is an error (one line, exit status 2).
inline bool reject_arguments(int argc, char** argv) {
  if (argc <= 1) return false;
  std::cerr << argv[0] << ": takes no arguments, got '" << argv[1] << "'\n";
  return true;
}

// print(x) for anything with operator<<, plus Python's print of a torch.Size and of a string
template <class T>
void print(const T& x) {
  std::cout << x << "\n";
}
inline void print(const std::string& label, const ag::Size& s) { std::cout << label << " " << s << "\n"; }

}  // namespace seeds
