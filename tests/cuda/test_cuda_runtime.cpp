// Selecting the CUDA backend where it cannot run must fail with a message naming the cause.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

#include "mini_engine/targets/cuda/cuda_llama.h"
#include "test_util.h"

using namespace speclab;

TEST_SUITE("cuda-host / runtime") {
  TEST_CASE("without a usable GPU, make_cuda_llama throws a message that names the cause") {
    const std::string why = cuda_unavailable_reason();
    if (why.empty()) testing::skip("a CUDA device is present; this case checks the no-GPU path");
    INFO("cuda_unavailable_reason(): ", why);
    CHECK(why.find("CUDA") != std::string::npos);
    std::string message;
    try {
      make_cuda_llama("/nonexistent.gguf");
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
    CHECK(message == "--device cuda: " + why);
  }
}
