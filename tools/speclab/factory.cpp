// The flags -> engine objects mapping. To add a lab's drafter: include its header, mark its
// catalog entry available, and add a branch to make_drafter(). To add a backend: load_model().
#include "factory.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "auto_drafter.h"
#include "mini_engine/core/plural.h"
#include "mini_engine/model/gguf.h"
#include "mini_engine/model/llama_weights.h"
#include "mini_engine/targets/cpu_llama.h"
#include "mini_engine/targets/cpu_llama_batch.h"
#include "mini_engine/targets/cuda/cuda_llama.h"
#include "mini_engine/targets/toy_target.h"
#include "nasd.h"
#include "ngram_pool.h"
#include "ngram_storage.h"
#include "prompt_lookup.h"
#include "real_model.h"
#include "suffix_automaton.h"

namespace speclab::cli {
namespace {

constexpr const char* kSmolLM2File = "SmolLM2-135M-Instruct.Q4_1.gguf";

}  // namespace

namespace {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Model load_toy(const TargetOptions& o) {
  if (o.device == "cuda") {
    throw UsageError("--device cuda: the toy target runs on the CPU only (try --model smollm2)");
  }
  ToyTargetConfig cfg;
  try {
    cfg.regime = parse_toy_regime(o.regime);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--regime: ") + e.what());
  }
  cfg.seed = o.toy_seed;
  cfg.noise = o.noise;
  // The random regime never repeats a token while the sequence is shorter than the vocabulary.
  cfg.vocab_size = cfg.regime == ToyRegime::random ? std::max(4096, o.toy_length_hint + 1) : 512;
  // Its own limit (--context 0) is the CLI's largest context: it holds token ids, nothing more.
  cfg.max_length = o.context > 0 ? o.context : kMaxContext;
  auto target = std::make_unique<ToyTarget>(cfg);
  Model m;
  m.codec = make_token_id_codec(target->vocab_size());
  m.description = target->name() + " on cpu";
  m.target = std::move(target);
  m.is_toy = true;
  m.context_limit = kMaxContext;
  return m;
}

// --model smollm2 loads the cached download without checking it (tools/fetch_model checks it when
// it fetches). The pinned file always loads, so when the cached one does not, it is damaged: say
// how to get a good copy. Empty for a path, or a SPECLAB_MODEL file (the user's own).
std::string damaged_download_hint(const std::string& model) {
  const char* explicit_path = std::getenv("SPECLAB_MODEL");
  if (model != "smollm2" || (explicit_path != nullptr && explicit_path[0] != '\0')) return {};
  return "\n  (the cached download is damaged: tools/fetch_model checks it and fetches it again)";
}

// The errors for a --model file that does not load: not a GGUF file SpecLab can parse, or a
// GGUF file of a model it cannot run.
UsageError unusable_gguf(const std::string& model, const std::string& path, const GgufError& e) {
  return UsageError("--model: '" + path + "' is not a usable GGUF model (truncated or corrupt?): " +
                    e.what() + damaged_download_hint(model));
}
UsageError unrunnable_model(const std::string& model, const std::string& path,
                            const ModelError& e) {
  return UsageError("--model: '" + path + "' is not a model SpecLab can run: " + e.what() +
                    damaged_download_hint(model));
}

// The model file for --model: "smollm2" resolves to the cached download, anything else is a path.
std::string resolve_model_path(const std::string& model) {
  if (model == "smollm2") {
    std::string why;
    if (auto path = fetch_smollm2(&why)) return *path;
    throw UsageError("--model smollm2: the model is not cached and could not be fetched: " + why +
                     "\n  (tools/fetch_model explains how to provide it by hand; --model toy "
                     "needs no download)");
  }
  if (!std::filesystem::exists(model)) {
    throw UsageError("--model: '" + model +
                     "' is neither 'toy', 'smollm2' nor an existing model file");
  }
  if (!is_regular_file(model)) throw UsageError("--model: '" + model + "' is not a regular file");
  return model;
}

// The most tokens the model in `file` can hold: its llama.context_length (0 when the key is
// missing or not a positive number; loading the weights then says what is wrong).
int gguf_context_limit(const GgufFile& file) {
  const std::int64_t n = file.get_int_or("llama.context_length", 0);
  return n > 0 && n <= std::numeric_limits<int>::max() ? static_cast<int>(n) : 0;
}

// Refuses a --context above the model's own limit: the backends would cap it without a word.
void check_context_option(int context, int limit, const std::string& path) {
  if (limit <= 0 || context <= limit) return;
  throw UsageError("--context " + std::to_string(context) + " is more than the model holds: '" +
                   path + "' holds at most " + std::to_string(limit) +
                   " tokens (its llama.context_length); give --context " + std::to_string(limit) +
                   " or less, or 0 for the model's own limit");
}

Model load_gguf_model(const TargetOptions& o) {
  const std::string path = resolve_model_path(o.model);
  // Parse the file first: a missing, truncated or foreign file is reported as what it is, before
  // any backend tries to use it.
  std::unique_ptr<TextCodec> codec;
  int limit = 0;
  try {
    const GgufFile file = GgufFile::open(path);
    codec = make_gguf_codec(file);
    limit = gguf_context_limit(file);
  } catch (const UsageError&) {
    throw;
  } catch (const GgufError& e) {
    throw unusable_gguf(o.model, path, e);
  } catch (const std::runtime_error& e) {
    throw UsageError("--model: cannot read '" + path + "': " + e.what());
  }
  check_context_option(o.context, limit, path);
  Model m;
  m.context_limit = limit;
  try {
    if (o.device == "cuda") {
      CudaLlamaOptions co;
      co.max_length = o.context;
      m.target = make_cuda_llama(path, co);
    } else {
      CpuLlamaOptions co;
      co.threads = check_cpu_threads(o.threads);
      co.max_context = o.context;
      m.target = CpuLlama::open(path, co);
    }
  } catch (const GgufError& e) {
    throw unusable_gguf(o.model, path, e);
  } catch (const ModelError& e) {
    throw unrunnable_model(o.model, path, e);
  }
  m.codec = std::move(codec);
  m.description = m.target->name();  // names the backend and, on the CPU, the threads
  if (m.context_limit <= 0) m.context_limit = m.target->max_length();
  return m;
}

}  // namespace

std::string model_file_given(const TargetOptions& o) {
  if (o.model == "toy") return {};
  if (o.model == "smollm2") return smollm2_path().value_or("");
  return o.model;
}

// The model's threads meet at a barrier after every step of every layer, so one that waits for a
// core stalls them all (4 tokens took 8.6 s with 64 threads on 2 cores, against 0.5 s with 2).
int check_cpu_threads(int threads) {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0 && threads > static_cast<int>(cores)) {
    throw UsageError("--threads " + std::to_string(threads) + " is more than the " +
                     std::to_string(cores) + " cores of this machine: the model's threads wait " +
                     "for each other at every layer, so a pass would crawl; give at most " +
                     std::to_string(cores) + " (0 = every core)");
  }
  return threads;
}

// ---- targets ----

void add_target_flags(CLI::App& cmd, TargetOptions& o) {
  cmd.add_option("--model", o.model,
                 "Target model: 'toy' (token ids in, token ids out), 'smollm2' "
                 "(SmolLM2-135M-Instruct, fetched and cached on first use) or a GGUF file path")
      ->capture_default_str();
  cmd.add_option("--device", o.device, "Where the model runs: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd.add_option("--threads", o.threads,
                 "CPU threads for the model, at most the machine's cores; 0 = every core")
      ->check(int_in(0, kMaxCpuThreads, "CPU threads"))
      ->capture_default_str();
  cmd.add_option("--context", o.context,
                 "The most tokens the sequence may hold; 0 = the model's own limit (more is "
                 "refused)")
      ->check(int_in(0, kMaxContext, "context length in tokens"))
      ->capture_default_str();
  cmd.add_option("--regime", o.regime, "Toy target only: periodic, markov or random")
      ->check(CLI::IsMember({"periodic", "markov", "random"}))
      ->capture_default_str()
      ->group("Toy target");
  cmd.add_option(
         "--noise", o.noise,
         "Toy target only: chance (0 to 1) that a position departs from the regime's rule (-1: the "
         "regime's default)")
      ->check(real_in(-1.0, 1.0, "chance of a departure, or -1"))
      ->check(CLI::Validator(
          [](std::string& value) -> std::string {
            const double v = std::stod(value);  // a number in [-1, 1]: checked just above
            if (v < 0.0 && v != -1.0) {
              return "must be -1 (the regime's default) or between 0 and 1, got " + value;
            }
            return {};
          },
          ""))
      ->capture_default_str()
      ->group("Toy target");
}

Model load_model(const TargetOptions& o) {
  if (o.device != "cpu" && o.device != "cuda") {
    throw UsageError("--device must be cpu or cuda, got '" + o.device + "'");
  }
  if (o.device == "cuda") {
    const std::string reason = cuda_unavailable_reason();
    if (!reason.empty()) throw UsageError("--device cuda: " + reason);
  }
  if (o.model == "toy") return load_toy(o);
  if (o.model.empty()) throw UsageError("--model is empty: give toy, smollm2 or a GGUF file path");
  return load_gguf_model(o);
}

bool runs_on_gpu(const TargetOptions& o) {
  return o.device == "cuda" && cuda_unavailable_reason().empty();
}

std::unique_ptr<BatchTarget> load_batch_model(const TargetOptions& o) {
  if (o.model == "toy") {
    throw UsageError("--batch needs a real model (--model smollm2 or a GGUF path)");
  }
  if (o.device != "cpu") throw UsageError("--batch runs on --device cpu only (CpuLlamaBatch)");
  const std::string path = resolve_model_path(o.model);
  try {
    GgufFile file = GgufFile::open(path);
    check_context_option(o.context, gguf_context_limit(file), path);
    CpuLlamaOptions co;
    co.threads = check_cpu_threads(o.threads);
    co.max_context = o.context;
    return std::make_unique<CpuLlamaBatch>(std::move(file), co);
  } catch (const UsageError&) {
    throw;
  } catch (const GgufError& e) {
    throw unusable_gguf(o.model, path, e);
  } catch (const ModelError& e) {
    throw unrunnable_model(o.model, path, e);
  }
}

std::optional<std::string> smollm2_path() {
  if (const char* explicit_path = std::getenv("SPECLAB_MODEL");
      explicit_path != nullptr && explicit_path[0] != '\0') {
    return std::string(explicit_path);
  }
  std::filesystem::path dir;
  if (const char* cache = std::getenv("SPECLAB_CACHE"); cache != nullptr && cache[0] != '\0') {
    dir = cache;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    dir = std::filesystem::path(home) / ".cache" / "speclab";
  } else {
    return std::nullopt;
  }
  return (dir / kSmolLM2File).string();
}

std::optional<std::string> cached_smollm2() {
  auto path = smollm2_path();
  if (path && is_regular_file(*path)) return path;
  return std::nullopt;
}

std::optional<std::string> fetch_smollm2(std::string* why) {
  if (auto path = cached_smollm2()) return path;
  const std::string script = std::string(SPECLAB_SOURCE_DIR) + "/tools/fetch_model";
  if (!is_regular_file(script)) {
    if (why) *why = script + " is missing";
    return std::nullopt;
  }
  // fetch_model prints the path on stdout and its progress and errors on stderr.
  std::FILE* pipe = ::popen(("'" + script + "'").c_str(), "r");
  if (pipe == nullptr) {
    if (why) *why = "cannot run " + script;
    return std::nullopt;
  }
  std::string out;
  std::array<char, 512> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), pipe) != nullptr) out += buf.data();
  const int status = ::pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  if (status != 0 || out.empty() || !is_regular_file(out)) {
    // Its own message, on stderr (already shown), says why and how to provide the file by hand.
    if (why) *why = "tools/fetch_model could not provide it; see its message above";
    return std::nullopt;
  }
  return out;
}

// ---- drafters ----

const std::vector<DrafterInfo>& drafter_catalog() {
  // The options each reads are those make_lab_drafter() passes on to it.
  static const std::vector<DrafterInfo> catalog = {
      {"none", "plain decoding: no drafts, one target run per token", "", true},
      {"prompt-lookup",
       "copy what followed the last earlier match of the final n tokens",
       "lab01",
       true,
       {"--n"}},
      {"ngram",
       "n-gram counts with back-off, learned from the text so far",
       "lab02",
       true,
       {"--n", "--min-context", "--pad"}},
      {"nasd",
       "n-gram storage that also learns the target's top-k tokens (NASD)",
       "lab03",
       true,
       {"--n", "--min-context", "--pad", "--filler-top-k"}},
      {"pool",
       "TensorRT-LLM-style n-gram pool; the public pool persists across requests",
       "lab04",
       true,
       {"--n", "--pool-private", "--pool-newest", "--pool-keep-one"}},
      {"sa",
       "suffix automaton: the longest earlier match, however long",
       "lab05",
       true,
       {"--sa-min-match", "--sa-draft-ratio"}},
      {"sa+ngram",
       "n-gram drafter, overridden by the suffix automaton on long matches",
       "lab05",
       true,
       {"--n", "--min-context", "--pad", "--sa-threshold"}},
      {"auto",
       "a policy that speculates only when measured acceptance pays for it",
       "lab06",
       true,
       {"--auto-inner"}},
      {"mine", "your lab 07 drafter: make_my_drafter(), labs 01-05 composed for a chat model",
       "lab07", true},
  };
  return catalog;
}

bool DrafterInfo::reads(const std::string& flag) const {
  return std::find(options.begin(), options.end(), flag) != options.end();
}

std::string drafters_reading(const std::string& flag) {
  std::vector<std::string> names;
  for (const DrafterInfo& d : drafter_catalog()) {
    if (d.reads(flag)) names.push_back(d.name);
  }
  return join(names, ", ");
}

const DrafterInfo& drafter_info(const std::string& name) {
  for (const DrafterInfo& d : drafter_catalog()) {
    if (d.name == name) return d;
  }
  std::vector<std::string> names;
  for (const DrafterInfo& d : drafter_catalog()) names.push_back(d.name);
  throw UsageError("unknown drafter '" + name + "'; valid: " + join(names, ", "));
}

std::vector<std::string> available_drafters() {
  std::vector<std::string> names;
  for (const DrafterInfo& d : drafter_catalog()) {
    if (d.available) names.push_back(d.name);
  }
  return names;
}

void add_drafter_flags(CLI::App& cmd, DrafterOptions& o, std::vector<std::string>* drafter_list,
                       std::vector<int>* n_list, std::vector<int>* ratio_list) {
  std::string help =
      drafter_list ? "Drafters to compare, comma-separated, or 'all' (the default: "
                     "every drafter in this build). LAB_IMPL=" +
                         std::string(lab_impl()) + " implementations:"
                   : "The drafter (LAB_IMPL=" + std::string(lab_impl()) + " implementations):";
  for (const DrafterInfo& d : drafter_catalog()) {
    help += "\n  " + d.name + ": " + d.summary;
    if (!d.lab.empty()) help += " [" + d.lab + "]";
    if (!d.available) help += " (not in this build yet)";
  }
  const std::string n_help =
      "n-gram size: prompt-lookup matches the last n tokens; ngram/nasd/sa+ngram use n-grams up "
      "to n (n >= 2); pool keys are up to n tokens (n <= 64) (auto: as the drafter it steers)";
  if (drafter_list) {
    add_list_flag(cmd, "--drafter", *drafter_list, help);
  } else {
    cmd.add_option("--drafter", o.drafter, help)->capture_default_str();
  }
  if (n_list) {
    o.n_flag = add_list_flag(cmd, "--n", *n_list, n_help + " (comma-separated values to sweep)",
                             int_in(1, 1 << 20, "n-gram size"));
  } else {
    o.n_flag = cmd.add_option("--n", o.n, n_help)
                   ->check(int_in(1, 1 << 20, "n-gram size"))
                   ->capture_default_str();
  }
  // Each option's help starts with the drafters that read it (the catalog's list; auto passes
  // them on to the drafter it steers).
  const auto owned = [](const std::string& flag, const std::string& what) {
    return drafters_reading(flag) + ": " + what;
  };
  auto* g = "Drafter options";
  cmd.add_option("--min-context", o.min_context,
                 owned("--min-context", "the shortest context backed off to"))
      ->check(int_in(1, 1 << 20, "back-off floor"))
      ->capture_default_str()
      ->group(g);
  cmd.add_flag("--pad", o.pad, owned("--pad", "pad a miss and keep drafting instead of stopping"))
      ->group(g);
  cmd.add_option("--filler-top-k", o.filler_top_k,
                 owned("--filler-top-k",
                       "after each round also learn the target's top-k tokens (1 = only the "
                       "emitted ones)"))
      ->check(int_in(1, 64, "tokens learned per position"))
      ->capture_default_str()
      ->group(g);
  cmd.add_flag("--pool-private", o.pool_private,
               owned("--pool-private", "a private pool per request instead of the public one"))
      ->group(g);
  cmd.add_flag("--pool-newest", o.pool_newest,
               owned("--pool-newest", "propose the newest value, not the oldest"))
      ->group(g);
  cmd.add_flag("--pool-keep-one", o.pool_keep_one,
               owned("--pool-keep-one", "keep only the longest value per key"))
      ->group(g);
  cmd.add_option("--sa-min-match", o.sa_min_match,
                 owned("--sa-min-match", "the shortest earlier match the automaton proposes from"))
      ->check(int_in(1, 1 << 20, "match length"))
      ->capture_default_str()
      ->group(g);
  const std::string ratio_help = owned(
      "--sa-draft-ratio",
      "draft at most this many tokens per token of the match (a short match is weak evidence, a "
      "long one strong); 0 = up to --k whatever the match");
  if (ratio_list) {
    add_list_flag(cmd, "--sa-draft-ratio", *ratio_list,
                  ratio_help + " (comma-separated values to sweep)",
                  int_in(0, 64, "drafts per matched token"))
        ->group(g);
  } else {
    cmd.add_option("--sa-draft-ratio", o.sa_draft_ratio, ratio_help)
        ->check(int_in(0, 64, "drafts per matched token"))
        ->capture_default_str()
        ->group(g);
  }
  cmd.add_option("--sa-threshold", o.sa_threshold,
                 owned("--sa-threshold",
                       "the shortest suffix-automaton match trusted over the n-gram drafter"))
      ->check(int_in(1, 1 << 20, "match length"))
      ->capture_default_str()
      ->group(g);
  cmd.add_option("--auto-inner", o.auto_inner,
                 owned("--auto-inner", "the drafter the policy steers"))
      ->check(CLI::Validator(  // a name is checked even where the flag has no effect
          [](std::string& name) -> std::string {
            bool known = false;
            std::vector<std::string> steerable;  // every drafter but none and auto
            for (const DrafterInfo& d : drafter_catalog()) {
              known = known || d.name == name;
              if (d.name != "none" && d.name != "auto") steerable.push_back(d.name);
            }
            if (known) return {};
            return "unknown drafter '" + name + "'; valid: " + join(steerable, ", ");
          },
          "DRAFTER"))
      ->capture_default_str()
      ->group(g);
}

namespace {
// The drafter options' ranges that depend on the drafter (`name`: the one built, auto's inner
// one for auto), checked in flag terms before a lab's constructor sees them: its own message
// names its config's fields. `who` says which --drafter the user gave.
void check_drafter_flags(const std::string& name, const DrafterOptions& o, const std::string& who) {
  const std::string n = "--n " + std::to_string(o.n);
  if (name == "pool" && o.n > 64) {
    throw UsageError(who + ": " + n +
                     " is too large: the pool's keys are at most 64 tokens (--n must be in "
                     "[1, 64])");
  }
  if (name == "ngram" || name == "nasd" || name == "sa+ngram") {
    if (o.n < 2) {
      throw UsageError(who + ": " + n +
                       " is too small: an n-gram model needs n >= 2 (it predicts a token from "
                       "the n - 1 before it)");
    }
    if (o.min_context > o.n - 1) {
      throw UsageError(who + ": --min-context " + std::to_string(o.min_context) +
                       " is too large: the longest context of " + n +
                       " is n - 1 = " + plural(o.n - 1, "token"));
    }
  }
}

// The drafter itself, once make_drafter() has checked the name, k and the flags.
std::unique_ptr<Drafter> make_lab_drafter(const DrafterOptions& o, int k) {
  if (o.drafter == "prompt-lookup") return std::make_unique<PromptLookupDrafter>(o.n);
  if (o.drafter == "ngram") {
    NGramDrafterConfig c;
    c.n = o.n;
    c.min_context = o.min_context;
    c.stop_if_unknown = !o.pad;
    return std::make_unique<NGramDrafter>(c);
  }
  if (o.drafter == "nasd") {
    NasdConfig c;
    c.n = o.n;
    c.min_context = o.min_context;
    c.filler_top_k = o.filler_top_k;
    c.stop_if_unknown = !o.pad;
    return std::make_unique<NasdDrafter>(c);
  }
  if (o.drafter == "pool") {
    NGramPoolConfig c;
    c.max_draft_len = k;
    c.max_matching_ngram_size = o.n;
    c.is_keep_all = !o.pool_keep_one;
    c.is_use_oldest = !o.pool_newest;
    c.is_public_pool = !o.pool_private;
    return std::make_unique<NGramPoolDrafter>(c);
  }
  if (o.drafter == "sa") {
    return std::make_unique<SuffixAutomatonDrafter>(o.sa_min_match, o.sa_draft_ratio);
  }
  if (o.drafter == "sa+ngram") {
    DrafterOptions inner = o;
    inner.drafter = "ngram";
    return std::make_unique<SuffixEnhancerDrafter>(make_lab_drafter(inner, k), o.sa_threshold);
  }
  if (o.drafter == "mine") {
    MyDrafterOptions m;
    m.k = k;
    m.stop_tokens = o.stop_tokens;
    return make_my_drafter(m);
  }
  if (o.drafter == "auto") {
    DrafterOptions inner = o;
    inner.drafter = o.auto_inner;
    return std::make_unique<AutoDrafter>(make_lab_drafter(inner, k));
  }
  throw std::logic_error("make_drafter: '" + o.drafter + "' is marked available but not built");
}
}  // namespace

std::unique_ptr<Drafter> make_drafter(const DrafterOptions& o, int k) {
  const auto require_available = [](const std::string& name) {
    const DrafterInfo& info = drafter_info(name);
    if (!info.available) {
      throw UsageError(
          "drafter '" + name + "' comes with " + info.lab +
          ", which is not in this build yet; available: " + join(available_drafters(), ", "));
    }
  };
  require_available(o.drafter);
  const bool steered = o.drafter == "auto";
  if (steered) {
    if (o.auto_inner == "auto" || o.auto_inner == "none") {
      throw UsageError("--auto-inner must name a drafter other than none and auto");
    }
    require_available(o.auto_inner);
  }
  if (k < 1 || k > 64) {
    throw UsageError("--k must be between 1 and 64 (drafts per round), got " + std::to_string(k));
  }
  if (o.drafter == "none") return nullptr;
  const std::string who =
      "--drafter " + o.drafter + (steered ? " --auto-inner " + o.auto_inner : "");
  check_drafter_flags(steered ? o.auto_inner : o.drafter, o, who);
  try {
    return make_lab_drafter(o, k);
  } catch (const std::invalid_argument& e) {
    // A lab's constructor refused an option that check_drafter_flags does not know about.
    throw UsageError(who + ": " + e.what());
  }
}

void check_n_fits(const DrafterOptions& o, const Target& target, std::size_t prompt_tokens,
                  int max_new_tokens) {
  const long long longest = std::min<long long>(
      target.max_length(), static_cast<long long>(prompt_tokens) + max_new_tokens);
  check_n_within(o, longest,
                 "prompt " + std::to_string(prompt_tokens) + " + max-new-tokens " +
                     std::to_string(max_new_tokens) + ", model limit " +
                     std::to_string(target.max_length()));
}

void check_n_within(const DrafterOptions& o, long long longest, const std::string& why) {
  const std::string& name = o.drafter == "auto" ? o.auto_inner : o.drafter;
  if (!drafter_info(name).uses_n()) return;
  if (o.n < longest) return;
  const std::string problem = " is too long for the context: this run holds at most " +
                              plural(longest, "token") + " (" + why +
                              "), so an n-gram that long, with a token after it, never fits";
  // A default nobody typed does not stop a run that is otherwise fine (a two-token generate):
  // the drafter then proposes nothing, and a warning says so.
  if (o.n_flag != nullptr && o.n_flag->count() == 0) {
    std::fprintf(stderr,
                 "speclab: warning: --n %d (the default)%s; the drafter proposes nothing in this "
                 "run; give a smaller --n to draft\n",
                 o.n, problem.c_str());
    std::fflush(stderr);
    return;
  }
  throw UsageError("--n " + std::to_string(o.n) + problem);
}

void check_fits_context(const Model& model, std::size_t prompt_tokens, int max_new_tokens,
                        const std::string& what, const std::string& shorten) {
  const Target& target = *model.target;
  if (prompt_tokens + static_cast<std::size_t>(max_new_tokens) <=
      static_cast<std::size_t>(target.max_length())) {
    return;
  }
  // Raising --context helps only where --context set the context below the model's own limit.
  const std::string way_out =
      target.max_length() < model.context_limit
          ? " tokens (" + (shorten.empty() ? "" : shorten + ", ") +
                "lower --max-new-tokens, or raise --context, up to the model's own limit of " +
                std::to_string(model.context_limit) + ")"
          : " tokens, the model's own limit (" + (shorten.empty() ? "" : shorten + " or ") +
                "lower --max-new-tokens)";
  throw UsageError(what + " (" + plural(prompt_tokens, "token") + ") + --max-new-tokens " +
                   std::to_string(max_new_tokens) + " does not fit the context: " + target.name() +
                   " holds at most " + std::to_string(target.max_length()) + way_out);
}

// ---- flags that do not apply ----

namespace {

const DrafterInfo* find_drafter(const std::string& name) {
  for (const DrafterInfo& d : drafter_catalog()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

// Why `flag`, given on `cmd`'s command line, has no effect on `run`; empty when it has one.
std::string why_ignored(const CLI::App& cmd, const std::string& flag, const FlagContext& run) {
  const std::string toy_only = "it applies to the toy target only (--model toy)";
  if (flag == "--regime" || flag == "--noise") {
    if (!run.toy) return toy_only;
    if (flag == "--regime" && cmd.get_name() == "bench") {
      return "bench's toy workloads set the regime themselves (choose them with --workload "
             "toy-periodic,toy-markov,toy-random)";
    }
    return {};
  }
  if (flag == "--threads") {
    if (run.toy) return "the toy target runs no worker threads (they are for a real model)";
    return run.cuda ? "--device cuda runs the model on the GPU (--threads sets the CPU model's "
                      "worker threads)"
                    : "";
  }
  if (flag == "--prompt-len") {
    if (!run.toy) return toy_only;
    return run.prompt_given ? "it sets the length of the toy target's own prompt, and --prompt "
                              "or --prompt-file gives the prompt"
                            : "";
  }
  // --system and --raw of generate and trace (chat's --system also opens a toy conversation).
  if (cmd.get_option_no_throw("--raw") != nullptr) {
    if (flag == "--system" && run.toy) {
      return "the toy target has no chat template (its prompt is the token ids of --prompt "
             "alone)";
    }
    if (flag == "--system" && run.raw) {
      return "--raw leaves out the chat template, which is what holds the system message";
    }
    if (flag == "--raw" && run.toy) return "the toy target has no chat template to leave out";
  }
  if (flag == "--seed" && run.seed_unused) {
    // demo has no --temperature: name it only where the command has it.
    const bool samples = cmd.get_option_no_throw("--temperature") != nullptr;
    return std::string("the runs decode greedily") + (samples ? " (--temperature 0)" : "") +
           " and none is on the toy target, whose text it seeds";
  }
  if (flag == "--k") {
    for (const std::string& d : run.drafters) {
      if (d != "none") return {};
    }
    return "--drafter none decodes plainly, with no drafts";
  }
  // A drafter's own option: it applies when one of the run's drafters (or the drafter auto
  // steers) reads it. An unknown name is left to make_drafter(), which refuses it.
  const std::string owners = drafters_reading(flag);
  if (owners.empty()) return {};
  std::vector<std::string> used;
  for (const std::string& name : run.drafters) {
    const DrafterInfo* d = find_drafter(name);
    if (d == nullptr) return {};
    if (d->reads(flag)) return {};
    if (name == "auto") {
      const DrafterInfo* inner = find_drafter(run.auto_inner);
      if (inner == nullptr) return {};
      if (inner->reads(flag)) return {};
      used.push_back("auto (steering " + run.auto_inner + ")");
    } else {
      used.push_back(name);
    }
  }
  return "it is an option of --drafter " + owners + ", and this " +
         (cmd.get_name() == "bench" ? "bench compares " : "run uses ") + join(used, ", ");
}

}  // namespace

std::vector<std::string> ignored_flags(const CLI::App& cmd, const FlagContext& run) {
  std::vector<std::string> lines;
  for (const CLI::Option* option : cmd.get_options()) {
    const std::string flag = option->get_name();  // "--k"; empty for a hidden option
    if (flag.empty() || option->count() == 0) continue;
    const std::string why = why_ignored(cmd, flag, run);
    if (!why.empty()) lines.push_back(flag + " has no effect: " + why);
  }
  return lines;
}

void warn_ignored_flags(const CLI::App& cmd, const FlagContext& run) {
  for (const std::string& line : ignored_flags(cmd, run)) {
    std::fprintf(stderr, "speclab: warning: %s\n", line.c_str());
  }
  std::fflush(stderr);
}

// ---- decoding ----

std::string sampling_label(double temperature, std::uint64_t seed) {
  if (temperature == 0.0) return "greedy";
  char t[32];
  std::snprintf(t, sizeof t, "%g", temperature);
  return std::string("sampled (temperature ") + t + ", seed " + std::to_string(seed) + ")";
}

void add_decode_flags(CLI::App& cmd, DecodeOptions& o) {
  cmd.add_option("--k", o.k, "Drafts per round")
      ->check(int_in(1, 64, "drafts per round"))
      ->capture_default_str();
  cmd.add_option("--temperature", o.temperature, "Sampling temperature; 0 = greedy")
      ->check(real_in(0.0, 100.0, "sampling temperature"))
      ->capture_default_str();
  add_seed_flag(cmd, o.seed, "Sampling seed; for the toy target also the seed of its text");
  cmd.add_option("--max-new-tokens", o.max_new_tokens, "The most tokens to generate")
      ->check(int_in(1, 1 << 20, "tokens to generate"))
      ->capture_default_str();
}

DecodeConfig decode_config(const DecodeOptions& o) {
  DecodeConfig dc;
  dc.k = o.k;
  dc.max_new_tokens = o.max_new_tokens;
  dc.sampling.temperature = o.temperature;
  dc.sampling.seed = o.seed;
  return dc;
}

VerifyRule make_verify_rule(const SamplingParams& sampling) {
  if (sampling.temperature == 0.0) return greedy_verify_rule();  // lab 01
  return sampled_verify_rule();                                  // lab 03
}

GenerationResult run_decode(Target& target, Drafter* drafter, const VerifyRule& verify,
                            std::span<const Token> prompt, const DecodeConfig& config) {
  if (drafter == nullptr) return run_baseline(target, prompt, config);
  return run_speculative(target, *drafter, verify, prompt, config);
}

const char* finish_note(Finish finish) {
  switch (finish) {
    case Finish::stop_token: return " (stopped at end of turn)";
    case Finish::context_full: return " (the context is full)";
    case Finish::max_new_tokens: break;
  }
  return "";
}

}  // namespace speclab::cli
