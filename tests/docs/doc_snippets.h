// The snippets of the README and docs/, as extract_snippets.cpp collects them.
#pragma once

#include <string>
#include <vector>

struct DocSnippet {
  const char* file;  // relative to the repo
  int line;          // of the snippet's first line
  void (*run)();     // null for a snippet that is compiled only
  bool has_output;   // the doc shows what it prints
  const char* output;
  const char* from;    // non-empty: the snippet quotes this file (relative to the repo), not compiled
  const char* quoted;  // the quotation's lines
  const char* output_of;  // non-empty: `output` is what this program of the build prints (e.g. examples/next_word)
};

const std::vector<DocSnippet>& doc_snippets();
