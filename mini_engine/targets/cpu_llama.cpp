#include "mini_engine/targets/cpu_llama.h"

#include <omp.h>

#include <Eigen/Dense>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <thread>

#include "mini_engine/core/plural.h"
#include "mini_engine/core/printable.h"
#include "mini_engine/targets/cpu_attention.h"
#include "mini_engine/targets/spin_barrier.h"

namespace speclab {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstRowMap = Eigen::Map<const RowMatrix>;
using VecMap = Eigen::Map<Eigen::VectorXf>;
using ConstVecMap = Eigen::Map<const Eigen::VectorXf>;

// Prefills longer than this run in chunks, which bounds the scratch memory; the result is the
// same because attention is causal.
constexpr int kMaxChunk = 512;
// The most queries per attention work item: cpu::attend_fp16's tile (it widens each K and V
// vector once for them).
constexpr int kQueriesPerItem = 6;
// Passes of at most this many tokens quantize their activations redundantly: every thread
// normalizes and quantizes all the rows, into buffers of its own, instead of its share of the rows
// into shared buffers followed by a barrier. That saves four barriers per layer, and in a decode
// step (one row) the waits of the phases only one thread had work in. A 6-token verify pass was
// about 2% slower that way (each thread quantizes 6 rows instead of 3), so only decode steps do
// it (Xeon, 2 threads, 2026-11-28; book/engine_forward.md has the figures).
constexpr int kPrivateActRows = 1;

// An attention work item's cost, in units of one query's work at one position: each query reads
// its len positions, and the item widens each K and V vector it reads once for all its queries,
// which costs about half a query's work (measured on Zen 5).
constexpr double kWideningCost = 0.5;

// [begin, end) of n items for this thread, in contiguous slices rounded to `grain`.
struct Range {
  int begin, end;
};
Range my_slice(int n, int grain = 1) {
  const int nt = omp_get_num_threads(), id = omp_get_thread_num();
  const int units = (n + grain - 1) / grain;
  const int b = static_cast<int>(static_cast<long long>(units) * id / nt) * grain;
  const int e = static_cast<int>(static_cast<long long>(units) * (id + 1) / nt) * grain;
  return {std::min(b, n), std::min(e, n)};
}

// This thread's share of n items whose costs are not alike: item i goes to the thread whose
// slice of the total cost holds the item's midpoint, mid[i] = (cost of items before i) +
// cost_i / 2 (increasing in i). Contiguous, and together the threads cover every item once.
// Thread k of `threads` starts at item weighted_boundary(mid, total, k, threads).
int weighted_boundary(const std::vector<double>& mid, double total, int k, int threads) {
  if (k >= threads) return static_cast<int>(mid.size());
  return static_cast<int>(std::lower_bound(mid.begin(), mid.end(), total * k / threads) -
                          mid.begin());
}
Range my_weighted_slice(const std::vector<double>& mid, double total) {
  const int nt = omp_get_num_threads(), id = omp_get_thread_num();
  return {weighted_boundary(mid, total, id, nt), weighted_boundary(mid, total, id + 1, nt)};
}

// x * w / sqrt(mean(x^2) + eps), one row. As ggml: the squares (float) summed in double, the
// scale 1 / sqrtf(mean + eps) in float, then (x * scale) * w. ggml adds the squares one after
// another; here eight double lanes do (a sequential sum waits on the add's latency at every
// element: 3% of a prefill). The order moves the double total in its last bits only, far below
// the float it becomes.
void rmsnorm(const float* x, const float* w, float eps, int n, float* out) {
  double ss = 0.0;
  int i = 0;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512 sq = _mm512_mul_ps(v, v);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(sq, 1)));
  }
  ss = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
#endif
  for (; i < n; ++i) ss += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(ss / n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

// The activation format for an input that several matrices share: llama.cpp's for their type
// (cpu::act_format_for) when they agree, otherwise q8_0, whose block sums are exact for any type.
cpu::ActFormat shared_format(std::initializer_list<const QuantMatrix*> ms) {
  const cpu::ActFormat f = cpu::act_format_for((*ms.begin())->type);
  for (const QuantMatrix* m : ms) {
    if (cpu::act_format_for(m->type) != f) return cpu::ActFormat::q8_0;
  }
  return f;
}

}  // namespace

// Per-pass buffers, sized for the largest chunk seen so far. Layouts are (tokens, width),
// row-major.
struct CpuLlama::Scratch {
  int rows = 0;
  using Buf = cpu::AlignedVector<float>;
  Buf x;     // (n, n_embd) the residual stream
  Buf out;   // (n, n_embd) the Wo / Wdown output, before it is added to x
  Buf qkv;   // (n, q_dim + 2 * kv_dim): q | k | v of each token
  Buf att;   // (n, q_dim) attention output, heads side by side
  Buf gate;  // (n, n_ff) gate, then silu(gate) * up
  Buf up;    // (n, n_ff)
  Buf rope;  // (n, head_dim): each token's RoPE angles (cpu::rope_angles), shared by every layer
  // The matmuls' quantized inputs. acts[0] is shared by the threads, each quantizing its share
  // of the rows, or (passes of at most kPrivateActRows rows) acts[i] is thread i's own, with
  // every row.
  struct Acts {
    Buf xn;                   // (n, n_embd) normalized input of a sublayer
    cpu::QuantizedActs embd;  // (n, n_embd) xn quantized: the input of Wq/Wk/Wv/Wgate/Wup/Wout
    cpu::QuantizedActs att;   // (n, q_dim) the attention output quantized, the input of Wo
    cpu::QuantizedActs ff;    // (n, n_ff) silu(gate) * up quantized, the input of Wdown
  };
  std::vector<Acts> acts;
  // The attention's work items: the queries (token t, head h) of one sequence's rows that read
  // the same KV head, up to kQueriesPerItem of them (plan_attention() says how many).
  struct AttentionItem {
    int first_row;     // the run of the sequence's consecutive rows starts here
    int g;             // the KV head
    int first, count;  // queries [first, first + count) of the run: query i is row
                       // first_row + i / group, head g * group + i % group
  };
  std::vector<AttentionItem> attention_items;
  // Their cost midpoints for my_weighted_slice (a causal prefill's later tokens attend to more
  // positions, so equal item counts would leave the thread with the late tokens working longer),
  // and the total cost.
  std::vector<double> attention_mid;
  double attention_total = 0.0;
  // Fills attention_items, attention_mid and attention_total for a pass over rows[0, n) that
  // `threads` threads share.
  void plan_attention(const RowSlot* rows, int n, const LlamaHParams& hp, int threads);
  std::vector<Buf> probs;  // per thread: attention scratch (cpu::attend_scratch_floats)
  std::vector<Buf> q16;    // per thread: the queries of one item, rounded to fp16
};

void CpuLlama::Scratch::plan_attention(const RowSlot* rows, int n, const LlamaHParams& hp,
                                       int threads) {
  const int group = hp.n_head / hp.n_head_kv;
  // The runs of one sequence's consecutive rows: each run's queries of one KV head go in items of
  // s queries that widen each K and V vector once (cpu::attend_fp16).
  std::vector<std::pair<int, int>> runs;  // [first row, end row)
  for (int r0 = 0, r1 = 0; r0 < n; r0 = r1) {
    for (r1 = r0 + 1; r1 < n && rows[r1].cache == rows[r0].cache; ++r1) {
    }
    runs.emplace_back(r0, r1);
  }
  // Bigger items widen each vector for more queries; smaller ones split a short pass more evenly
  // between the threads (a decode step of SmolLM2 has 3 queries per KV head: items of 3 give one
  // thread 2 of the 3 items, 6 of the 9 queries; items of 2 split them 2 + 1 + 2 against
  // 1 + 2 + 1). The plan takes the item size whose busiest thread, under the split
  // my_weighted_slice makes, costs the least; ties go to the bigger items.
  std::vector<AttentionItem> items;
  std::vector<double> mid, cost;
  double best_busiest = 0.0;
  for (int s = kQueriesPerItem; s >= 1; --s) {
    items.clear();
    mid.clear();
    cost.clear();
    double total = 0.0;
    for (const auto& [r0, r1] : runs) {
      const int queries = (r1 - r0) * group;
      for (int g = 0; g < hp.n_head_kv; ++g) {
        for (int f = 0; f < queries; f += s) {
          const AttentionItem item{r0, g, f, std::min(s, queries - f)};
          int sum = 0, longest = 0;  // positions read
          for (int j = item.first; j < item.first + item.count; ++j) {
            const int len = rows[item.first_row + j / group].pos + 1;
            sum += len;
            longest = std::max(longest, len);
          }
          const double c = sum + kWideningCost * longest;
          items.push_back(item);
          mid.push_back(total + 0.5 * c);
          cost.push_back(c);
          total += c;
        }
      }
    }
    double busiest = 0.0;
    for (int k = 0; k < threads; ++k) {
      const int b = weighted_boundary(mid, total, k, threads);
      const int e = weighted_boundary(mid, total, k + 1, threads);
      double c = 0.0;
      for (int i = b; i < e; ++i) c += cost[static_cast<size_t>(i)];
      busiest = std::max(busiest, c);
    }
    if (s == kQueriesPerItem || busiest < best_busiest) {
      best_busiest = busiest;
      attention_items.swap(items);
      attention_mid.swap(mid);
      attention_total = total;
    }
  }
}

std::unique_ptr<CpuLlama> CpuLlama::open(const std::string& path, CpuLlamaOptions options) {
  return std::make_unique<CpuLlama>(GgufFile::open(path), options);
}

CpuLlama::CpuLlama(GgufFile file, CpuLlamaOptions options)
    : file_(std::move(file)), w_(load_llama_weights(file_)), options_(options) {
  if (options.threads < 0 || options.threads > kMaxCpuThreads) {
    throw std::invalid_argument("CpuLlamaOptions: threads must be in [0, " +
                                std::to_string(kMaxCpuThreads) + "] (0 = every core), got " +
                                std::to_string(options.threads));
  }
  cpu::check_kernel(options.kernel, "CpuLlamaOptions");
  if (options.max_context < 0) {
    throw std::invalid_argument(
        "CpuLlamaOptions: max_context must be >= 0 (0 = the model's), got " +
        std::to_string(options.max_context));
  }
  threads_ = options.threads > 0
                 ? options.threads
                 : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  max_length_ = w_.hp.n_ctx_train;
  if (options.max_context > 0) max_length_ = std::min(max_length_, options.max_context);
  // For headers and messages: the file's bytes, made printable and clipped (an escape sequence
  // in general.name reached the terminal).
  model_name_ = printable(clipped(file_.get_string_or("general.name", "llama")));
  const int hd = w_.hp.head_dim;
  rope_theta_scale_ = std::pow(w_.hp.rope_base, -2.0f / static_cast<float>(hd));
  scratch_ = std::make_unique<Scratch>();
  if (options.kernel == cpu::MatmulKernel::packed) {
    // In the order a forward pass reads them.
    std::vector<const QuantMatrix*> order;
    for (const LlamaLayer& L : w_.layers) {
      for (const QuantMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
        order.push_back(m);
      }
    }
    order.push_back(&w_.output);
    size_t bytes = 0;
    for (const QuantMatrix* m : order) {
      bytes += cpu::WeightArena::aligned_size(cpu::PackedMatrix::packed_bytes(*m));
    }
    packed_arena_ = cpu::WeightArena(bytes);
    auto pack = [&](const QuantMatrix& m) { return cpu::PackedMatrix(m, packed_arena_); };
    for (const LlamaLayer& L : w_.layers) {
      packed_layers_.push_back({pack(L.wq), pack(L.wk), pack(L.wv), pack(L.wo), pack(L.w_gate),
                                pack(L.w_up), pack(L.w_down)});
    }
    packed_output_ = pack(w_.output);
  }
}

CpuLlama::~CpuLlama() = default;

std::string CpuLlama::name() const {
  return "cpu-llama(" + model_name_ + ", " + plural(threads_, "thread") + ")";
}

void CpuLlama::truncate(int new_len) {
  if (new_len < 0 || new_len > length()) {
    throw std::out_of_range("CpuLlama::truncate(" + std::to_string(new_len) +
                            "): the sequence holds " + std::to_string(length()) + " tokens");
  }
  tokens_.resize(static_cast<size_t>(new_len));
}

void CpuLlama::reserve_kv(KvCache& kv, int n_tokens, int keep) const {
  if (n_tokens <= kv.capacity) return;
  // Grow geometrically (amortized O(1) per token), never past max_length().
  // Whole 16-key blocks (cpu::key_slots): the keys' layout comes in blocks of 16 positions.
  const int cap = cpu::key_slots(std::min(max_length_, std::max({n_tokens, 2 * kv.capacity, 256})));
  const LlamaHParams& hp = w_.hp;
  const size_t slabs = static_cast<size_t>(hp.n_layer) * hp.n_head_kv;
  const size_t hd = static_cast<size_t>(hp.head_dim);
  cpu::AlignedVector<std::uint16_t> k(slabs * cap * hd), v(slabs * cap * hd);
  // A slab's first key_slots(keep) positions are whole blocks of keys, and rows of values.
  const size_t kept = static_cast<size_t>(cpu::key_slots(keep)) * hd;
  for (size_t s = 0; s < slabs; ++s) {
    std::copy_n(kv.k.begin() + s * kv.capacity * hd, kept, k.begin() + s * cap * hd);
    std::copy_n(kv.v.begin() + s * kv.capacity * hd, kept, v.begin() + s * cap * hd);
  }
  kv.k.swap(k);
  kv.v.swap(v);
  kv.capacity = cap;
}

Logits CpuLlama::extend(std::span<const Token> tokens) {
  // Checked before the tokens x vocab result is allocated: a document far past max_length()
  // is a ContextOverflow, not gigabytes of zeroed logits first (or std::bad_alloc).
  check_tokens(tokens, "CpuLlama::extend");
  Logits out(static_cast<int>(tokens.size()), vocab_size());
  run(tokens, out.data());
  return out;
}

void CpuLlama::append(std::span<const Token> tokens) {
  check_tokens(tokens, "CpuLlama::append");
  run(tokens, nullptr);
}

void CpuLlama::check_tokens(std::span<const Token> tokens, const std::string& w) const {
  if (tokens.empty()) throw std::invalid_argument(w + ": no tokens to append");
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab_size()) {
      throw std::invalid_argument(w + ": token id " + std::to_string(tokens[i]) + " at index " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(vocab_size()) + ")");
    }
  }
  const long long want = static_cast<long long>(length()) + static_cast<long long>(tokens.size());
  if (want > max_length_) {
    throw ContextOverflow(w + ": appending " + std::to_string(tokens.size()) + " tokens to " +
                          std::to_string(length()) + " would hold " + std::to_string(want) +
                          ", past the maximum context of " + std::to_string(max_length_) +
                          " tokens (llama.context_length = " + std::to_string(w_.hp.n_ctx_train) +
                          ", max_context option = " + std::to_string(options_.max_context) + ")");
  }
}

void CpuLlama::run(std::span<const Token> tokens, float* logits) {
  const long long want = static_cast<long long>(length()) + static_cast<long long>(tokens.size());
  const int n = static_cast<int>(tokens.size());
  reserve_kv(kv_, static_cast<int>(want), length());
  for (int c = 0; c < n; c += kMaxChunk) {
    const int m = std::min(kMaxChunk, n - c);
    forward(tokens.data() + c, m, length() + c,
            logits ? logits + static_cast<size_t>(c) * static_cast<size_t>(vocab_size()) : nullptr);
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
}

void CpuLlama::forward(const Token* tokens, int n, int pos0, float* logits) {
  std::vector<RowSlot> rows(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) rows[t] = {&kv_, pos0 + t};
  forward_rows(tokens, rows.data(), n, logits);
}

void CpuLlama::forward_rows(const Token* tokens, const RowSlot* rows, int n, float* logits) {
  const LlamaHParams& hp = w_.hp;
  const int E = hp.n_embd, hd = hp.head_dim, F = hp.n_ff;
  const int q_dim = hp.n_head * hd, kv_dim = hp.kv_dim();
  const int qkv_w = q_dim + 2 * kv_dim;
  const int group = hp.n_head / hp.n_head_kv;  // query heads per KV head
  const float att_scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const cpu::MatmulKernel kernel = options_.kernel;
  const bool packed = kernel == cpu::MatmulKernel::packed;
  // y = w . x for output rows [r0, r1), on the packed copy when there is one.
  auto mm = [&](const QuantMatrix& w, const cpu::PackedMatrix* pw, const cpu::QuantizedActs& x,
                float* y, int ldy, int r0, int r1) {
    if (packed) {
      cpu::matmul(*pw, x, y, ldy, r0, r1);
    } else {
      cpu::matmul(kernel, w, x, y, ldy, r0, r1);
    }
  };

  Scratch& S = *scratch_;
  if (S.rows < n) {
    S.rows = n;
    S.x.resize(static_cast<size_t>(n) * E);
    S.out.resize(static_cast<size_t>(n) * E);
    S.qkv.resize(static_cast<size_t>(n) * qkv_w);
    S.att.resize(static_cast<size_t>(n) * q_dim);
    S.gate.resize(static_cast<size_t>(n) * F);
    S.up.resize(static_cast<size_t>(n) * F);
    S.rope.resize(static_cast<size_t>(n) * hd);
  }
  int max_pos = 0;
  for (int t = 0; t < n; ++t) max_pos = std::max(max_pos, rows[t].pos);
  S.plan_attention(rows, n, hp, threads_);
  S.probs.resize(static_cast<size_t>(threads_));
  for (auto& p : S.probs) {
    p.resize(static_cast<size_t>(kQueriesPerItem) * cpu::key_slots(max_pos + 1));
  }
  S.q16.resize(static_cast<size_t>(threads_));
  for (auto& q : S.q16) q.resize(static_cast<size_t>(kQueriesPerItem) * hd);
  // Sized here, outside the parallel region: inside it the threads only fill their own buffers
  // or disjoint rows of a shared one.
  const bool private_acts = n <= kPrivateActRows && threads_ > 1;
  S.acts.resize(static_cast<size_t>(private_acts ? threads_ : 1));
  for (Scratch::Acts& a : S.acts) {
    if (a.xn.size() < static_cast<size_t>(n) * E) a.xn.resize(static_cast<size_t>(n) * E);
    a.embd.reset(n, E);
    a.att.reset(n, q_dim);
    a.ff.reset(n, F);
  }

  // Layer l, KV head g: its keys (cpu::key_index layout) and its value rows.
  auto keys_at = [&](KvCache& kv, int l, int g) {
    return kv.k.data() + (static_cast<size_t>(l) * hp.n_head_kv + g) * kv.capacity * hd;
  };
  auto v_at = [&](KvCache& kv, int l, int g, int pos) {
    return kv.v.data() + ((static_cast<size_t>(l) * hp.n_head_kv + g) * kv.capacity + pos) * hd;
  };
  // The rows this thread quantizes: all of them into its own buffers, or its share.
  auto act_rows = [&]() { return private_acts ? Range{0, n} : my_slice(n); };
  // After the threads quantized: with shared buffers, each must see the others' rows.
  auto acts_ready = [&](cpu::SpinBarrier& barrier) {
    if (!private_acts) barrier.arrive_and_wait();
  };
  // Normalizes and quantizes this thread's token rows of `src` (width E) with weight `norm`.
  auto norm_quantize = [&](Scratch::Acts& A, const float* src, const float* norm,
                           cpu::ActFormat format) {
    const Range tr = act_rows();
    for (int t = tr.begin; t < tr.end; ++t) {
      rmsnorm(src + static_cast<size_t>(t) * E, norm, hp.rms_eps, E,
              A.xn.data() + static_cast<size_t>(t) * E);
    }
    A.embd.quantize_rows(A.xn.data(), E, tr.begin, tr.end, format);
  };

  // One parallel region for the whole pass; barriers separate the steps. They are our own
  // (spin_barrier.h), not OpenMP's, which spin so long that a pass crawls when other programs
  // keep the cores busy. Nothing inside throws: every shape was checked at load time and every
  // buffer is sized above (an exception escaping an OpenMP region would terminate the program).
  std::optional<cpu::SpinBarrier> barrier;
#pragma omp parallel num_threads(threads_)
  {
#pragma omp single
    barrier.emplace(omp_get_num_threads());  // the team OpenMP gave; the single ends in a barrier
    {
      const int tid = omp_get_thread_num();
      Scratch::Acts& A = S.acts[private_acts ? static_cast<size_t>(tid) : 0];
      // Token embeddings (exact: a Q8_0 row decodes without rounding).
      for (Range tr = my_slice(n); tr.begin < tr.end; ++tr.begin) {
        cpu::dequantize_matrix_row(w_.token_embd, tokens[tr.begin],
                                   S.x.data() + static_cast<size_t>(tr.begin) * E);
        cpu::rope_angles(hd, rows[tr.begin].pos, rope_theta_scale_,
                         S.rope.data() + static_cast<size_t>(tr.begin) * hd);
      }
      barrier->arrive_and_wait();
      for (int l = 0; l < hp.n_layer; ++l) {
        const LlamaLayer& L = w_.layers[l];
        const PackedLayer* P = packed ? &packed_layers_[static_cast<size_t>(l)] : nullptr;
        // ---- attention ----
        norm_quantize(A, S.x.data(), L.attn_norm, shared_format({&L.wq, &L.wk, &L.wv}));
        acts_ready(*barrier);
        {  // q | k | v: one range of output rows per thread over the three matrices.
          const Range rr = my_slice(qkv_w, 16);
          const int q1 = q_dim, k1 = q_dim + kv_dim;
          if (rr.begin < q1) {
            mm(L.wq, P ? &P->wq : nullptr, A.embd, S.qkv.data(), qkv_w, rr.begin,
               std::min(rr.end, q1));
          }
          if (rr.end > q1 && rr.begin < k1) {
            mm(L.wk, P ? &P->wk : nullptr, A.embd, S.qkv.data() + q1, qkv_w,
               std::max(rr.begin, q1) - q1, std::min(rr.end, k1) - q1);
          }
          if (rr.end > k1) {
            mm(L.wv, P ? &P->wv : nullptr, A.embd, S.qkv.data() + k1, qkv_w,
               std::max(rr.begin, k1) - k1, rr.end - k1);
          }
        }
        barrier->arrive_and_wait();
        // RoPE on q and k; k and v go into the cache at their positions.
        {
          const int heads = hp.n_head + hp.n_head_kv;
          const Range jr = my_slice(n * heads);
          for (int j = jr.begin; j < jr.end; ++j) {
            const int t = j / heads, h = j % heads, pos = rows[t].pos;
            KvCache& kv = *rows[t].cache;
            float* row = S.qkv.data() + static_cast<size_t>(t) * qkv_w;
            const float* cs = S.rope.data() + static_cast<size_t>(t) * hd;
            if (h < hp.n_head) {
              cpu::rope_apply(row + h * hd, hd, cs);
            } else {
              const int g = h - hp.n_head;
              float* k = row + q_dim + g * hd;
              cpu::rope_apply(k, hd, cs);
              cpu::store_key_fp16(k, hd, pos, keys_at(kv, l, g));
              cpu::to_fp16(row + q_dim + kv_dim + g * hd, hd, v_at(kv, l, g, pos));
            }
          }
        }
        barrier->arrive_and_wait();
        // Causal attention: query (t, h) sees positions 0..rows[t].pos of its own sequence's
        // KV head h / group.
        {
          const Range ir = my_weighted_slice(S.attention_mid, S.attention_total);
          Scratch::Buf& probs = S.probs[static_cast<size_t>(tid)];
          Scratch::Buf& q16 = S.q16[static_cast<size_t>(tid)];
          cpu::AttentionQuery queries[kQueriesPerItem];
          for (int i = ir.begin; i < ir.end; ++i) {
            const Scratch::AttentionItem& item = S.attention_items[static_cast<size_t>(i)];
            for (int j = 0; j < item.count; ++j) {
              const int t = item.first_row + (item.first + j) / group;
              const int h = item.g * group + (item.first + j) % group;
              float* qj = q16.data() + static_cast<size_t>(j) * hd;
              std::copy_n(S.qkv.data() + static_cast<size_t>(t) * qkv_w + h * hd, hd, qj);
              cpu::round_fp16_inplace(qj, hd);
              queries[j] = {qj, rows[t].pos + 1,
                            S.att.data() + static_cast<size_t>(t) * q_dim + h * hd};
            }
            KvCache& kv = *rows[item.first_row].cache;
            cpu::attend_fp16(keys_at(kv, l, item.g), v_at(kv, l, item.g, 0), hd, att_scale, queries,
                             item.count, probs.data());
          }
        }
        barrier->arrive_and_wait();
        {
          const Range tr = act_rows();
          A.att.quantize_rows(S.att.data(), q_dim, tr.begin, tr.end,
                              cpu::act_format_for(L.wo.type));
        }
        acts_ready(*barrier);
        {  // x += Wo . att; each thread adds the columns it computed.
          const Range rr = my_slice(E, 16);
          mm(L.wo, P ? &P->wo : nullptr, A.att, S.out.data(), E, rr.begin, rr.end);
          for (int t = 0; t < n; ++t) {
            float* x = S.x.data() + static_cast<size_t>(t) * E;
            const float* o = S.out.data() + static_cast<size_t>(t) * E;
            for (int c = rr.begin; c < rr.end; ++c) x[c] += o[c];
          }
        }
        barrier->arrive_and_wait();
        // ---- SwiGLU feed-forward ----
        norm_quantize(A, S.x.data(), L.ffn_norm, shared_format({&L.w_gate, &L.w_up}));
        acts_ready(*barrier);
        {
          const Range rr = my_slice(F, 16);
          mm(L.w_gate, P ? &P->w_gate : nullptr, A.embd, S.gate.data(), F, rr.begin, rr.end);
          mm(L.w_up, P ? &P->w_up : nullptr, A.embd, S.up.data(), F, rr.begin, rr.end);
          for (int t = 0; t < n; ++t) {
            float* g = S.gate.data() + static_cast<size_t>(t) * F;
            const float* u = S.up.data() + static_cast<size_t>(t) * F;
            cpu::silu_mul(g + rr.begin, u + rr.begin, rr.end - rr.begin);
          }
        }
        barrier->arrive_and_wait();
        {
          const Range tr = act_rows();
          A.ff.quantize_rows(S.gate.data(), F, tr.begin, tr.end,
                             cpu::act_format_for(L.w_down.type));
        }
        acts_ready(*barrier);
        {
          const Range rr = my_slice(E, 16);
          mm(L.w_down, P ? &P->w_down : nullptr, A.ff, S.out.data(), E, rr.begin, rr.end);
          for (int t = 0; t < n; ++t) {
            float* x = S.x.data() + static_cast<size_t>(t) * E;
            const float* o = S.out.data() + static_cast<size_t>(t) * E;
            for (int c = rr.begin; c < rr.end; ++c) x[c] += o[c];
          }
        }
        barrier->arrive_and_wait();
      }
      // ---- output (skipped when no one wants the logits: the same choice in every thread) ----
      if (logits != nullptr) {
        norm_quantize(A, S.x.data(), w_.output_norm, cpu::act_format_for(w_.output.type));
        acts_ready(*barrier);
        const Range rr = my_slice(hp.n_vocab, 16);
        mm(w_.output, &packed_output_, A.embd, logits, hp.n_vocab, rr.begin, rr.end);
      }
    }
  }
}

}  // namespace speclab
