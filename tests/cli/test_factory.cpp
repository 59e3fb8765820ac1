// The flags -> engine objects mapping: models, drafters, and the checks on bad input.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "factory.h"
#include "mini_engine/targets/cuda/cuda_llama.h"

using namespace speclab;
using namespace speclab::cli;

namespace {

// Parses "--x VALUE" into a T (which starts as T{}) under `check`; throws what CLI11 throws.
template <typename T>
T parse_checked(const CLI::Validator& check, const std::string& value) {
  CLI::App app;
  T x{};
  app.add_option("--x", x, "x")->check(check);
  app.parse("--x " + value, false);
  return x;
}

}  // namespace

TEST_SUITE("cli / factory") {
  TEST_CASE("an unknown drafter is refused with the list of valid names") {
    CHECK_THROWS_WITH_AS(make_drafter(DrafterOptions{.drafter = "magic"}, 5),
                         doctest::Contains("unknown drafter 'magic'; valid: none, prompt-lookup"),
                         UsageError);
  }

  TEST_CASE("every drafter in the catalog is built or says which lab brings it") {
    for (const DrafterInfo& d : drafter_catalog()) {
      CAPTURE(d.name);
      DrafterOptions o;
      o.drafter = d.name;
      if (!d.available) {
        CHECK_THROWS_WITH_AS(make_drafter(o, 5), doctest::Contains(d.lab.c_str()), UsageError);
      } else if (d.name == "none") {
        CHECK(make_drafter(o, 5) == nullptr);
      } else {
        CHECK(make_drafter(o, 5) != nullptr);
      }
    }
  }

  TEST_CASE("sa's options reach the automaton drafter") {
    DrafterOptions o{.drafter = "sa"};
    CHECK(make_drafter(o, 5)->name() == "sa(min_match=2)");
    o.sa_min_match = 3;
    o.sa_draft_ratio = 2;
    const auto d = make_drafter(o, 8);
    CHECK(d->name() == "sa(min_match=3, draft_ratio=2)");
    // "1 2 3" (a match of 3) first ends at index 2: six tokens at ratio 2, of the eight asked.
    const std::vector<Token> context{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2, 3};
    d->begin(context);
    CHECK(d->propose(context, 8) == std::vector<Token>{4, 5, 6, 7, 8, 9});
  }

  TEST_CASE("k outside 1..64 is refused") {
    CHECK_THROWS_WITH_AS(make_drafter(DrafterOptions{}, 0), doctest::Contains("between 1 and 64"),
                         UsageError);
    CHECK_THROWS_AS(make_drafter(DrafterOptions{}, 65), UsageError);
    CHECK(make_drafter(DrafterOptions{}, 64) != nullptr);
  }

  TEST_CASE("--seed takes [0, 2^64-1] and refuses what CLI11 would wrap or clamp") {
    const auto parse = [](const std::string& value) {
      CLI::App app;
      std::uint64_t seed = 7;
      add_seed_flag(app, seed, "seed");
      app.parse("--seed " + value, false);
      return seed;
    };
    CHECK(parse("0") == 0);
    CHECK(parse("18446744073709551615") == std::numeric_limits<std::uint64_t>::max());
    CHECK_THROWS_WITH_AS(parse("-1"),
                         doctest::Contains("must be in [0, 2^64-1] (0 to 18446744073709551615), "
                                           "got -1"),
                         CLI::ValidationError);
    CHECK_THROWS_WITH_AS(parse("18446744073709551616"), doctest::Contains("must be in [0, 2^64-1]"),
                         CLI::ValidationError);
    CHECK_THROWS_WITH_AS(parse("0x10"), doctest::Contains("expected a whole number"),
                         CLI::ValidationError);
    CHECK(parse("+3") == 3);  // as the other whole-number flags take it
    // CLI11 reads a leading 0 as octal: "010" was seed 8.
    CHECK_THROWS_WITH_AS(parse("010"),
                         doctest::Contains("got '010': write 10, without leading zeros"),
                         CLI::ValidationError);
  }

  TEST_CASE(
      "a run's header says how it decodes: greedy, or sampled with its temperature and seed") {
    // The headers said "sampled" alone: two runs at different temperatures read alike.
    CHECK(sampling_label(0.0, 7) == "greedy");
    CHECK(sampling_label(0.7, 4) == "sampled (temperature 0.7, seed 4)");
    CHECK(sampling_label(1.0, 0) == "sampled (temperature 1, seed 0)");
    CHECK(sampling_label(0.125, 18446744073709551615ULL) ==
          "sampled (temperature 0.125, seed 18446744073709551615)");
  }

  TEST_CASE("a whole number is read in decimal: a leading zero is refused, not taken as octal") {
    const auto parse = [](const std::string& value) {
      return parse_checked<int>(int_in(0, 64, "drafts per round"), value);
    };
    CHECK(parse("10") == 10);
    CHECK(parse("+10") == 10);
    CHECK(parse("0") == 0);
    CHECK(parse("-0") == 0);
    for (const char* bad : {"010", "08", "00", "+010"}) {
      INFO(bad);
      CHECK_THROWS_WITH_AS(parse(bad), doctest::Contains("without leading zeros"),
                           CLI::ValidationError);
    }
    CHECK_THROWS_WITH_AS(parse("-01"),
                         doctest::Contains("got '-01': write -1, without leading zeros"),
                         CLI::ValidationError);
  }

  TEST_CASE("a real number too close to 0 to hold is named as such, not as out of range") {
    const auto parse = [](const std::string& value) {
      return parse_checked<double>(real_in(0.0, 100.0, "sampling temperature"), value);
    };
    CHECK(parse("1e-30") == 1e-30);
    CHECK(parse("010.5") == 10.5);  // decimal, as written
    // 1e-400 lies between 0 and 100, but no double holds it: "must be between 0 and 100" was wrong.
    CHECK_THROWS_WITH_AS(parse("1e-400"),
                         doctest::Contains("got 1e-400, too close to 0 to hold as a number "
                                           "(sampling temperature): write 0 or a larger value"),
                         CLI::ValidationError);
    CHECK_THROWS_WITH_AS(parse("1e400"), doctest::Contains("must be between 0 and 100"),
                         CLI::ValidationError);
    CHECK_THROWS_WITH_AS(parse("0x1p-3"), doctest::Contains("expected a number"),
                         CLI::ValidationError);
  }

  TEST_CASE("an n-gram longer than the context can ever be is refused") {
    TargetOptions t;
    t.context = 64;
    const Model m = load_model(t);
    DrafterOptions o;
    o.n = 64;
    CHECK_THROWS_WITH_AS(check_n_fits(o, *m.target, 10, 100),
                         doctest::Contains("is too long for the context"), UsageError);
    o.n = 30;
    CHECK_THROWS_AS(check_n_fits(o, *m.target, 10, 20), UsageError);  // 10 + 20 tokens at most
    o.n = 3;
    CHECK_NOTHROW(check_n_fits(o, *m.target, 10, 20));
  }

  TEST_CASE("a prompt plus max-new-tokens past the context is refused before the run") {
    TargetOptions t;
    t.context = 64;
    const Model m = load_model(t);
    CHECK_THROWS_WITH_AS(check_fits_context(m, 16, 49), doctest::Contains("holds at most 64"),
                         UsageError);
    CHECK_NOTHROW(check_fits_context(m, 16, 48));
  }

  TEST_CASE("the context error suggests raising --context only below the model's own limit") {
    TargetOptions t;
    t.context = 64;
    const Model below = load_model(t);
    CHECK(below.context_limit == kMaxContext);
    const std::string raise =
        "or raise --context, up to the model's own limit of " + std::to_string(kMaxContext);
    CHECK_THROWS_WITH_AS(check_fits_context(below, 16, 49), doctest::Contains(raise.c_str()),
                         UsageError);
    t.context = kMaxContext;
    const Model at = load_model(t);
    try {
      check_fits_context(at, 16, kMaxContext, "the conversation");
      FAIL("no error");
    } catch (const UsageError& e) {
      const std::string message = e.what();
      CHECK(message.find("the conversation (16 tokens)") == 0);
      CHECK(message.find("the model's own limit (shorten the prompt or lower --max-new-tokens)") !=
            std::string::npos);
      CHECK(message.find("--context") == std::string::npos);
    }
  }

  TEST_CASE("the toy model loads and a missing or truncated model file is refused") {
    const Model toy = load_model(TargetOptions{});
    CHECK(toy.is_toy);
    // --context 0 is the model's own limit, and the toy's is the one its errors name: it held
    // 2^20 tokens while an error offered to raise --context up to 2^24.
    CHECK(toy.target->max_length() == toy.context_limit);
    CHECK(toy.context_limit == kMaxContext);
    CHECK_FALSE(toy.codec->is_text());

    TargetOptions missing;
    missing.model = "/nonexistent/model.gguf";
    CHECK_THROWS_WITH_AS(load_model(missing), doctest::Contains("nor an existing model file"),
                         UsageError);

    const auto path = std::filesystem::temp_directory_path() /
                      ("speclab_truncated_" + std::to_string(::getpid()) + ".gguf");
    std::ofstream(path, std::ios::binary) << std::string("GGUF\x03\x00", 6);
    TargetOptions truncated;
    truncated.model = path.string();
    CHECK_THROWS_WITH_AS(load_model(truncated), doctest::Contains("not a usable GGUF model"),
                         UsageError);
    std::filesystem::remove(path);
  }

  TEST_CASE("--device cuda without a usable GPU gives the reason") {
    const std::string reason = cuda_unavailable_reason();
    TargetOptions t;
    t.device = "cuda";
    if (reason.empty()) {
      // A GPU is there: the toy target still refuses, because it runs on the CPU only.
      CHECK_THROWS_WITH_AS(load_model(t), doctest::Contains("runs on the CPU only"), UsageError);
    } else {
      CHECK_THROWS_WITH_AS(load_model(t), doctest::Contains(("--device cuda: " + reason).c_str()),
                           UsageError);
    }
  }

  TEST_CASE("flags given that have no effect on the run are named, once each, in --help order") {
    const auto ignored = [](const std::string& args, const FlagContext& run,
                            const std::string& name = "generate") {
      CLI::App cmd("test", name);
      TargetOptions t;
      DrafterOptions d;
      std::vector<std::string> drafters;
      std::vector<int> ns;
      add_target_flags(cmd, t);
      std::uint64_t seed = 0;
      double temperature = 0;
      if (name.rfind("seeded", 0) == 0) add_seed_flag(cmd, seed, "a seed");
      if (name == "seeded-sampling") cmd.add_option("--temperature", temperature);
      if (name == "bench") {
        add_drafter_flags(cmd, d, &drafters, &ns);
      } else {
        add_drafter_flags(cmd, d);
      }
      cmd.parse(args, false);
      return ignored_flags(cmd, run);
    };
    const FlagContext real_ngram{.toy = false, .drafters = {"ngram"}};
    CHECK(ignored("", real_ngram).empty());
    CHECK(ignored("--min-context 2 --pad --n 4 --threads 2", real_ngram).empty());
    CHECK(ignored("--pool-private --regime markov --min-context 2", real_ngram) ==
          std::vector<std::string>{
              "--regime has no effect: it applies to the toy target only (--model toy)",
              "--pool-private has no effect: it is an option of --drafter pool, and this run uses "
              "ngram"});
    // auto reads its inner drafter's options; bench applies an option one drafter reads.
    const FlagContext auto_nasd{.toy = true, .drafters = {"auto"}, .auto_inner = "nasd"};
    CHECK(ignored("--filler-top-k 2 --auto-inner nasd --regime markov", auto_nasd).empty());
    CHECK(ignored("--sa-min-match 3", auto_nasd) ==
          std::vector<std::string>{"--sa-min-match has no effect: it is an option of --drafter "
                                   "sa, and this run uses auto (steering nasd)"});
    const FlagContext two{.toy = true, .drafters = {"prompt-lookup", "pool"}};
    CHECK(ignored("--pool-newest --n 2,3", two, "bench").empty());
    CHECK(ignored("--sa-threshold 2 --regime random", two, "bench") ==
          std::vector<std::string>{
              "--regime has no effect: bench's toy workloads set the regime themselves (choose "
              "them with --workload toy-periodic,toy-markov,toy-random)",
              "--sa-threshold has no effect: it is an option of --drafter sa+ngram, and this "
              "bench compares prompt-lookup, pool"});
    CHECK(ignored("--threads 4", FlagContext{.toy = true, .drafters = {"sa"}}).size() == 1);
    // On the GPU, --threads sets nothing.
    CHECK(ignored("--threads 4 --device cuda", FlagContext{.cuda = true, .drafters = {"sa"}}) ==
          std::vector<std::string>{"--threads has no effect: --device cuda runs the model on the "
                                   "GPU (--threads sets the CPU model's worker threads)"});
    // The toy target refuses --device cuda (load_model), so no "has no effect" warning may come
    // before that error: on an H100 the two were printed one after the other.
    CHECK(ignored("--device cuda", FlagContext{.toy = true, .cuda = true, .drafters = {"sa"}})
              .empty());
    CHECK(ignored("--threads 4 --device cpu", real_ngram).empty());
    // --seed: it seeds sampling and the toy target's text, so it is idle only when neither runs.
    CHECK(ignored("--seed 7", FlagContext{.drafters = {"sa"}, .seed_unused = true},
                  "seeded-sampling") ==
          std::vector<std::string>{
              "--seed has no effect: the runs decode greedily (--temperature 0) and none is on "
              "the toy target, whose text it seeds"});
    // A command without --temperature (demo) is not pointed at it.
    CHECK(ignored("--seed 7", FlagContext{.drafters = {"sa"}, .seed_unused = true}, "seeded") ==
          std::vector<std::string>{"--seed has no effect: the runs decode greedily and none is "
                                   "on the toy target, whose text it seeds"});
    CHECK(ignored("--seed 7", FlagContext{.drafters = {"sa"}}, "seeded").empty());
    // An unknown drafter is for make_drafter() to refuse, not for a warning.
    CHECK(ignored("--pad", FlagContext{.drafters = {"magic"}}).empty());
  }

  TEST_CASE("each drafter option's help names the drafters that read it") {
    CHECK(drafters_reading("--min-context") == "ngram, nasd, sa+ngram");
    CHECK(drafters_reading("--n") == "prompt-lookup, ngram, nasd, pool, sa+ngram");
    CHECK(drafters_reading("--auto-inner") == "auto");
    CHECK(drafters_reading("--bogus").empty());
  }

  TEST_CASE("greedy decoding gets the greedy verify rule") {
    const VerifyRule rule = make_verify_rule(SamplingParams{});
    Logits logits(3, 8);
    logits.row(0)[4] = 1.0f;  // draft 4 is the argmax: accepted
    logits.row(1)[6] = 1.0f;  // draft 5 is not: the correction is 6
    const std::vector<Token> drafts = {4, 5};
    const SamplingParams sampling;
    const VerifyResult r = rule(VerifyInput{drafts, logits, 10, sampling});
    CHECK(r.accepted == 1);
    CHECK(r.emitted == std::vector<Token>{4, 6});
  }
}
