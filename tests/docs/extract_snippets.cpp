// Extracts the C++ code blocks of the README and docs/*.md into one C++ file, so that every
// snippet a reader sees is compiled, and run, by the build (tests/docs/test_doc_snippets.cpp).
//
//   extract_snippets OUT.cpp REPO_DIR FILE.md...
//
// A block fenced as ```cpp is a snippet (a fence of any language with from:PATH is a quotation). With `int main(` it is a whole program, taken as it is;
// without, it is the body of a function that has `#include <ag/ag.h>` and `using namespace ag;`
// (what every doc says its snippets assume). Words after `cpp` on the fence line:
//   no-run     compiled but not run (it needs mpirun, or runs for minutes)
//   from:PATH  not compiled: a quotation of the file PATH (relative to the repo), whose lines the
//              test finds there in order, a line `...` standing for lines left out
// A block fenced as ```text output-of:PATH is what the build's program PATH (relative to the build
// directory, e.g. examples/next_word) prints when run without arguments; the test runs it.
// A block fenced as ```text output right after a snippet (only prose between) is what the snippet
// prints: the test compares it line by line, a line `...` standing for any number of lines.
// Each snippet keeps its place in the markdown through #line, so a compile error names the doc and
// the line. The #include lines of all snippets go to the top of the file.
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Snippet {
  std::string file;  // relative to the repo, e.g. "docs/rng.md"
  std::string path;  // absolute, for #line
  int line = 0;      // of the block's first code line
  std::vector<std::string> code;
  bool program = false, run = true;
  bool has_output = false;
  std::string output;
  std::string from;       // a quotation of this file
  std::string output_of;  // the output of this program of the build
};

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

std::vector<std::string> words(const std::string& s) {
  std::istringstream is(s);
  std::vector<std::string> r;
  for (std::string w; is >> w;) r.push_back(w);
  return r;
}

// A raw string literal holding s (the delimiter does not occur in doc text).
std::string raw(const std::string& s) { return "R\"__doc__(" + s + ")__doc__\""; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: extract_snippets OUT.cpp REPO_DIR FILE.md...\n";
    return 2;
  }
  const std::string repo = argv[2];
  std::vector<Snippet> snippets;
  for (int a = 3; a < argc; ++a) {
    const std::string rel = argv[a];
    std::ifstream in(repo + "/" + rel);
    if (!in) {
      std::cerr << "extract_snippets: cannot read " << repo << "/" << rel << "\n";
      return 1;
    }
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    bool last_was_snippet = false;  // no other block since the last snippet
    for (size_t i = 0; i < lines.size(); ++i) {
      // fences may be indented (inside a list item); the indent is removed from the block
      const size_t indent = lines[i].find_first_not_of(' ');
      if (indent == std::string::npos || !starts_with(lines[i].substr(indent), "```")) continue;
      const std::vector<std::string> info = words(lines[i].substr(indent + 3));
      std::vector<std::string> body;
      size_t j = i + 1;
      for (; j < lines.size() && !starts_with(lines[j].substr(std::min(indent, lines[j].size())), "```"); ++j) {
        body.push_back(lines[j].size() >= indent ? lines[j].substr(indent) : std::string());
      }
      if (j == lines.size()) {
        std::cerr << rel << ":" << i + 1 << ": a code block that is never closed\n";
        return 1;
      }
      const std::string lang = info.empty() ? "" : info[0];
      bool quotes = false;
      for (const auto& w : info) quotes |= starts_with(w, "from:");
      if (lang == "cpp" || quotes) {
        Snippet s;
        s.file = rel;
        s.path = repo + "/" + rel;
        s.line = static_cast<int>(i) + 2;
        s.code = body;
        for (const auto& l : body) s.program |= l.find("int main(") != std::string::npos;
        if (lang != "cpp") s.run = false;
        for (size_t w = 1; w < info.size(); ++w) {
          if (info[w] == "no-run") {
            s.run = false;
          } else if (starts_with(info[w], "from:")) {
            s.from = info[w].substr(5);
            s.run = false;
          } else {
            std::cerr << rel << ":" << i + 1 << ": unknown word on a cpp fence: " << info[w] << "\n";
            return 1;
          }
        }
        snippets.push_back(s);
        last_was_snippet = true;
      } else if (lang == "text" && info.size() > 1 && starts_with(info[1], "output-of:")) {
        Snippet s;
        s.file = rel;
        s.line = static_cast<int>(i) + 2;
        s.run = false;
        s.output_of = info[1].substr(10);
        s.has_output = true;
        for (const auto& l : body) s.output += l + "\n";
        snippets.push_back(s);
        last_was_snippet = false;
      } else if (lang == "text" && info.size() > 1 && info[1] == "output") {
        if (!last_was_snippet || snippets.back().has_output || !snippets.back().run) {
          std::cerr << rel << ":" << i + 1 << ": a ```text output block must follow a snippet that runs\n";
          return 1;
        }
        snippets.back().has_output = true;
        for (const auto& l : body) snippets.back().output += l + "\n";
        last_was_snippet = false;
      } else {
        last_was_snippet = false;
      }
      i = j;
    }
  }

  std::ostringstream out;
  out << "// Generated by tests/docs/extract_snippets.cpp from the README and docs/: do not edit.\n";
  std::set<std::string> includes{"#include <ag/ag.h>"};
  for (auto& s : snippets) {
    if (!s.from.empty() || !s.output_of.empty()) continue;
    for (auto& l : s.code) {
      if (starts_with(l, "#include")) {
        includes.insert(l);
        l.clear();  // keeps the line count for #line
      }
    }
  }
  for (const auto& inc : includes) out << inc << "\n";
  out << "#include \"docs/doc_snippets.h\"\n\n";
  for (size_t k = 0; k < snippets.size(); ++k) {
    const Snippet& s = snippets[k];
    if (!s.from.empty() || !s.output_of.empty()) continue;
    out << "namespace doc_snippet_" << k << " {\n";
    if (!s.program) out << "void run() {\nusing namespace ag;\n";
    out << "#line " << s.line << " \"" << s.path << "\"\n";
    for (std::string l : s.code) {
      // a program's main lives in a namespace here, where it has no implicit `return 0`: as
      // `auto main(` it returns void unless it returns a value
      const size_t m = l.find("int main(");
      if (s.program && m != std::string::npos) l.replace(m, 3, "auto");
      out << l << "\n";
    }
    if (!s.program) out << "}\n";
    out << "}  // namespace doc_snippet_" << k << "\n";
  }
  out << "\nconst std::vector<DocSnippet>& doc_snippets() {\n  static const std::vector<DocSnippet> all = {\n";
  for (size_t k = 0; k < snippets.size(); ++k) {
    const Snippet& s = snippets[k];
    std::string fn = "nullptr";
    if (s.run) fn = s.program ? "[] { doc_snippet_" + std::to_string(k) + "::main(); }" : "&doc_snippet_" + std::to_string(k) + "::run";
    std::string quoted;
    if (!s.from.empty()) {
      for (const auto& l : s.code) quoted += l + "\n";
    }
    out << "      {\"" << s.file << "\", " << s.line << ", " << fn << ", " << (s.has_output ? "true" : "false") << ", "
        << raw(s.output) << ", \"" << s.from << "\", " << raw(quoted) << ", \"" << s.output_of << "\"},\n";
  }
  out << "  };\n  return all;\n}\n";

  // Rewrite only on change, so that an edit of the prose alone rebuilds nothing.
  const std::string text = out.str();
  std::ifstream old(argv[1]);
  std::ostringstream prev;
  prev << old.rdbuf();
  if (old && prev.str() == text) return 0;
  std::ofstream f(argv[1]);
  f << text;
  return f ? 0 : 1;
}
