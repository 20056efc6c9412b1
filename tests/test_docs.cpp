// The docs stay true to the code they point into: docs/autograd.md walks through
// autograd/engine.cpp with line references ("(`run_node`, line 144)"), and each must still land
// on a line that holds what it names.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read(const std::string& rel) {
  std::ifstream f(std::string(AG_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(f.good()) << "cannot open " << rel;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> r;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) r.push_back(line);
  return r;
}

}  // namespace

TEST(Docs, AutogradWalkthroughLineReferencesLandOnWhatTheyName) {
  const std::string doc = read("docs/autograd.md");
  const std::vector<std::string> engine = lines(read("autograd/engine.cpp"));
  // "`token`, line N": engine.cpp's line N holds the token (the walkthrough names no other file this way)
  const std::regex ref("`([^`]+)`, line ([0-9]+)");
  int checked = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), ref); it != std::sregex_iterator(); ++it) {
    const std::string token = (*it)[1];
    const std::size_t n = std::stoul((*it)[2]);
    ASSERT_GE(n, 1u);
    ASSERT_LE(n, engine.size()) << "docs/autograd.md points past the end of engine.cpp: `" << token << "`, line " << n;
    EXPECT_NE(engine[n - 1].find(token), std::string::npos)
        << "docs/autograd.md says `" << token << "` is at engine.cpp line " << n << ", which reads:\n"
        << engine[n - 1];
    ++checked;
  }
  EXPECT_GE(checked, 7);  // the walkthrough's references: run_backward, the four steps, first_visit, release
}
