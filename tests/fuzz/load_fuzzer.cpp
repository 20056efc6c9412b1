// libFuzzer target for the safetensors loader: any bytes must either parse or raise a
// std::exception; never crash, leak, hang or read out of bounds (built with ASan and UBSan).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include "nn/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    const ag::nn::NamedTensors t = ag::nn::parse_safetensors(std::string(reinterpret_cast<const char*>(data), size));
    (void)t;
  } catch (const std::exception&) {
    // rejected with a clear exception: fine
  }
  return 0;
}
