// tilejit/runtime/kernel.hpp — compiling a traced kernel for a device and
// launching it with typed arguments.
//
//   auto k = tj::compile<VecAdd<96>>(dev, {.num_warps = 1});
//   k.launch(tj::Grid{tj::cdiv(n, 96)}, x, y, out, n);
//
// The kernel is traced once at compile(); machine code is produced per
// specialisation at first launch (pointer 16-byte alignment, integer
// divisibility by 16 and equality to 1, as in Triton), through the kernel
// cache. Launch arguments are checked at compile time against the kernel's
// parameter types, and at run time before anything reaches the driver.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tilejit/codegen/codegen.hpp"
#include "tilejit/ir/cost.hpp"
#include "tilejit/lang/trace.hpp"
#include "tilejit/profiler/launch.hpp"
#include "tilejit/runtime/cache.hpp"
#include "tilejit/runtime/device.hpp"
#include "tilejit/runtime/tensor_descriptor.hpp"

namespace tilejit {

using runtime::Backend;
using runtime::Device;
using runtime::Stream;
/// What a launch reports to the profiler's launch hook: flops (and their width) and bytes, totalled over the
/// grid. Derived from the IR unless the kernel declares it (Kernel::launch).
using LaunchCost = ir::LaunchCost;

/// Launch grid in programs (CTAs). Every dimension must be >= 1 at launch.
struct Grid {
  long long x = 1, y = 1, z = 1;
};

struct CompileOptions {
  int num_warps = 4;  ///< warps per program: a power of two in 1..32, or 12, 20, 24, 28 (whole warp groups; 1..16 on wave64)
  /// Shared-memory buffers of the TMA pipeline of a loop (sm_90a) or its
  /// cp.async pipeline (sm_80 .. sm_90, `cp_async`): descriptor loads of
  /// iteration i + num_stages - 1 are in flight while iteration i computes.
  /// 1..8; 1 = no prefetch. Ignored by other targets.
  int num_stages = 3;
  std::string arch;   ///< JIT target override; empty = the device's own. Checked on every backend, the interpreter
                      ///< too, as codegen::target_for does (InvalidArgument naming it); on a GPU it must be the
                      ///< device's major architecture and not newer ("sm_90" on an H200: the mma.sync path without
                      ///< wgmma / TMA; "sm_80" there is refused: a cubin runs only on its own major architecture)
  /// sm_90a: one more warp group, a producer (24 registers through
  /// setmaxnreg) whose first lane issues every TMA copy of the pipelined
  /// loops, while the num_warps consumer warps (up to 240 registers) release
  /// pipeline stages through mbarriers (no CTA barrier per iteration). Needs every
  /// pipelined loop outermost or directly inside one top-level loop over work items
  /// (a persistent kernel), with scalar bounds and block coordinates; else
  /// the kernel is generated without it and a diagnostic says why.
  bool warp_specialize = false;
  /// With warp_specialize and num_warps = 8: the two consumer warp groups take
  /// turns issuing each iteration's wgmma (FlashAttention-3's ping-pong), so
  /// one group's softmax or epilogue overlaps the other's tensor-core work.
  bool pingpong = false;
  /// sm_90a: a wgmma with A in registers (attention's P·V) stays in flight
  /// until its result is read, overlapping the work in between (e.g. the
  /// softmax of the next scores); false: waited for at once.
  bool overlap_register_wgmma = true;
  /// sm_90a: pin the wait for a deferred wgmma after the row reductions computed since it, so that work
  /// overlaps the tensor cores (codegen::Options::anchor_deferred_waits; off by default: slower where two
  /// consumer warp groups already overlap each other's products).
  bool anchor_deferred_waits = false;
  /// sm_90a with warp_specialize: thread-block clusters of num_ctas (1, 2 or
  /// 4) consecutive programs along grid x; blocks loaded with
  /// `Desc::load_multicast` are read once per cluster and multicast into each
  /// program's shared memory (TMA multicast).
  /// Applied only where the code generator can show that the programs of a
  /// cluster run every pipelined loop equally often and agree on the
  /// multicast coordinates (codegen::Options::num_ctas); else 1 and a diagnostic
  /// (also without warp_specialize, and on targets other than sm_90a).
  /// The launch's grid x must be a multiple of the cluster the compiled kernel
  /// actually uses (codegen::Generated::num_ctas: num_ctas where applied, else 1;
  /// InvalidArgument otherwise, before anything is launched). The interpreter,
  /// which runs no clusters, applies the rule of the kernel generated for
  /// `arch` (sm_90a when empty), so a grid it accepts is one the GPU accepts.
  int num_ctas = 1;
  /// sm_90a: Desc::store of blocks with 128-byte rows through a swizzled shared staging buffer and TMA bulk
  /// stores, drained while the program goes on (codegen::Options::tma_store) — for a descriptor whose
  /// shape[-1] x element size is a multiple of 16 bytes, at columns that are provably multiples of 16 bytes; the
  /// masked store otherwise. Ignored by other targets.
  bool tma_store = false;
  /// sm_80 .. sm_90 without wgmma: descriptor blocks that feed mma.sync in a loop are copied by cp.async into a
  /// ring of num_stages shared-memory stages (codegen::Options::cp_async); false: masked loads. Ignored by other
  /// targets.
  bool cp_async = true;
  /// With cp_async: blocks loaded once outside loops and read by mma.sync go to shared memory once and are read
  /// there at each use (codegen::Options::cp_async_resident). Ignored by other targets.
  bool cp_async_resident = false;
  /// Record device events (lang/events.hpp: async_begin / async_end, each program's span, each TMA stage's issue
  /// and arrival; codegen::Options::device_events) and hand them to the profiler. A launch records only while a
  /// profiler session with the launch hook is active, and then waits for its kernel (the device synchronises) to
  /// read the records back before it returns; launches of one instrumented kernel are serialised. Without a
  /// session the kernel runs with a null buffer (one branch per event). Every target; the interpreter records the
  /// DSL's events and the program spans.
  bool device_events = false;
  /// With device_events: also pair each wgmma group's commit with the wait that saw it complete
  /// (codegen::Options::device_events_wgmma; it slows a warp-specialised GEMM by about a third).
  bool device_events_wgmma = false;
  /// Slots of a launch's buffer (32 bytes each; allocated once per kernel, at its first recording launch): 1 ..
  /// 2^26. Recording threads reserve them in growing chunks, so fewer records may fit (docs/profiler.md); events
  /// that do not are counted ("device_events_dropped" on the launch) and lost.
  std::uint32_t device_event_capacity = 1u << 20;
};

/// The code generator's options for `o`.
inline codegen::Options codegen_options(const CompileOptions& o) {
  return {.num_warps = o.num_warps,
          .num_stages = o.num_stages,
          .warp_specialize = o.warp_specialize,
          .pingpong = o.pingpong,
          .overlap_register_wgmma = o.overlap_register_wgmma,
          .anchor_deferred_waits = o.anchor_deferred_waits,
          .num_ctas = o.num_ctas,
          .tma_store = o.tma_store,
          .cp_async = o.cp_async,
          .cp_async_resident = o.cp_async_resident,
          .device_events = o.device_events,
          .device_events_wgmma = o.device_events_wgmma};
}

/// What the last launch's JIT did (for tools and benchmarks).
struct JitInfo {
  bool compiled = false;             ///< false: the variant was already loaded in this Kernel
  runtime::KernelCache::Source source = runtime::KernelCache::Source::compiled;
  double codegen_ms = 0, compile_ms = 0, load_ms = 0, total_ms = 0;
};

namespace runtime {

/// One launch argument, already converted from its C++ value.
struct ArgSlot {
  /// out_of_range: an argument for an integer parameter whose value the parameter's type cannot hold (the
  /// value in v.i64; in v.u64 for out_of_range_u64, an unsigned value above 2^63 - 1). The launch's argument
  /// check reports it with the parameter's name and range.
  /// out_of_range_f32: a finite argument for an f32 parameter beyond ±FLT_MAX (in v.f64).
  enum class Kind : std::uint8_t { pointer, i32, i64, f32, f64, descriptor, out_of_range, out_of_range_u64, out_of_range_f32 } kind = Kind::i32;
  bool to_const = false;  ///< pointer: a pointer to const (refused for a parameter the kernel stores through)
  union {
    void* p;
    std::int32_t i32;
    std::int64_t i64;
    std::uint64_t u64;
    float f32;
    double f64;
    const TensorDescriptor* desc;  // passed to the kernel by value (its 320 bytes)
  } v{};
};

/// The type-erased part of a compiled kernel: IR, options, loaded variants.
class KernelCore {
 public:
  KernelCore(Device dev, ir::Kernel ir, CompileOptions opt);
  ~KernelCore();
  KernelCore(const KernelCore&) = delete;
  KernelCore& operator=(const KernelCore&) = delete;
  /// Validate `args` (count, nulls, alignment, sizes, grid) and launch.
  /// `cost`: what the profiler's launch hook reports (nullptr: launch_cost(g, args)); read only while a
  /// session with the launch hook is active. Throws InvalidArgument, CompileError, DriverError.
  void launch(const Grid& g, Stream s, std::span<ArgSlot> args, const ir::LaunchCost* cost = nullptr);
  /// The flops and bytes a launch with these arguments amounts to, derived from the IR (ir/cost.hpp);
  /// nullopt where a counted loop's trip count depends on the program or on memory.
  std::optional<ir::LaunchCost> launch_cost(const Grid& g, std::span<const ArgSlot> args) const;
  /// Validate `args` as launch() does and build the variant they select
  /// (codegen, JIT through the kernel cache, module load) without launching;
  /// a later launch() with arguments of the same specialisation finds it
  /// loaded. Thread-safe; distinct KernelCores prepare in parallel. The
  /// interpreter only validates. Returns what the JIT did for this call.
  /// Throws InvalidArgument, Unsupported, CompileError, DriverError.
  JitInfo prepare(std::span<const ArgSlot> args);
  /// The argument checks launch() and prepare() make (count, nulls,
  /// alignment, sizes, descriptors), alone: they depend on the kernel's
  /// signature and the arguments, not on its options. Throws InvalidArgument.
  void check_arguments(std::span<const ArgSlot> args) const { (void)check_args(args); }
  const ir::Kernel& ir() const { return ir_; }
  const Device& device() const { return dev_; }
  const CompileOptions& options() const { return opt_; }
  const JitInfo& last_jit() const { return last_jit_; }
  /// The generated source for the given specialisation (empty = none) and the device's target.
  codegen::Generated source(const ir::Specialization& spec = {}) const;

 private:
  struct Variant {
    std::uint64_t key;
    Function fn;
    unsigned threads;
    unsigned dynamic_shared = 0;  // bytes passed at launch
    std::vector<int> tma_params;  // descriptor parameters loaded through TMA
    std::vector<std::array<int, 2>> tma_boxes;  // the box each is copied with
    int num_ctas = 1;  // programs per cluster the generated kernel uses (grid.x must be whole clusters)
    std::vector<std::string> event_sites;  // device events: the sites' names (codegen::Generated::event_sites)
  };
  /// Launch with a device-event buffer (CompileOptions::device_events, a session listening): reset it, launch,
  /// wait, read the records back and report them. Called with events_mu_ held.
  void launch_recording(const Variant& v, const LaunchDims& d, Stream s, void** params, std::size_t nargs);
  /// The cluster size the launch's grid.x must be a multiple of (see CompileOptions::num_ctas), for the
  /// interpreter: that of the kernel generated for the options' arch (sm_90a when empty), per specialisation.
  int interpreter_cluster(std::uint64_t key, const ir::Specialization& spec);
  const Variant& variant_for(std::uint64_t key, const ir::Specialization& spec, JitInfo* info = nullptr);
  /// Argument checks shared by launch() and prepare(); returns the specialisation key.
  std::uint64_t check_args(std::span<const ArgSlot> args) const;

  /// `d` re-encoded with `block` and the 128B swizzle (what a TMA-fed wgmma reads); cached.
  std::shared_ptr<const TensorDescriptor> derived(const TensorDescriptor& d, std::array<int, 5> block);

  Device dev_;
  ir::Kernel ir_;
  ir::CostPlan cost_plan_;         // launch_cost's per-kernel part
  std::vector<char> stored_desc_;  // per parameter: a descriptor some Desc::store writes (its kDiv16 flag matters)
  std::vector<char> stored_ptr_;   // per parameter: a pointer some store writes through (ir::stored_pointer_params)
  CompileOptions opt_;
  std::mutex derived_mu_;
  /// What a derived descriptor is built from: equal keys give equal re-encodings.
  struct DerivedKey {
    const void* base;
    int dtype, oob, l2;
    int rank;
    std::array<std::int64_t, 10> shape_strides;  // shape[0..rank), then strides[0..rank); 0 past them
    std::array<int, 5> block;
    bool operator==(const DerivedKey&) const = default;
  };
  std::vector<std::pair<DerivedKey, std::shared_ptr<const TensorDescriptor>>> derived_;  // held by launches in flight too
  codegen::Target target_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Variant>> variants_;
  std::vector<std::pair<std::uint64_t, int>> interp_clusters_;  // interpreter_cluster's answers, under mu_
  JitInfo last_jit_;
  std::mutex events_mu_;      // device events: one recording launch at a time (they share the buffer)
  void* event_buffer_ = nullptr;  // header (count, capacity, 8 reserved bytes) + device_event_capacity records
};

template <class P, class A>
ArgSlot to_slot(const A& a) {
  if constexpr (lang::is_desc_v<P>) {
    static_assert(std::is_same_v<A, TensorDescriptor>, "a Desc<T, B0, B1> kernel parameter takes a tj::TensorDescriptor");
    ArgSlot s;
    s.kind = ArgSlot::Kind::descriptor;
    s.v.desc = &a;
    return s;
  } else {
  using E = typename lang::tile_traits<P>::element;
  ArgSlot s;
  if constexpr (lang::is_ptr_v<E>) {
    using T = typename E::pointee;
    static_assert(std::is_pointer_v<A> || std::is_null_pointer_v<A>,
                  "a Ptr<T> kernel parameter takes a device pointer (T*)");
    if constexpr (std::is_pointer_v<A>) {
      using U = std::remove_cv_t<std::remove_pointer_t<A>>;
      static_assert(std::is_same_v<U, T> || std::is_void_v<U>,
                    "pointer argument's element type differs from the kernel parameter's Ptr<T>");
      s.kind = ArgSlot::Kind::pointer;
      s.to_const = std::is_const_v<std::remove_pointer_t<A>>;
      s.v.p = const_cast<void*>(static_cast<const void*>(a));
    } else {
      s.kind = ArgSlot::Kind::pointer;
      s.v.p = nullptr;
    }
  } else if constexpr (std::is_integral_v<E> && !std::is_same_v<E, bool>) {
    static_assert(std::is_integral_v<A> && !std::is_same_v<A, bool>,
                  "an integer kernel parameter takes an integer argument (not bool: pass 0 or 1)");
    using Wide = std::conditional_t<std::is_signed_v<A>, long long, unsigned long long>;  // char: in_range's types
    if (!std::in_range<E>(static_cast<Wide>(a))) {  // e.g. 2^40 for an i32, 2^64 - 1 for an i64: never wrapped into range
      if (std::in_range<std::int64_t>(static_cast<Wide>(a))) {
        s.kind = ArgSlot::Kind::out_of_range;
        s.v.i64 = static_cast<std::int64_t>(a);
      } else {
        s.kind = ArgSlot::Kind::out_of_range_u64;
        s.v.u64 = static_cast<std::uint64_t>(a);
      }
      return s;
    }
    if constexpr (sizeof(E) == 8) {
      s.kind = ArgSlot::Kind::i64;
      s.v.i64 = static_cast<std::int64_t>(a);  // a u64 parameter keeps its bit pattern
    } else {
      s.kind = ArgSlot::Kind::i32;
      s.v.i32 = static_cast<std::int32_t>(a);  // a u32 parameter keeps its bit pattern
    }
  } else if constexpr (std::is_same_v<E, double>) {
    static_assert(std::is_arithmetic_v<A> && !std::is_same_v<A, bool>, "a floating-point kernel parameter takes a number (not bool)");
    s.kind = ArgSlot::Kind::f64;
    s.v.f64 = static_cast<double>(a);
  } else {
    static_assert(std::is_same_v<E, float>, "scalar kernel parameters are i32, i64, f32 or f64");
    static_assert(std::is_arithmetic_v<A> && !std::is_same_v<A, bool>, "a floating-point kernel parameter takes a number (not bool)");
    if (std::isfinite(static_cast<double>(a)) && std::fabs(static_cast<double>(a)) > static_cast<double>(std::numeric_limits<float>::max())) {
      s.kind = ArgSlot::Kind::out_of_range_f32;  // 1e300 would become inf (and the cast is undefined behaviour)
      s.v.f64 = static_cast<double>(a);
      return s;
    }
    s.kind = ArgSlot::Kind::f32;
    s.v.f32 = static_cast<float>(a);
  }
  return s;
  }
}

}  // namespace runtime

/// A kernel compiled for one device; launch() is thread-safe.
template <class K>
class Kernel {
 public:
  Kernel(Device dev, const K& k, CompileOptions opt)
      : k_(copy_of(k)), core_(std::make_shared<runtime::KernelCore>(std::move(dev), trace(k), std::move(opt))) {}

  /// Launch on the default stream. Arguments must match K::operator()'s
  /// parameters in number and kind (checked at compile time). Before anything
  /// runs, throws InvalidArgument naming the argument for: a null pointer (even
  /// one whose every access is masked off: pass any valid pointer for an unused
  /// operand, so an unmasked access can never fault the context), a pointer not
  /// aligned to its element, a negative Size, an integer its parameter's type
  /// cannot hold (never wrapped), a pointer to const for a parameter the kernel
  /// stores through, a descriptor of another rank, dtype or device or of more
  /// than 2^31 - 1 elements of extent; and for a bad grid (a dimension < 1,
  /// x > 2^31 - 1, y or z > 65535, x not a multiple of the cluster size). The
  /// first launch with a new specialisation JIT-compiles it and may throw
  /// CompileError, Unsupported or DriverError. Asynchronous on GPUs (the
  /// interpreter runs it before returning).
  template <class... A>
  void launch(const Grid& g, const A&... args) { launch(Stream{}, g, args...); }

  /// While a profiler session with the launch hook is active, the launch reports its flops and bytes: those of
  /// `K::launch_cost(const Grid&, const A&...) const -> LaunchCost` when K declares it (called with the launch's
  /// own arguments: exact DRAM-level numbers, a causal mask's halving), else what ir/cost.hpp derives from the
  /// IR (nothing where that is not derivable).
  template <class... A>
  void launch(Stream s, const Grid& g, const A&... args) {
    using Sig = lang::kernel_signature<K>;
    static_assert(sizeof...(A) == Sig::arity, "wrong number of kernel arguments");
    std::array<runtime::ArgSlot, sizeof...(A)> slots;  // on the stack: no allocation per launch
    fill<0>(slots, args...);
    if constexpr (std::is_copy_constructible_v<K> &&
                  requires(const K& k) { { k.launch_cost(g, args...) } -> std::convertible_to<LaunchCost>; }) {
      if (profiler::hook_active()) {
        const LaunchCost c = k_.launch_cost(g, args...);
        core_->launch(g, s, slots, &c);
        return;
      }
    }
    core_->launch(g, s, slots);
  }
  template <class... A>
  void operator()(const Grid& g, const A&... args) { launch(g, args...); }

  /// Build the machine code these arguments select without launching (see
  /// KernelCore::prepare): moves the JIT off the first launch.
  template <class... A>
  JitInfo prepare(const A&... args) {
    using Sig = lang::kernel_signature<K>;
    static_assert(sizeof...(A) == Sig::arity, "wrong number of kernel arguments");
    std::array<runtime::ArgSlot, sizeof...(A)> slots;
    fill<0>(slots, args...);
    return core_->prepare(slots);
  }
  /// The type-erased core, shared by copies of this Kernel (used by the autotuner).
  const std::shared_ptr<runtime::KernelCore>& core() const { return core_; }

  const ir::Kernel& ir() const { return core_->ir(); }
  const JitInfo& last_jit() const { return core_->last_jit(); }
  codegen::Generated source(const ir::Specialization& spec = {}) const { return core_->source(spec); }
  const Device& device() const { return core_->device(); }

 private:
  template <std::size_t I, std::size_t N, class A0, class... A>
  void fill(std::array<runtime::ArgSlot, N>& out, const A0& a0, const A&... rest) {
    using P = typename decltype(+boost::hana::at_c<I>(lang::kernel_signature<K>::args))::type;
    out[I] = runtime::to_slot<P>(a0);
    if constexpr (sizeof...(A) > 0) fill<I + 1>(out, rest...);
  }
  template <std::size_t I, std::size_t N>
  void fill(std::array<runtime::ArgSlot, N>&) {}
  static auto copy_of(const K& k) {
    if constexpr (std::is_copy_constructible_v<K>)
      return K(k);
    else
      return std::monostate{};
  }

  // A copy of the functor for K::launch_cost (nothing for a functor that cannot be copied: the IR's count then).
  [[no_unique_address]] std::conditional_t<std::is_copy_constructible_v<K>, K, std::monostate> k_;
  std::shared_ptr<runtime::KernelCore> core_;
};

/// Trace K and prepare it for `dev`. Machine code is built at first launch. Throws InvalidArgument for an invalid
/// num_warps, num_stages, num_ctas or device_event_capacity, or an arch of another dialect or major architecture
/// than the device's; DeviceUnavailable below compute capability 7.0; and whatever tracing K throws.
template <class K>
Kernel<K> compile(Device dev, CompileOptions opt = {}, const K& k = K{}) {
  return Kernel<K>(std::move(dev), k, std::move(opt));
}

/// What compile_for_arch returns: the compiler's result (binary, log, compile time) and what the code
/// generator decided — its diagnostics (layout choices and fallbacks, and why warp specialisation, pingpong, a
/// cluster or a TMA store was not applied), the kernel's name, block size, shared memory and cluster size.
/// A runtime::JitResult, so code that takes one keeps working.
struct ArchCompileResult : runtime::JitResult {
  std::vector<std::string> diagnostics;  ///< codegen::Generated::diagnostics
  std::string kernel_name;
  int threads = 0;               ///< block size
  int dynamic_shared_bytes = 0;  ///< dynamic shared memory a launch passes
  int num_ctas = 1;              ///< programs per cluster the kernel uses (1: none)
};

/// Generate and JIT-compile K for an arch without any device ("sm_90a",
/// "gfx942"): used by CI and `tilejit demo` to prove every kernel compiles.
/// `arch` is checked as codegen::target_for does; `opt.arch` must be empty or
/// the same arch (InvalidArgument otherwise, naming both).
template <class K>
ArchCompileResult compile_for_arch(const std::string& arch, CompileOptions opt = {}, const K& k = K{}) {
  auto t = codegen::target_for(arch);
  if (!opt.arch.empty() && opt.arch != arch)
    throw InvalidArgument("compile_for_arch: CompileOptions::arch = '" + opt.arch + "' differs from the arch argument '" + arch +
                          "': leave it empty or give the same target");
  auto ir = trace(k);
  auto g = codegen::generate(ir, {}, t, codegen_options(opt));
  runtime::JitRequest req;
  req.compiler = t.dialect == codegen::Dialect::cuda ? runtime::Compiler::nvrtc : runtime::Compiler::hiprtc;
  req.source = g.source;
  req.name = g.kernel_name + (t.dialect == codegen::Dialect::cuda ? ".cu" : ".hip");
  req.arch = arch;
  ArchCompileResult r;
  static_cast<runtime::JitResult&>(r) = runtime::compile(req);
  r.diagnostics = std::move(g.diagnostics);
  r.kernel_name = std::move(g.kernel_name);
  r.threads = g.threads;
  r.dynamic_shared_bytes = g.dynamic_shared_bytes;
  r.num_ctas = g.num_ctas;
  return r;
}

}  // namespace tilejit
