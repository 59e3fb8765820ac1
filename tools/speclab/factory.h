#pragma once
// The one place that turns flags into engine objects: --model/--device/--threads into a Target
// and its TextCodec, --drafter and its options into a Drafter, and the sampling flags into a
// VerifyRule. Every subcommand goes through here, so a new lab's drafter or a new backend is a
// few lines in factory.cpp and shows up in generate, chat, bench and trace at once.
//
// The drafters and verify rules come from the labs: the reference solutions in speclab-solution,
// the student's starters in speclab-starter (LAB_IMPL picks; see launcher.cpp).
#include <CLI/CLI.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "flags.h"
#include "mini_engine/core/batch_target.h"
#include "mini_engine/core/target.h"
#include "mini_engine/spec/drafter.h"
#include "mini_engine/spec/loop.h"
#include "mini_engine/spec/verify.h"
#include "text.h"

namespace speclab::cli {

// "solution" or "starter": which lab implementations this binary was linked with.
const char* lab_impl();

// ---- targets ----

// The largest --context the CLI takes. The toy target holds whatever --context asks, up to this.
constexpr int kMaxContext = 1 << 24;

struct TargetOptions {
  std::string model = "toy";   // "toy", "smollm2", or the path of a Llama-family GGUF file
  std::string device = "cpu";  // "cpu" | "cuda"
  int threads = 0;             // CPU worker threads; 0 = every core
  int context = 0;  // the most tokens a sequence may hold; 0 = the model's own limit (more than
                    // that limit is refused: the model was not made for it)
  // The toy target only:
  std::string regime = "periodic";  // periodic | markov | random
  double noise = -1.0;              // -1: the regime's default
  // Set by the subcommand, not by a flag: the seed of the toy's text (the subcommand's --seed)
  // and roughly how many tokens a run will hold (the random regime's vocabulary exceeds it, so
  // its text never repeats).
  std::uint64_t toy_seed = 0;
  int toy_length_hint = 0;
};

// A loaded model: the target and how text maps to its tokens.
struct Model {
  std::unique_ptr<Target> target;
  std::unique_ptr<TextCodec> codec;
  std::string description;  // one line for headers and reports, e.g. "toy(periodic) on cpu"
  bool is_toy = false;
  // The most tokens the model itself can hold, whatever --context says: a GGUF model's
  // llama.context_length; for the toy target, kMaxContext. target->max_length() is this, or
  // less when --context asked for less.
  int context_limit = 0;
};

// Adds --model, --device, --threads, --context and the toy target's --regime and --noise to
// `cmd`. (The toy's seed is the subcommand's --seed.)
void add_target_flags(CLI::App& cmd, TargetOptions& options);

// Returns `threads` (CPU worker threads, 0 = every core). Throws UsageError naming --threads when
// it is more than the machine's cores.
int check_cpu_threads(int threads);

// The model file --model names, for checks that an output does not overwrite it: the path as
// given, smollm2_path() for 'smollm2' (cached yet or not: a download would land there), empty for
// 'toy' and where smollm2_path() has none.
std::string model_file_given(const TargetOptions& options);

// Loads the model `options` names. Throws UsageError with a precise message for an unknown
// model, a missing or unreadable file, a --context above the model's own limit (naming it),
// --device cuda without a usable GPU (the message carries cuda_unavailable_reason()), and a
// backend this build lacks.
Model load_model(const TargetOptions& options);

// Whether `options` will run on a GPU: --device cuda and a usable CUDA device. Where it is false
// for --device cuda, load_model refuses the run, so no flag is called idle for the GPU's sake.
bool runs_on_gpu(const TargetOptions& options);

// The batched target for `options` (bench --batch): CpuLlamaBatch on the model's GGUF. Throws
// UsageError for the toy, for --device cuda (no batched CUDA target yet) and for the same file
// and --context problems as load_model.
std::unique_ptr<BatchTarget> load_batch_model(const TargetOptions& options);

// Where the SmolLM2 file is or would be downloaded to: $SPECLAB_MODEL, else
// SmolLM2-135M-Instruct.Q4_1.gguf in $SPECLAB_CACHE (default ~/.cache/speclab). Empty when
// neither variable nor HOME is set. Looks at no file.
std::optional<std::string> smollm2_path();
// smollm2_path() when it is a regular file; empty otherwise. Never downloads.
std::optional<std::string> cached_smollm2();
// cached_smollm2(), or else runs tools/fetch_model to download it. On failure returns nothing
// and, when `why` is given, stores the reason.
std::optional<std::string> fetch_smollm2(std::string* why = nullptr);

// ---- drafters ----

struct DrafterOptions {
  std::string drafter = "prompt-lookup";
  int n = 3;             // prompt-lookup: match length; ngram/nasd/sa+ngram: longest n-gram;
                         // pool: longest key
  int min_context = 1;   // ngram/nasd: the back-off floor
  bool pad = false;      // ngram/nasd: pad a miss instead of ending the draft
  int filler_top_k = 3;  // nasd: also learn the target's top-k tokens (lab 03's default)
  // pool: values hold up to k tokens (max_draft_len = --k), keys up to n.
  bool pool_private = false;   // pool: one pool per request instead of the public pool
  bool pool_newest = false;    // pool: propose the newest value instead of the oldest
  bool pool_keep_one = false;  // pool: keep only the longest value per key
  int sa_min_match = 2;    // sa: the shortest match it proposes from (one token is weak evidence)
  int sa_draft_ratio = 0;  // sa: drafts at most this many tokens per matched token; 0: no cut
  int sa_threshold = 4;    // sa+ngram: shortest suffix-automaton match trusted over the n-gram
                           // drafter (TensorRT-LLM's default)
  std::string auto_inner = "prompt-lookup";  // auto: the drafter the policy steers
  // Set by add_drafter_flags: the --n flag, whose count() says whether the command line gave n
  // (check_n_within's message then does not call it the default). Null: treated as given.
  const CLI::Option* n_flag = nullptr;
  // Set by the subcommand from the model's codec, not by a flag: the tokens that end a reply.
  // mine (lab 07) never drafts past one of them; empty: none (the toy target).
  std::vector<Token> stop_tokens = {};
};

// What the CLI knows about one --drafter value.
struct DrafterInfo {
  std::string name;
  std::string summary;     // one line for --help
  std::string lab;         // the lab that implements it ("" for none and auto)
  bool available = false;  // false: its lab is not in this build yet
  // The drafter options it reads ("--n", "--min-context", ...); auto reads "--auto-inner", and
  // its inner drafter's options.
  std::vector<std::string> options = {};

  bool reads(const std::string& flag) const;
  // Whether --n changes it (bench sweeps --n only for these).
  bool uses_n() const { return reads("--n"); }
};

// Every --drafter value, in the order --help lists them.
const std::vector<DrafterInfo>& drafter_catalog();
// The catalog entry for `name`. Throws UsageError naming the valid values for an unknown name.
const DrafterInfo& drafter_info(const std::string& name);
// The names that can be built in this binary, "none" included.
std::vector<std::string> available_drafters();

// The drafters whose DrafterInfo::options hold `flag`, comma-separated ("ngram, nasd, sa+ngram").
std::string drafters_reading(const std::string& flag);

// Adds --drafter, --n and each drafter's own options to `cmd`. With `drafter_list`, `n_list`
// and `ratio_list` (bench), --drafter, --n and --sa-draft-ratio take comma-separated lists into
// those instead.
void add_drafter_flags(CLI::App& cmd, DrafterOptions& options,
                       std::vector<std::string>* drafter_list = nullptr,
                       std::vector<int>* n_list = nullptr, std::vector<int>* ratio_list = nullptr);

// A new drafter for options.drafter, or nullptr for "none" (plain decoding).
// `k` is the number of drafts per round (the pool sizes its values with it).
// Throws UsageError for an unknown drafter, one whose lab is not in this build, and options out
// of range, naming the flag.
std::unique_ptr<Drafter> make_drafter(const DrafterOptions& options, int k);

// Checks the n-gram size against the longest context a run of one prompt can have (generate,
// trace): the model's limit, and prompt + max_new_tokens. check_n_within() says the rest.
void check_n_fits(const DrafterOptions& options, const Target& target, std::size_t prompt_tokens,
                  int max_new_tokens);
// Throws UsageError when the drafter `options` names reads --n and n >= `longest`, the most
// tokens the run's context can hold (`why` says what sets that, for the message: "prompt 5 +
// max-new-tokens 2, model limit 64"): an n-gram that long never occurs with a token after it.
// A chat grows to the model's limit; a bench conversation to its prompts and replies. When
// options.n_flag shows that the command line did not give n (its default), nothing is thrown: a
// warning on stderr says the drafter will propose nothing, and the run goes on.
void check_n_within(const DrafterOptions& options, long long longest, const std::string& why);

// Throws UsageError when `what` (prompt_tokens long) plus max_new_tokens would not fit in the
// model's context: better said before the run than as an overflow half-way through it. The
// message suggests raising --context only when --context set the context below the model's own
// limit; at that limit it says so. `shorten` is the way to a shorter prompt that the message
// suggests first ("lower --prompt-len"), or "" where the user has none (demo's prompt is built
// in).
void check_fits_context(const Model& model, std::size_t prompt_tokens, int max_new_tokens,
                        const std::string& what = "the prompt",
                        const std::string& shorten = "shorten the prompt");

// ---- flags that do not apply ----

// What one run uses, to tell which of the flags given have no effect on it.
struct FlagContext {
  bool toy = false;                        // --model toy
  bool cuda = false;                       // runs_on_gpu(): --device cuda, with a usable GPU
  std::vector<std::string> drafters = {};  // the drafters it builds; bench: all it compares
  std::string auto_inner = {};             // the drafter auto steers, when auto is among them
  bool prompt_given = false;               // generate, trace: --prompt or --prompt-file
  bool raw = false;                        // generate, trace: --raw
  bool seed_unused = false;  // --seed seeds nothing: every run is greedy and none is on the toy
                             // target (whose text it also seeds)
};

// The flags given on `cmd`'s command line (Option::count() after parsing) that have no effect on
// the run `run` describes, one line each, in --help order: "--pool-private has no effect: it is
// an option of --drafter pool, and this run uses ngram". They are the toy target's flags with a
// real model (and --regime in bench, whose toy workloads set it), --threads on the toy target or
// with --device cuda (--device cuda with the toy target is refused by load_model, not warned of),
// trace's --prompt-len with a prompt given, --system and --raw where there is no chat template
// (the toy target; --system with --raw), --k with --drafter none, --seed where it seeds nothing
// (run.seed_unused), and an option of a drafter that the run does not use (in bench: that none of
// the compared drafters reads).
std::vector<std::string> ignored_flags(const CLI::App& cmd, const FlagContext& run);

// Prints ignored_flags() to stderr, each as "speclab: warning: ...". A warning, not an error, so
// that scripts keep working. Each subcommand calls it once, after parsing, before its run.
void warn_ignored_flags(const CLI::App& cmd, const FlagContext& run);

// ---- decoding ----

struct DecodeOptions {
  int k = 5;                 // drafts per round, 1..64
  double temperature = 0.0;  // 0 = greedy
  std::uint64_t seed = 0;    // sampling seed
  int max_new_tokens = 128;
};

// How a run decodes, for the header lines of generate, chat and bench: "greedy" at temperature 0,
// else "sampled (temperature 0.7, seed 4)" (the temperature as %g).
std::string sampling_label(double temperature, std::uint64_t seed);

// Adds --k, --temperature, --seed and --max-new-tokens (default `default_max_new_tokens`).
void add_decode_flags(CLI::App& cmd, DecodeOptions& options);

// The engine's DecodeConfig for `options`.
DecodeConfig decode_config(const DecodeOptions& options);

// The verify rule for `sampling`: the lab 01 greedy rule at temperature 0, the lab 03 sampled
// rule otherwise. Throws UsageError when the rule's lab is not in this build.
VerifyRule make_verify_rule(const SamplingParams& sampling);

// Runs plain decoding when `drafter` is null, speculative decoding otherwise.
GenerationResult run_decode(Target& target, Drafter* drafter, const VerifyRule& verify,
                            std::span<const Token> prompt, const DecodeConfig& config);

// What a stats line adds for how a run ended: " (stopped at end of turn)", " (the context is
// full)", or "" when it ran to --max-new-tokens.
const char* finish_note(Finish finish);

}  // namespace speclab::cli
