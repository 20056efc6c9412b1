// Every code block of the README and docs/ stays true:
// - each C++ snippet is compiled into this program (extract_snippets.cpp), and run, one test each
//   (DocSnippets.<file>_<line>); where the doc shows what it prints, the output must be that, a
//   line "..." standing for any number of lines;
// - each quotation of a source file (```cpp from:PATH) is still in that file;
// - each path a shell block names (tools/..., bench/..., ./build/examples/...) exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <ag/ag.h>

#include "docs/doc_snippets.h"

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> r;
  std::istringstream is(text);
  for (std::string l; std::getline(is, l);) {
    while (!l.empty() && l.back() == ' ') l.pop_back();
    r.push_back(l);
  }
  return r;
}

// True if `got` reads as `want`, where a line "..." of want matches any run of lines.
bool matches(const std::vector<std::string>& want, size_t w, const std::vector<std::string>& got, size_t g) {
  if (w == want.size()) return g == got.size();
  if (want[w] == "...") {
    for (size_t k = g; k <= got.size(); ++k) {
      if (matches(want, w + 1, got, k)) return true;
    }
    return false;
  }
  return g < got.size() && want[w] == got[g] && matches(want, w + 1, got, g + 1);
}

class SnippetTest : public testing::Test {
 public:
  explicit SnippetTest(const DocSnippet& s) : s_(s) {}
  void TestBody() override {
    // each snippet starts as a fresh program would
    ag::manual_seed(67280421310721);
    std::ostringstream captured;
    std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
    try {
      s_.run();
    } catch (...) {
      std::cout.rdbuf(old);
      throw;
    }
    std::cout.rdbuf(old);
    if (std::getenv("AG_DOC_SHOW")) std::cerr << s_.file << ":" << s_.line << " prints\n" << captured.str();
    if (s_.has_output) {
      EXPECT_TRUE(matches(lines_of(s_.output), 0, lines_of(captured.str()), 0))
          << s_.file << ":" << s_.line << " shows that it prints\n"
          << s_.output << "but it printed\n"
          << captured.str();
    }
  }

 private:
  DocSnippet s_;
};

std::string test_name(const DocSnippet& s) {
  std::string n = std::string(s.file) + "_line" + std::to_string(s.line);
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

const bool registered = [] {
  for (const DocSnippet& s : doc_snippets()) {
    if (!s.run) continue;
    testing::RegisterTest("DocSnippets", test_name(s).c_str(), nullptr, nullptr, s.file, s.line,
                          [s]() -> testing::Test* { return new SnippetTest(s); });
  }
  return true;
}();

std::string read(const std::string& rel) {
  std::ifstream f(std::string(AG_SOURCE_DIR) + "/" + rel);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

}  // namespace

TEST(DocBlocks, EverySnippetIsCompiledAndTheDocsShowSome) {
  // the snippets are in this program; the docs have a good number of them, most of them run
  int run = 0;
  for (const DocSnippet& s : doc_snippets()) run += s.run != nullptr;
  EXPECT_GE(doc_snippets().size(), 20u);
  EXPECT_GE(run, 15);
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a);
}

TEST(DocBlocks, EveryQuotationIsStillInItsFile) {
  int checked = 0;
  for (const DocSnippet& s : doc_snippets()) {
    if (!*s.from) continue;
    const std::string text = read(s.from);
    ASSERT_FALSE(text.empty()) << s.file << ":" << s.line << " quotes " << s.from << ", which is not there";
    std::vector<std::string> file = lines_of(text), want;
    // compared trimmed, blank lines left out on both sides
    std::erase_if(file, [](std::string& l) { return (l = trim(l)).empty(); });
    for (const auto& l : lines_of(s.quoted)) {
      if (!trim(l).empty()) want.push_back(trim(l));
    }
    EXPECT_TRUE(matches(want, 0, file, 0) || [&] {
      // the quotation is a run of the file's lines: try it against the file from each line on,
      // with "..." at both ends
      std::vector<std::string> loose{"..."};
      loose.insert(loose.end(), want.begin(), want.end());
      loose.push_back("...");
      return matches(loose, 0, file, 0);
    }()) << s.file << ":" << s.line << " quotes lines that are not (or no longer) in " << s.from << ":\n"
         << s.quoted;
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

TEST(DocBlocks, EveryProgramOutputShownIsWhatItPrints) {
  int checked = 0;
  for (const DocSnippet& s : doc_snippets()) {
    if (!*s.output_of) continue;
    const bool have = std::string(s.output_of).rfind("examples/", 0) == 0 ? AG_DOCS_HAVE_EXAMPLES : AG_DOCS_HAVE_BENCH;
    if (!have) continue;
    const std::string cmd = std::string(AG_BINARY_DIR) + "/" + s.output_of;
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr) << cmd;
    std::string got;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) got.append(buf, n);
    EXPECT_EQ(pclose(p), 0) << cmd;
    EXPECT_TRUE(matches(lines_of(s.output), 0, lines_of(got), 0))
        << s.file << ":" << s.line << " shows that " << s.output_of << " prints\n"
        << s.output << "but it printed\n"
        << got;
    ++checked;
  }
  if (AG_DOCS_HAVE_EXAMPLES) EXPECT_GE(checked, 1);
}

TEST(DocBlocks, EveryPathAShellBlockNamesExists) {
  // repo paths in ```sh blocks, and the build's programs where this build has them
  const std::regex repo_path(R"((?:^|[\s=])((?:tools|bench|examples|tests|docs)/[A-Za-z0-9_./-]+))");
  const std::regex built(R"(\./build/((examples|bench|tests)/[A-Za-z0-9_./-]+))");
  int checked = 0;
  std::vector<std::string> files;
  std::istringstream list(AG_DOC_FILES);  // "README.md:docs/autograd.md:..."
  for (std::string f; std::getline(list, f, ':');) files.push_back(f);
  EXPECT_GE(files.size(), 10u);
  for (const std::string& file : files) {
    const std::vector<std::string> lines = lines_of(read(file));
    bool in_sh = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      const std::string t = l.substr(std::min(l.size(), l.find_first_not_of(' ')));
      if (t.rfind("```", 0) == 0) {
        in_sh = !in_sh && (t == "```sh");
        continue;
      }
      if (!in_sh) continue;
      for (auto it = std::sregex_iterator(l.begin(), l.end(), repo_path); it != std::sregex_iterator(); ++it) {
        std::string p = (*it)[1];
        while (!p.empty() && (p.back() == '.' || p.back() == '/')) p.pop_back();
        EXPECT_TRUE(exists(std::string(AG_SOURCE_DIR) + "/" + p)) << file << ":" << i + 1 << " names " << p << ", which is not there";
        ++checked;
      }
      for (auto it = std::sregex_iterator(l.begin(), l.end(), built); it != std::sregex_iterator(); ++it) {
        const std::string dir = (*it)[2];
        const bool have = dir == "examples" ? AG_DOCS_HAVE_EXAMPLES : dir == "bench" ? AG_DOCS_HAVE_BENCH : true;
        if (!have) continue;
        EXPECT_TRUE(exists(std::string(AG_BINARY_DIR) + "/" + std::string((*it)[1])))
            << file << ":" << i + 1 << " runs ./build/" << (*it)[1] << ", which this build does not make";
        ++checked;
      }
    }
  }
  EXPECT_GE(checked, 10);
}
