#include "nn/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "autograd/kernels/common.h"

namespace ag::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; this port assumes a little-endian host");

namespace {

using nlohmann::json;

constexpr uint64_t kMaxHeader = 100'000'000;  // the safetensors package's own limit

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("[load] " + path + ": " + what);
}

const char* st_dtype(DType t) {
  switch (t) {
    case kFloat32: return "F32";
    case kFloat64: return "F64";
    case kInt64: return "I64";
    case kBool: return "BOOL";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType& out) {
  static const std::map<std::string, DType> known = {{"F32", kFloat32}, {"F64", kFloat64}, {"I64", kInt64}, {"BOOL", kBool}};
  auto it = known.find(s);
  if (it == known.end()) return false;
  out = it->second;
  return true;
}

std::string errno_text() { return std::strerror(errno); }

// write(2) until done; false on error.
bool write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

struct Entry {
  std::string name;
  DType dtype;
  Size shape;
  uint64_t begin, end;
};

}  // namespace

void save_tensors(const NamedTensors& tensors, const std::string& path) {
  // Header and the contiguous bytes of each tensor, in the given order.
  json header = json::object();
  std::vector<Tensor> blobs;
  uint64_t offset = 0;
  std::set<std::string> seen;
  for (const auto& [name, t] : tensors) {
    if (!seen.insert(name).second) throw std::invalid_argument("[save] duplicate tensor name " + name);
    Tensor c = t.detach().contiguous();
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * element_size(c.dtype());
    header[name] = {{"dtype", st_dtype(c.dtype())}, {"shape", c.shape().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    blobs.push_back(c);
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // pad to 8 bytes, as the safetensors package does
  const uint64_t hlen = h.size();

  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  std::string base = ".";
  base += target.filename().string();
  base += ".tmp.XXXXXX";
  std::string tmpl = (dir / base).string();  // hidden, next to the target, so rename is atomic
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("[save] cannot create a temporary file in " + dir.string() + ": " + errno_text());
  auto abort_save = [&](const std::string& what) {
    const std::string why = errno_text();
    ::close(fd);
    ::unlink(tmpl.c_str());
    throw std::runtime_error("[save] " + path + ": " + what + ": " + why);
  };
  if (!write_all(fd, &hlen, 8) || !write_all(fd, h.data(), h.size())) abort_save("write failed");
  for (const Tensor& c : blobs) {
    const void* data = static_cast<const char*>(c.impl()->storage->data) + c.storage_offset() * static_cast<int64_t>(element_size(c.dtype()));
    if (!write_all(fd, data, static_cast<std::size_t>(c.numel()) * element_size(c.dtype()))) abort_save("write failed");
  }
  if (::fsync(fd) != 0) abort_save("fsync failed");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    throw std::runtime_error("[save] " + path + ": close failed: " + errno_text());
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmpl.c_str());
    throw std::runtime_error("[save] " + path + ": rename failed: " + why);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {  // make the rename durable
    ::fsync(dfd);
    ::close(dfd);
  }
}

void save(const Module& module, const std::string& path) { save_tensors(module.state_dict(), path); }

namespace {

// Reads and validates the header; returns the entries sorted by offset and the data size.
std::vector<Entry> read_header(std::istream& f, const std::string& path, uint64_t file_size, uint64_t& data_size) {
  if (file_size < 8) fail(path, "file of " + std::to_string(file_size) + " bytes is too short for the 8-byte header length");
  uint64_t hlen = 0;
  f.read(reinterpret_cast<char*>(&hlen), 8);
  if (!f) fail(path, "cannot read the header length");
  if (hlen > kMaxHeader) fail(path, "header length " + std::to_string(hlen) + " exceeds the limit of " + std::to_string(kMaxHeader));
  if (hlen > file_size - 8) {
    fail(path, "header length " + std::to_string(hlen) + " runs past the end of the file (" + std::to_string(file_size) + " bytes)");
  }
  std::string text(hlen, '\0');
  f.read(text.data(), static_cast<std::streamsize>(hlen));
  if (!f) fail(path, "cannot read the header");
  data_size = file_size - 8 - hlen;

  // Parse, rejecting duplicate names (a plain parse would keep the last one silently).
  std::set<std::string> top_keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !top_keys.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, cb);
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!duplicate.empty()) fail(path, "duplicate tensor name \"" + duplicate + "\"");
  if (!header.is_object()) fail(path, "header is not a JSON object");

  std::vector<Entry> entries;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object()) fail(path, "__metadata__ is not an object");
      for (const auto& [k, v] : info.items())
        if (!v.is_string()) fail(path, "__metadata__ value for \"" + k + "\" is not a string");
      continue;
    }
    const std::string where = "tensor \"" + name + "\": ";
    if (!info.is_object()) fail(path, where + "entry is not an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!info.contains(key)) fail(path, where + "missing \"" + key + "\"");
    Entry e{name, kFloat32, {}, 0, 0};
    if (!info["dtype"].is_string() || !parse_dtype(info["dtype"].get<std::string>(), e.dtype)) {
      fail(path, where + "unsupported dtype " + info["dtype"].dump() + " (supported: F32, F64, I64, BOOL)");
    }
    const json& shape = info["shape"];
    if (!shape.is_array()) fail(path, where + "shape is not an array");
    uint64_t numel = 1;
    for (const json& d : shape) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) fail(path, where + "shape " + shape.dump() + " has a dimension that is not a non-negative integer");
      const auto v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(INT64_MAX) || (v != 0 && numel > static_cast<uint64_t>(INT64_MAX) / v)) {
        fail(path, where + "shape " + shape.dump() + " overflows");
      }
      numel *= v;
      e.shape.vec().push_back(static_cast<int64_t>(v));
    }
    const json& off = info["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      fail(path, where + "data_offsets " + off.dump() + " is not a pair of non-negative integers");
    }
    e.begin = off[0].get<uint64_t>();
    e.end = off[1].get<uint64_t>();
    if (e.begin > e.end) fail(path, where + "data_offsets " + off.dump() + " end before they begin");
    if (e.end > data_size) fail(path, where + "data_offsets " + off.dump() + " run past the data (" + std::to_string(data_size) + " bytes)");
    const uint64_t el = element_size(e.dtype);
    if (numel > UINT64_MAX / el || numel * el != e.end - e.begin) {
      fail(path, where + "shape " + shape.dump() + " of " + info["dtype"].get<std::string>() + " needs " +
                     (numel > UINT64_MAX / el ? std::string("more") : std::to_string(numel * el)) + " bytes but data_offsets give " +
                     std::to_string(e.end - e.begin));
    }
    entries.push_back(std::move(e));
  }
  // The tensors must tile the data exactly: no gap, no overlap, nothing left over.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t at = 0;
  for (const Entry& e : entries) {
    if (e.begin != at) {
      fail(path, "tensor \"" + e.name + "\" starts at byte " + std::to_string(e.begin) + " of the data but the previous one ends at " +
                     std::to_string(at) + " (tensors must be contiguous, without gaps or overlaps)");
    }
    at = e.end;
  }
  if (at != data_size) fail(path, "the tensors cover " + std::to_string(at) + " bytes but the data has " + std::to_string(data_size));
  return entries;
}

// Validates everything, then reads the tensors (`size` bytes in all; `path` names the source).
NamedTensors read_stream(std::istream& f, uint64_t size, const std::string& path) {
  uint64_t data_size = 0;
  const std::vector<Entry> entries = read_header(f, path, size, data_size);
  NamedTensors out;
  for (const Entry& e : entries) {  // sorted by offset: one forward pass over the data
    Tensor t = detail::make_tensor(e.shape, e.dtype);
    f.read(static_cast<char*>(t.impl()->storage->data), static_cast<std::streamsize>(e.end - e.begin));
    if (!f) fail(path, "cannot read the data of tensor \"" + e.name + "\"");
    out.emplace_back(e.name, t);
  }
  return out;
}

NamedTensors read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("[load] cannot open " + path + ": " + errno_text());
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw std::runtime_error("[load] cannot read the size of " + path + ": " + ec.message());
  return read_stream(f, size, path);
}

}  // namespace

NamedTensors parse_safetensors(const std::string& bytes, const std::string& name) {
  std::istringstream f(bytes);
  return read_stream(f, bytes.size(), name);
}

NamedTensors load_tensors(const std::string& path) { return read_all(path); }

void load(Module& module, const std::string& path) {
  NamedTensors file = read_all(path);
  std::map<std::string, Tensor> by_name(file.begin(), file.end());
  const NamedTensors want = module.state_dict();
  std::vector<std::string> missing, unexpected;
  std::set<std::string> names;
  for (const auto& [n, t] : want) {
    names.insert(n);
    if (!by_name.count(n)) missing.push_back(n);
  }
  for (const auto& [n, t] : file)
    if (!names.count(n)) unexpected.push_back(n);
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "\"" : ", \"") + x + "\"";
    return s;
  };
  if (!missing.empty() || !unexpected.empty()) {
    std::string msg = "does not match the " + module.type_name() + " module:";
    if (!missing.empty()) msg += " missing keys " + join(missing) + ";";
    if (!unexpected.empty()) msg += " unexpected keys " + join(unexpected) + ";";
    fail(path, msg);
  }
  for (const auto& [n, t] : want) {
    const Tensor& src = by_name.at(n);
    if (src.shape() != t.shape()) {
      fail(path, "size mismatch for " + n + ": the file has shape " + src.shape().str() + ", the module " + t.shape().str());
    }
    if (src.dtype() != t.dtype() && !(src.is_floating_point() && t.is_floating_point())) {
      fail(path, "dtype mismatch for " + n + ": the file has " + dtype_name(src.dtype()) + ", the module " + dtype_name(t.dtype()));
    }
  }
  module.load_state_dict(file);  // everything checked: now copy
}

}  // namespace ag::nn
