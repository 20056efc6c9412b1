// Checkpoints in the safetensors format: an 8-byte little-endian header length, a JSON header
// {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...}, then the raw
// little-endian data. PyTorch users open our files with the safetensors package, and we load
// theirs. The JSON is read and written with nlohmann-json.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "module.h"

namespace ag::nn {

// Writes the module's state_dict (parameters and buffers, dotted names). Atomic: the data goes to
// a temporary file in the same directory, is fsynced, renamed over `path`, and the directory is
// fsynced; on failure the old file is intact and the temporary file removed.
void save(const Module& module, const std::string& path);
void save_tensors(const NamedTensors& tensors, const std::string& path);

// Reads every tensor of a safetensors file after validating all of it (header length, JSON,
// dtypes, shapes, offsets contiguous and inside the file, sizes, duplicate names).
NamedTensors load_tensors(const std::string& path);
// The same validation and reading for a file's bytes already in memory (`name` appears in errors).
NamedTensors parse_safetensors(const std::string& bytes, const std::string& name = "<memory>");

// Loads a file into the module: the names must be exactly the module's state_dict names and the
// shapes equal; float32/float64 are converted to the module's dtype. Nothing is written into the
// module unless the whole file is valid; then module.load_state_dict copies it in.
void load(Module& module, const std::string& path);

}  // namespace ag::nn
