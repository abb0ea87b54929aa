// The training-step simulator: replays three iterations of protocol.md's loop
// (zero_grad, forward + loss under autocast, backward, optimizer step) over the IR
// as a sequence of allocations and frees. The sequence is built once, with sizes
// as symbolic expressions, and evaluated for any batch without re-analysis.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "estimator/expr_ref.h"
#include "estimator/ir.h"
#include "estimator/reduce_kernel.h"
#include "estimator/target.h"

namespace memest {

/// Memory categories. Column titles and JSON keys live in category_key/title only.
enum class Category : uint8_t {
  Parameters, Buffers, Inputs, Gradients, OptimizerState, Activations, Temporaries, AutocastCache, Workspace,
};
constexpr size_t kCategoryCount = 9;
const char* category_key(Category c);    ///< "optimizer_state"
const char* category_title(Category c);  ///< "Optimizer state"

enum class Phase : uint8_t { Setup, ZeroGrad, Forward, Backward, Optimizer };
const char* phase_name(Phase p);  ///< "forward"

enum class Optim : uint8_t { SGD, Adam, AdamW };
enum class Amp : uint8_t { None, FP16, BF16 };
enum class Loss : uint8_t { CE, MSE, Sum };
enum class Attention : uint8_t { Fused, Eager };
enum class Checkpoint : uint8_t { None, Blocks, Sqrt };
enum class Parallel : uint8_t { None, DDP, FSDP };  ///< --ddp N / --fsdp N (parallel.h)

/// One training configuration (protocol.md's loop).
struct TrainConfig {
  Optim optim = Optim::SGD;
  double momentum = 0;
  Amp amp = Amp::None;
  Loss loss = Loss::CE;
  Attention attention = Attention::Fused;
  int iterations = 3;
  bool foreach = true;  ///< torch's default multi-tensor optimizer (false: fused, no temporaries)
  Checkpoint checkpoint = Checkpoint::None;  ///< torch.utils.checkpoint(use_reentrant=False) per block
  std::vector<std::string> train;   ///< --train PATTERN: only matching parameters train (finetune.h)
  std::vector<std::string> freeze;  ///< --freeze PATTERN: matching parameters are frozen
  int grad_accum = 1;               ///< --grad-accum K: K forward/backward passes per optimizer step
  Parallel parallel = Parallel::None;  ///< data-parallel wrapper, one rank's view (parallel.h)
  int world_size = 1;                  ///< --ddp N / --fsdp N
  bool bucket_view = false;            ///< --bucket-view: DDP(gradient_as_bucket_view=True)
  const Target* target = nullptr;
};

/// One allocation; its size is symbolic until evaluated.
/// 16 bytes: a program holds about 7 blocks a node (6.9M for a million-node graph), and a
/// batch probe evaluates every one. The size is interned (expr_ref.h).
struct Block {
  ExprRef bytes;
  int node;  ///< node that allocated it (-1: setup/optimizer)
  Category category;
  /// Refused under a memory cap, the kernel falls back to an algorithm without it
  /// (cuDNN tries its candidate plans in order) instead of failing.
  bool may_fail = false;
  /// A kernel's scratch whose size a launch heuristic bounds: Program::bound_of says how
  /// (few blocks are, so the bounds are kept out of line).
  bool bounded = false;
};
static_assert(sizeof(Block) <= 16, "a program holds millions of blocks");

struct Event {
  enum Kind : uint8_t { Alloc, Free } kind;
  Phase phase;
  uint8_t iter;
  int block;
};

/// How a scratch block's bytes follow from the sizes: a library's choice of algorithm by
/// size (past switch_above bytes, 0: none, the block takes `above` instead; see the ops'
/// Workspace), or a CUDA reduction's launch. Its sizes are interned as a block's are (a
/// million-node program bounds 461k reduction buffers).
struct SizeBound {
  int64_t switch_above = 0;
  ExprRef above;
  /// A CUDA reduction's global buffer (reduce_kernel.h): the block's bytes evaluate to the
  /// number of outputs, `reduce_inputs` to the inputs per output, and the buffer follows
  /// from the launch at those sizes.
  std::optional<ReduceLaunch> reduce;
  ExprRef reduce_inputs;
  /// Equal bounds size equal blocks alike (block_sizes() evaluates each distinct one once).
  friend bool operator==(const SizeBound&, const SizeBound&) = default;
};

/// The symbolic allocation sequence of a training step.
struct Program {
  std::vector<Block> blocks;
  /// The bounds of the `bounded` blocks, by block id, ascending.
  std::vector<std::pair<int, SizeBound>> bounds;
  std::vector<Event> events;
  /// Block b's bound (b must be `bounded`).
  const SizeBound& bound_of(int b) const;
  /// Blocks each node keeps for backward: a few each, so held inline (id_list.h).
  std::vector<IdList> saved_by_node;
  std::vector<std::string> notes;               ///< assumptions made while building
  /// (node, bytes): how much more than the program holds an unpredictable backward
  /// workspace may take, by its op's bwd_workspace_bound (negative where it takes less).
  /// Workspaces are transient, one call at a time: the peak may rise by the largest.
  std::vector<std::pair<int, Expr>> workspace_excess;
};

/// A run of nodes that torch.utils.checkpoint wraps: [first, last] in node order.
struct Segment {
  int first, last;
  std::string module;  ///< the block's module path ("layer1.0"), or the first block's for sqrt
};

/// The checkpointed segments for a mode: every top-level repeated block (a module path
/// segment that is an index: "layer1.0", "blocks.3", "encoder_layer_7"), or, for Sqrt,
/// those blocks grouped into about sqrt(n) consecutive segments.
std::vector<Segment> checkpoint_segments(const Graph& g, Checkpoint mode);

/// Builds the program for a graph that already has its loss appended (see loss.h).
Program build_program(const Graph& g, const TrainConfig& cfg);

struct PhasePeak {
  int iter;
  Phase phase;
  int64_t peak;
  int64_t end;  ///< allocated bytes when the phase ends
};

/// The evaluated peak and what was alive then.
struct PeakResult {
  int64_t peak_bytes = 0;
  Phase phase = Phase::Setup;
  int iter = 0;
  int node = -1;                ///< node being processed at the peak (-1: none)
  size_t event = 0;             ///< index of the event that reached the peak
  std::array<int64_t, kCategoryCount> components{};  ///< sums exactly to peak_bytes
  std::vector<PhasePeak> phases;
};

/// Follows the live bytes of a replay of a program's events: the peak, where it is and
/// what is alive then, and each phase's peak and end. evaluate() and the allocator
/// replay feed it the bytes each of them counts for a block.
class PeakTracker {
 public:
  explicit PeakTracker(const Program& p) : p_(p) {}
  /// Call before handling event e: closes a phase when the event opens another.
  void at(size_t e);
  void alloc(size_t e, int64_t bytes);
  void free(size_t e, int64_t bytes);
  PeakResult finish();

 private:
  const Program& p_;
  PeakResult r_;
  std::array<int64_t, kCategoryCount> live_{};
  int64_t total_ = 0;
  PhasePeak cur_{0, Phase::Setup, 0, 0};
};

/// PyTorch's view rule for a reshape of a permuted tensor: the output's memory layout
/// ({} when contiguous; layout[i] is the memory position of logical dim i), or nullopt
/// when the reshape must copy.
std::optional<std::vector<int8_t>> reshape_layout(const Shape& in, const std::vector<int8_t>& layout,
                                                   const Shape& out);
/// The layout of a view of part of a strided tensor (split, slice): see layout.cc.
std::vector<int8_t> narrow_layout(const Shape& in, const std::vector<int8_t>& layout, const Shape& out);
/// select's view (Layout::Select): the input's layout less dim `axis`, with a hole where it was
/// unless it was the outermost in memory; {} when that is contiguous.
std::vector<int8_t> select_layout(const Shape& in, const std::vector<int8_t>& layout, int64_t axis);
/// Whether torch.einsum copies operand `which` (0 or 1) of a two-operand `equation`
/// (shapes a and b, the operand's layout `layout`): sumproduct_pair permutes it to
/// [labels of both operands and the output, labels of its own in the output, summed
/// labels] (the right one: batch, summed, own) and reshapes that to 3-D, a copy where the
/// permuted dims do not merge as a view. nullopt for an equation it does not model
/// (an ellipsis, another operand count).
std::optional<bool> einsum_reshape_copies(const std::string& equation, size_t which, const Shape& a, const Shape& b,
                                          const std::vector<int8_t>& layout);
/// An expand of a contiguous tensor from shape `in` to `out`: its broadcast dims (stride 0)
/// with a hole on either side of each run of them; {} when nothing is broadcast.
std::vector<int8_t> broadcast_layout(const Shape& in, const Shape& out);
/// How a batched operand (rank >= 3) of a MatMul whose other operand is batched too
/// reaches bmm, given the product's batch dims `batch` (see layout.cc): spanning them
/// itself, broadcast over all of them, or a mix (the expanded operand is copied).
enum class BmmBatch { Spanned, Broadcast, Mixed };
BmmBatch bmm_batch(const Shape& operand, const Shape& batch);
/// A Transpose node's permutation of a `rank`-dim tensor: its perm attribute (the axes
/// reversed when absent; negative entries counted from the end), or nullopt when it does
/// not fit the rank.
std::optional<std::vector<int64_t>> transpose_perm(const Node& n, size_t rank);
/// A 4-D [N, C, H, W] tensor stored as N, H, W, C (torch.channels_last).
bool is_channels_last(const std::vector<int8_t>& layout);
/// The memory layout of node n's output tensor `out` (see Layout), given its inputs'
/// (`layouts`, per tensor), whether it is a view of input 0 (`in0`), and the dtype
/// output 0 runs in.
std::vector<int8_t> output_layout(const Graph& g, const Node& n, int out, const OpInfo* info, bool view, int in0,
                                  const std::vector<std::vector<int8_t>>& layouts, DType out_run);

/// TensorIterator's output layout for elementwise node n (broadcasting operands
/// included), from its inputs' layouts; {} when contiguous, {-1} when unknown.
std::vector<int8_t> elementwise_layout(const Graph& g, const Node& n, const std::vector<std::vector<int8_t>>& layouts);
/// Whether the last dim is the innermost in memory (stride(-1) == 1), dims of size 1
/// aside; unknown layouts count as yes.
bool last_dim_innermost(const Shape& shape, const std::vector<int8_t>& layout);

/// Caching-allocator rounding of one request (512-byte blocks).
int64_t round_alloc(int64_t bytes, int64_t round = 512);

/// Evaluates a program for concrete dims. Throws Error on overflow or unbound dims.
PeakResult evaluate(const Program& p, const Bindings& b, int64_t round = 512);

/// The peak of the blocks a memory cap cannot refuse (all but `may_fail` workspaces),
/// at their rounded request sizes. A capped caching allocator holds at least these
/// bytes at once, so a budget below this peak certainly runs out of memory: a batch
/// search rejects such a batch without replaying the allocator.
int64_t committed_peak(const Program& p, const Bindings& b, int64_t round = 512);
/// The same, for sizes block_sizes() has evaluated (a search probe shares them with
/// the replay that follows).
int64_t committed_peak(const Program& p, const std::vector<int64_t>& size);

/// The blocks committed_peak() counts at its peak (the first event that reaches it):
/// the requests alive then, `may_fail` ones left out. At other dims they are alive
/// together at that event all the same, so their bytes there are at most the
/// committed_peak() there (a batch search refuses a batch by them alone).
std::vector<int> committed_peak_blocks(const Program& p, const std::vector<int64_t>& size);
/// The bytes of `blocks` at `b`, each as block_sizes(p, b, round) sizes it.
int64_t blocks_bytes(const Program& p, const std::vector<int>& blocks, const Bindings& b, int64_t round = 512);

/// Blocks alive right after event `event` (the peak's, say), in allocation order.
std::vector<int> live_blocks(const Program& p, size_t event);

/// Evaluated sizes of every block (rounded), for the allocator model and timelines.
std::vector<int64_t> block_sizes(const Program& p, const Bindings& b, int64_t round = 512);
/// block_sizes(p, b, round)[block], evaluating that block alone.
int64_t block_size(const Program& p, size_t block, const Bindings& b, int64_t round = 512);

}  // namespace memest
