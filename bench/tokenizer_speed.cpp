// How fast the SmolLM2 tokenizer is: loading it from the GGUF, encoding prompts of a few KB and
// of 64 KB, decoding, and streaming decode. Reports medians over repeated runs.
//
//   build/bin/bench_tokenizer [--model PATH]   # default: $SPECLAB_MODEL or the speclab cache
//   build/bin/bench_tokenizer --smoke          # 3 repeats: checks that the bench still runs
//
// Without the model file it says so and exits 0 (there is nothing to measure).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mini_engine/model/gguf.h"
#include "mini_engine/model/tokenizer.h"
#include "model_path.h"

namespace {

// Mixed text: prose, code, numbers, accents, CJK and emoji (about 1.3 KB).
const char* const kSample =
    "Speculative decoding lets a small, cheap drafter propose several tokens which the large "
    "target model then checks in a single forward pass. When the drafts match, we keep them all; "
    "when they do not, we keep the matching prefix and the target's own correction.\n\n"
    "    def ngram_propose(context, n, k):\n"
    "        for start in range(len(context) - n - 1, -1, -1):\n"
    "            if context[start:start + n] == context[-n:]:\n"
    "                return context[start + n:start + n + k]\n"
    "        return []\n\n"
    "Numbers such as 3.14159, 2024-06-01 and 1,000,000 are split digit by digit; prices like "
    "$19.99 too. Accents (café, naïve, Ærøskøbing), CJK (日本語のテキスト, 中文测试, 한국어) and "
    "emoji (😀🚀🎉👨‍👩‍👧) go through the same byte-level machinery.\n"
    "<|im_start|>user\nSummarize the text above in one sentence.<|im_end|>\n"
    "<|im_start|>assistant\n";

template <typename F>
double median_ms(int repeats, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  using namespace speclab;
  bool smoke = false;
  std::string model;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0) {
      smoke = true;
    } else if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      model = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--smoke] [--model PATH]\n", argv[0]);
      return 2;
    }
  }
  if (model.empty()) {
    const auto found = testing::find_smollm2();
    if (!found) {
      std::printf(
          "bench_tokenizer: SmolLM2 GGUF not found (set SPECLAB_MODEL or run "
          "tools/fetch_model); nothing measured\n");
      return 0;
    }
    model = *found;
  }
  const int repeats = smoke ? 3 : 21;

  const GgufFile gguf = GgufFile::open(model);
  const double load_ms = median_ms(smoke ? 1 : 5, [&] { (void)Tokenizer::from_gguf(gguf); });
  const Tokenizer tok = Tokenizer::from_gguf(gguf);
  std::printf(
      "tokenizer: %d tokens in the vocabulary; building it from the open GGUF: %.1f ms "
      "(median)\n\n",
      tok.vocab_size(), load_ms);
  std::printf("%10s %8s %12s %12s %12s %14s\n", "text", "tokens", "encode ms", "MB/s", "decode ms",
              "stream dec ms");
  for (std::size_t target : {std::size_t{4096}, std::size_t{65536}}) {
    std::string text;
    while (text.size() < target) text += kSample;
    std::vector<Token> ids;
    const double enc = median_ms(repeats, [&] { ids = tok.encode(text); });
    std::size_t sink = 0;
    const double dec = median_ms(repeats, [&] { sink += tok.decode(ids, true).size(); });
    const double stream = median_ms(repeats, [&] {
      StreamDecoder sd(tok, true);
      for (Token id : ids) sink += sd.push(id).size();
      sink += sd.flush().size();
    });
    std::printf("%8zu B %8zu %12.3f %12.1f %12.3f %14.3f\n", text.size(), ids.size(), enc,
                static_cast<double>(text.size()) / 1e6 / (enc / 1e3), dec, stream);
    if (sink == 0) return 1;  // keeps the work observable
  }
  return 0;
}
