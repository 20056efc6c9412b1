// safetensors checkpoints: bit-exact round trips, the file layout, loading PyTorch's files,
// rejection of malformed files (with the module left untouched) and atomic saves.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "golden_io.h"
#include "nn/attention.h"
#include "nn/checkpoint.h"

using namespace ag;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/ag_ckpt_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A file with the given header text and data; hlen overrides the header length field.
std::string raw_file(const std::string& header, const std::string& data, std::optional<uint64_t> hlen = std::nullopt) {
  uint64_t n = hlen.value_or(header.size());
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::vector<uint32_t> bits(const Tensor& t) {
  std::vector<uint32_t> out;
  for (float v : t.to_vector<float>()) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    out.push_back(b);
  }
  return out;
}

std::string load_error(nn::Module& m, const std::string& path) {
  try {
    nn::load(m, path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST(Checkpoint, RoundTripIsBitExactForFloat32AndFloat64) {
  TempDir dir;
  for (DType dt : {kFloat32, kFloat64}) {
    manual_seed(1);
    nn::MultiHeadAttention a(4, 6, 5, 0.0, 3, true);
    a.to(dt);
    nn::save(a, dir.file("mha.safetensors"));
    manual_seed(2);
    nn::MultiHeadAttention b(4, 6, 5, 0.0, 3, true);
    b.to(dt);
    nn::load(b, dir.file("mha.safetensors"));
    const auto sa = a.state_dict(), sb = b.state_dict();
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].first, sb[i].first);
      EXPECT_EQ(sb[i].second.dtype(), dt);
      const auto x = sa[i].second.to_vector<double>(), y = sb[i].second.to_vector<double>();
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.size() * sizeof(double))) << sa[i].first;
    }
  }
}

TEST(Checkpoint, FileLayoutIsSafetensors) {
  TempDir dir;
  manual_seed(0);
  nn::Linear lin(3, 2);
  nn::save(lin, dir.file("lin.safetensors"));
  const std::string bytes = read_bytes(dir.file("lin.safetensors"));
  uint64_t hlen = 0;
  std::memcpy(&hlen, bytes.data(), 8);
  EXPECT_EQ(hlen % 8, 0u);
  const auto header = nlohmann::json::parse(bytes.substr(8, hlen));
  EXPECT_EQ(header["weight"]["dtype"], "F32");
  EXPECT_EQ(header["weight"]["shape"], nlohmann::json::array({2, 3}));
  EXPECT_EQ(header["weight"]["data_offsets"], nlohmann::json::array({0, 24}));
  EXPECT_EQ(header["bias"]["data_offsets"], nlohmann::json::array({24, 32}));
  EXPECT_EQ(bytes.size(), 8 + hlen + 32);
  float w0;
  std::memcpy(&w0, bytes.data() + 8 + hlen, 4);
  EXPECT_EQ(w0, lin.weight.to_vector<float>()[0]);
}

TEST(Checkpoint, LoadsAFileInPyTorchsLayout) {
  // tests/golden/torch_linear.safetensors: torch.manual_seed(123); nn.Linear(3, 2).state_dict()
  manual_seed(999);
  nn::Linear lin(3, 2);
  nn::load(lin, golden::path("torch_linear.safetensors"));
  EXPECT_EQ(bits(lin.weight), (std::vector<uint32_t>{0xBE711478u, 0x3C9CAAEFu, 0xBE92D05Du, 0x3E5EF3BAu, 0xBEFBDECDu, 0x3ED8B0B2u}));
  EXPECT_EQ(bits(lin.bias), (std::vector<uint32_t>{0xBED6DB3Du, 0xBEEB045Du}));
  // and float32 data converts into a float64 module
  nn::Linear lin64(3, 2);
  lin64.to(kFloat64);
  nn::load(lin64, golden::path("torch_linear.safetensors"));
  EXPECT_EQ(lin64.bias.to_vector<double>()[0], static_cast<double>(lin.bias.to_vector<float>()[0]));
}

TEST(Checkpoint, RejectsMalformedFilesAndLeavesTheModuleUntouched) {
  TempDir dir;
  const std::string w = R"("weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";
  const std::string b = R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[24,32]})";
  const std::string data(32, '\x01');
  struct Bad {
    std::string name, bytes, expect;
  };
  const std::vector<Bad> cases = {
      {"empty file", "", "too short for the 8-byte header length"},
      {"seven bytes", std::string(7, '\0'), "too short"},
      {"header past end", raw_file("{}", "", 100), "runs past the end of the file"},
      {"huge header length", raw_file("{}", "", 1ULL << 62), "exceeds the limit"},
      {"not json", raw_file("{weight: 1", data), "not valid JSON"},
      {"json array", raw_file("[1,2]", ""), "not a JSON object"},
      {"entry not object", raw_file(R"({"weight":5})", ""), "entry is not an object"},
      {"missing dtype", raw_file(R"({"weight":{"shape":[2,3],"data_offsets":[0,24]}})", data.substr(0, 24)), "missing \"dtype\""},
      {"missing offsets", raw_file(R"({"weight":{"dtype":"F32","shape":[2,3]}})", data.substr(0, 24)), "missing \"data_offsets\""},
      {"unknown dtype", raw_file(R"({"weight":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]}})", data.substr(0, 12)), "unsupported dtype \"F16\""},
      {"dtype not string", raw_file(R"({"weight":{"dtype":7,"shape":[2,3],"data_offsets":[0,24]}})", data.substr(0, 24)), "unsupported dtype 7"},
      {"negative dim", raw_file(R"({"weight":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", data.substr(0, 24)), "not a non-negative integer"},
      {"fractional dim", raw_file(R"({"weight":{"dtype":"F32","shape":[2.5,3],"data_offsets":[0,24]}})", data.substr(0, 24)), "not a non-negative integer"},
      {"shape overflow", raw_file(R"({"weight":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,24]}})", data.substr(0, 24)), "overflows"},
      {"shape not array", raw_file(R"({"weight":{"dtype":"F32","shape":6,"data_offsets":[0,24]}})", data.substr(0, 24)), "shape is not an array"},
      {"offsets one number", raw_file(R"({"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0]}})", data.substr(0, 24)), "not a pair"},
      {"offsets negative", raw_file(R"({"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[-4,20]}})", data.substr(0, 24)), "not a pair"},
      {"offsets reversed", raw_file(R"({"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[24,0]}})", data.substr(0, 24)), "end before they begin"},
      {"offsets past data", raw_file("{" + w + "," + R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[24,40]}})", data), "run past the data"},
      {"size mismatch", raw_file(R"({"weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", data.substr(0, 20)), "needs 24 bytes but data_offsets give 20"},
      {"gap", raw_file("{" + w + "," + R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[28,36]}})", data + "1234"), "starts at byte 28"},
      {"overlap", raw_file("{" + w + "," + R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[20,28]}})", data.substr(0, 28)), "starts at byte 20"},
      {"trailing bytes", raw_file("{" + w + "," + b + "}", data + "extra"), "the data has 37"},
      {"duplicate name", raw_file("{" + w + "," + w + "}", data.substr(0, 24)), "duplicate tensor name \"weight\""},
      {"bad metadata", raw_file(R"({"__metadata__":[1],)" + w + "," + b + "}", data), "__metadata__ is not an object"},
      {"missing key", raw_file("{" + w + "}", data.substr(0, 24)), "missing keys \"bias\""},
      {"unexpected key", raw_file("{" + w + "," + b + "," + R"("extra":{"dtype":"F32","shape":[1],"data_offsets":[32,36]}})", data + "abcd"), "unexpected keys \"extra\""},
      {"wrong shape", raw_file("{" + std::string(R"("weight":{"dtype":"F32","shape":[3,2],"data_offsets":[0,24]})") + "," + b + "}", data), "size mismatch for weight: the file has shape [3, 2], the module [2, 3]"},
      {"wrong dtype kind", raw_file("{" + std::string(R"("weight":{"dtype":"I64","shape":[2,3],"data_offsets":[0,48]})") + "," + R"("bias":{"dtype":"F32","shape":[2],"data_offsets":[48,56]}})", std::string(56, '\0')), "dtype mismatch for weight"},
      {"invalid utf-8", raw_file("{\"w\xff\":1}", ""), "not valid JSON"},
  };
  manual_seed(0);
  nn::Linear lin(3, 2);
  const auto before_w = bits(lin.weight), before_b = bits(lin.bias);
  for (const Bad& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = dir.file("bad.safetensors");
    write_bytes(p, c.bytes);
    const std::string err = load_error(lin, p);
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
    EXPECT_EQ(err.rfind("[load] " + p + ": ", 0), 0u) << err;
    EXPECT_EQ(bits(lin.weight), before_w);
    EXPECT_EQ(bits(lin.bias), before_b);
  }
  EXPECT_GE(cases.size(), 20u);
  EXPECT_NE(load_error(lin, dir.file("does-not-exist")).find("cannot open"), std::string::npos);
}

TEST(Checkpoint, EveryTruncationOfAValidFileIsRejected) {
  TempDir dir;
  manual_seed(0);
  nn::Linear lin(3, 2);
  nn::save(lin, dir.file("ok.safetensors"));
  const std::string bytes = read_bytes(dir.file("ok.safetensors"));
  manual_seed(1);
  nn::Linear other(3, 2);
  const auto before = bits(other.weight);
  for (std::size_t k = 0; k < bytes.size(); ++k) {
    write_bytes(dir.file("cut.safetensors"), bytes.substr(0, k));
    EXPECT_THROW(nn::load(other, dir.file("cut.safetensors")), std::runtime_error) << "truncated at " << k;
  }
  EXPECT_EQ(bits(other.weight), before);
  EXPECT_NO_THROW(nn::load(other, dir.file("ok.safetensors")));
  EXPECT_EQ(bits(other.weight), bits(lin.weight));
}

TEST(Checkpoint, FailedSaveKeepsTheOldFileAndLeavesNoTemporaryFile) {
  TempDir dir;
  manual_seed(0);
  nn::Linear small(2, 2);
  const std::string p = dir.file("model.safetensors");
  nn::save(small, p);
  const std::string old = read_bytes(p);
  // Make write(2) fail part way: files may not grow past 200 bytes (EFBIG instead of SIGXFSZ).
  nn::Linear big(64, 64);
  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto prev = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = saved;
  lim.rlim_cur = 200;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  EXPECT_THROW(nn::save(big, p), std::runtime_error);
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, prev);
  EXPECT_EQ(read_bytes(p), old);
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) {
    ++files;
    EXPECT_EQ(e.path().filename(), "model.safetensors");
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(nn::save(small, dir.file("no/such/dir/model.safetensors")), std::runtime_error);
}

TEST(Checkpoint, LoadTensorsReturnsEverythingByName) {
  TempDir dir;
  nn::save_tensors({{"ids", tensor({3, 1, 2})}, {"mask", tensor({true, false})}, {"x", ones({2, 2}, kFloat64)}}, dir.file("t.safetensors"));
  const auto t = nn::load_tensors(dir.file("t.safetensors"));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].first, "ids");
  EXPECT_EQ(t[0].second.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(t[1].second.dtype(), kBool);
  EXPECT_EQ(t[2].second.dtype(), kFloat64);
}
