#include "tilejit/runtime/kernel.hpp"

#include <fmt/format.h>

#include <chrono>

#include "tilejit/profiler/launch.hpp"
#include "tilejit/runtime/interpreter.hpp"
#include "../ir/loop_check.hpp"

namespace tilejit::runtime {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string describe(const ir::Kernel& k, std::size_t i) {
  return fmt::format("argument {} ({}: {}) of kernel {}", i, k.params[i].name, ir::to_string(k.params[i].type), k.name);
}

/// The values an integer parameter of type `t` holds, as the message of an out-of-range argument says it.
std::string integer_range(DType t) {
  switch (t) {
    case DType::i8: return "[-2^7, 2^7 - 1]";
    case DType::i16: return "[-2^15, 2^15 - 1]";
    case DType::i32: return "[-2^31, 2^31 - 1]";
    case DType::u8: return "[0, 2^8 - 1]";
    case DType::u16: return "[0, 2^16 - 1]";
    case DType::u32: return "[0, 2^32 - 1]";
    case DType::u64: return "[0, 2^64 - 1]";
    default: return "[-2^63, 2^63 - 1]";
  }
}

ir::Specialization spec_of(std::uint64_t key, std::size_t nargs) {
  ir::Specialization spec;
  spec.flags.resize(nargs);
  for (std::size_t i = 0; i < nargs && i < 32; ++i) spec.flags[i] = static_cast<std::uint8_t>((key >> (2 * i)) & 3);
  return spec;
}

}  // namespace

KernelCore::KernelCore(Device dev, ir::Kernel ir, CompileOptions opt)
    : dev_(std::move(dev)), ir_(std::move(ir)), cost_plan_(ir::plan_cost(ir_)), opt_(std::move(opt)) {
  ir::verify(ir_);
  stored_ptr_ = ir::stored_pointer_params(ir_);
  stored_desc_.assign(ir_.params.size(), 0);
  for (const ir::Node& n : ir_.nodes)
    if (n.op == ir::Op::desc_store) stored_desc_[static_cast<std::size_t>(ir_[ir::desc_ref(ir_, static_cast<int>(&n - ir_.nodes.data())).param].i)] = 1;
  const int nw = opt_.num_warps;
  codegen::require_valid_num_warps(nw);
  if (opt_.num_stages < 1 || opt_.num_stages > 8)
    throw InvalidArgument(fmt::format("num_stages = {}: must be in [1, 8]", opt_.num_stages));
  if (opt_.num_ctas != 1 && opt_.num_ctas != 2 && opt_.num_ctas != 4)
    throw InvalidArgument(fmt::format("num_ctas = {}: a cluster is 1, 2 or 4 programs", opt_.num_ctas));
  if (opt_.device_events_wgmma && !opt_.device_events)
    throw InvalidArgument("device_events_wgmma = true needs device_events = true (the wgmma pairs are device events)");
  if (opt_.device_event_capacity < 1 || opt_.device_event_capacity > (1u << 26))  // checked with or without device_events
    throw InvalidArgument(fmt::format("device_event_capacity = {}: must be in [1, 2^26] records (32 bytes each)", opt_.device_event_capacity));
  // The arch is validated on every backend (the interpreter generates only for source(), but a bad arch must not
  // be accepted there and rejected on a GPU).
  if (!opt_.arch.empty()) codegen::target_for(opt_.arch);
  if (dev_.backend() != Backend::interpreter) {
    target_ = codegen::target_for(opt_.arch.empty() ? dev_.arch() : opt_.arch);
    const bool cuda = dev_.backend() == Backend::cuda;
    if ((target_.dialect == codegen::Dialect::cuda) != cuda)
      throw InvalidArgument(fmt::format("arch '{}' is not a target of {} ({})", target_.arch, dev_.name(), dev_.arch()));
    if (cuda) {
      // tilejit's CUDA code needs sm_70+ (and bf16 conversions need sm_80's PTX);
      // a cubin runs only on its own major architecture, not older or newer ones.
      const int cc = dev_.compute_capability();
      if (cc < 70)
        throw DeviceUnavailable(fmt::format("{} is sm_{}: tilejit needs compute capability 7.0 or newer", dev_.name(), cc));
      const int want = std::stoi(target_.arch.substr(3));  // the digits after "sm_": 90 of sm_90a, 100 of sm_100a
      if (want / 10 != cc / 10 || want > cc)
        throw InvalidArgument(fmt::format("arch '{}' does not run on {} (sm_{}): pick sm_{}{} or leave arch empty",
                                          target_.arch, dev_.name(), cc, cc, cc == 90 ? "a" : ""));
    }
    target_.warp_size = dev_.warp_size();
    if (nw * target_.warp_size > 1024)
      throw InvalidArgument(fmt::format("num_warps = {} x {} lanes = {} threads: a program has at most 1024",
                                        nw, target_.warp_size, nw * target_.warp_size));
  }
}

KernelCore::~KernelCore() {
  if (event_buffer_ == nullptr) return;
  try {
    dev_.free(event_buffer_);
  } catch (...) {  // a failing driver at exit: the buffer goes with the context
  }
}

codegen::Generated KernelCore::source(const ir::Specialization& spec) const {
  codegen::Target t = dev_.backend() == Backend::interpreter ? codegen::target_for(opt_.arch.empty() ? "sm_90a" : opt_.arch) : target_;
  return codegen::generate(ir_, spec, t, codegen_options(opt_));
}

const KernelCore::Variant& KernelCore::variant_for(std::uint64_t key, const ir::Specialization& spec, JitInfo* out) {
  std::lock_guard lock(mu_);
  for (const auto& v : variants_)
    if (v->key == key) {
      last_jit_ = JitInfo{};
      last_jit_.source = KernelCache::Source::memory;
      if (out) *out = last_jit_;
      return *v;
    }
  const auto t0 = std::chrono::steady_clock::now();
  JitInfo info;
  info.compiled = true;
  codegen::Generated gen = codegen::generate(ir_, spec, target_, codegen_options(opt_));
  info.codegen_ms = ms_since(t0);
  JitRequest req;
  req.compiler = target_.dialect == codegen::Dialect::cuda ? Compiler::nvrtc : Compiler::hiprtc;
  req.source = gen.source;
  req.name = gen.kernel_name + (target_.dialect == codegen::Dialect::cuda ? ".cu" : ".hip");
  req.arch = target_.arch;
  auto entry = KernelCache::global().get_or_compile(req, dev_.driver_version());
  info.source = entry.source;
  info.compile_ms = entry.compile_ms;
  const auto t2 = std::chrono::steady_clock::now();
  auto v = std::make_unique<Variant>();
  v->key = key;
  v->fn = dev_.load(*entry.binary, gen.kernel_name);
  v->threads = static_cast<unsigned>(gen.threads);
  v->dynamic_shared = static_cast<unsigned>(gen.dynamic_shared_bytes);
  v->tma_params = gen.tma_params;
  v->tma_boxes = gen.tma_boxes;
  v->num_ctas = gen.num_ctas;
  v->event_sites = gen.event_sites;
  if (gen.dynamic_shared_bytes > 48 * 1024) dev_.set_max_dynamic_shared(v->fn, v->dynamic_shared);
  info.load_ms = ms_since(t2);
  info.total_ms = ms_since(t0);
  last_jit_ = info;
  if (out) *out = info;
  variants_.push_back(std::move(v));
  return *variants_.back();
}

std::uint64_t KernelCore::check_args(std::span<const ArgSlot> args) const {
  if (args.size() != ir_.params.size())
    throw InvalidArgument(fmt::format("kernel {} takes {} arguments, got {}", ir_.name, ir_.params.size(), args.size()));
  // Validate and compute the specialisation key (2 bits per parameter).
  std::uint64_t key = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ir::Param& p = ir_.params[i];
    const ArgSlot& a = args[i];
    std::uint64_t flags = 0;
    if (p.type.is_desc) {
      if (a.kind != ArgSlot::Kind::descriptor || a.v.desc == nullptr)
        throw InvalidArgument(describe(ir_, i) + " takes a TensorDescriptor");
      const TensorDescriptor& d = *a.v.desc;
      if (d.rank() != p.rank)
        throw InvalidArgument(fmt::format("{} is a descriptor of rank {}: the kernel's Desc has rank {}", describe(ir_, i), d.rank(), p.rank));
      if (d.dtype() != p.type.dtype)
        throw InvalidArgument(fmt::format("{} describes {} elements: the kernel's Desc holds {}", describe(ir_, i),
                                          tilejit::name(d.dtype()), tilejit::name(p.type.dtype)));
      if (d.backend() != dev_.backend() || (d.backend() != Backend::interpreter && d.device_ordinal() != dev_.ordinal()))
        throw InvalidArgument(fmt::format("{} was built for another device than {} (descriptors belong to one device)",
                                          describe(ir_, i), dev_.name()));
      // Descriptor loads that are not TMA copies use 32-bit element offsets. (Shapes reach 2^32 and strides 2^40
      // bytes: a term or the sum may pass 2^63, so any overflow counts as too large.)
      std::int64_t extent = 1;
      bool wraps = false;
      for (int k = 0; k < d.rank(); ++k) {
        std::int64_t term = 0;
        wraps = wraps || __builtin_mul_overflow(d.shape()[static_cast<std::size_t>(k)] - 1, d.strides()[static_cast<std::size_t>(k)], &term) ||
                __builtin_add_overflow(extent, term, &extent);
      }
      if (wraps || extent > INT32_MAX)
        throw InvalidArgument(fmt::format("{} spans {} elements: descriptors are limited to 2^31 - 1 elements of extent "
                                          "(32-bit offsets)", describe(ir_, i), wraps ? std::string("more than 2^63") : std::to_string(extent)));
      // Rows of whole 16-byte chunks: a TMA store (CompileOptions::tma_store) writes nothing past a row's end. Only
      // for a descriptor the kernel stores to: a loaded one's flag would select a second, identical variant.
      if (stored_desc_[i] && d.shape()[static_cast<std::size_t>(d.rank() - 1)] * static_cast<std::int64_t>(size_bytes(d.dtype())) % 16 == 0)
        flags |= ir::Specialization::kDiv16;
    } else if (p.type.is_ptr) {
      const auto addr = reinterpret_cast<std::uintptr_t>(a.v.p);
      if (addr == 0) throw InvalidArgument(describe(ir_, i) + " is a null pointer");
      if (a.to_const && stored_ptr_[i])
        throw InvalidArgument(describe(ir_, i) + " is a pointer to const, but the kernel stores through it: pass a non-const pointer");
      const auto es = static_cast<std::uintptr_t>(size_bytes(p.type.dtype));
      if (addr % es != 0)
        throw InvalidArgument(fmt::format("{} = {:#x} is not aligned to its element size ({} bytes)", describe(ir_, i), addr, es));
      if (addr % 16 == 0) flags |= ir::Specialization::kDiv16;
    } else if (a.kind == ArgSlot::Kind::out_of_range || a.kind == ArgSlot::Kind::out_of_range_u64) {
      throw InvalidArgument(fmt::format("{} = {} does not fit the kernel's {}-bit integer parameter ({})", describe(ir_, i),
                                        a.kind == ArgSlot::Kind::out_of_range ? std::to_string(a.v.i64) : std::to_string(a.v.u64),
                                        8 * size_bytes(p.type.dtype), integer_range(p.type.dtype)));
    } else if (a.kind == ArgSlot::Kind::out_of_range_f32) {
      throw InvalidArgument(fmt::format("{} = {} does not fit the kernel's f32 parameter (finite values up to ±{}; it would become "
                                        "±inf)", describe(ir_, i), a.v.f64, std::numeric_limits<float>::max()));
    } else if (a.kind == ArgSlot::Kind::i32 || a.kind == ArgSlot::Kind::i64) {
      const std::int64_t x = a.kind == ArgSlot::Kind::i32 ? a.v.i32 : a.v.i64;
      if (p.is_size && x < 0) throw InvalidArgument(fmt::format("{} = {} is a size and must be >= 0", describe(ir_, i), x));
      if (x % 16 == 0) flags |= ir::Specialization::kDiv16;
      if (x == 1) flags |= ir::Specialization::kEqual1;
    }
    if (i < 32) key |= flags << (2 * i);
  }
  return key;
}

std::shared_ptr<const TensorDescriptor> KernelCore::derived(const TensorDescriptor& d, std::array<int, 5> block) {
  // The same tensor with the kernel's block and the swizzle its wgmma reads (the box's width: 128, 64 or 32
  // bytes); encoded once, kept while
  // the argument is passed again (a small cache: a kernel sees few distinct tensors per launch site).
  // Compared field by field on every launch: no formatting on the launch path.
  const int R = d.rank();
  DerivedKey key{d.base(), static_cast<int>(d.dtype()), static_cast<int>(d.oob_fill()), static_cast<int>(d.l2_promotion()), R, {}, block};
  for (int k = 0; k < R; ++k) {
    key.shape_strides[static_cast<std::size_t>(k)] = d.shape()[static_cast<std::size_t>(k)];
    key.shape_strides[static_cast<std::size_t>(5 + k)] = d.strides()[static_cast<std::size_t>(k)];
  }
  std::lock_guard lock(derived_mu_);
  for (const auto& [k, v] : derived_)
    if (k == key) return v;
  if (derived_.size() >= 64) derived_.erase(derived_.begin());
  auto v = std::make_shared<const TensorDescriptor>(dev_, d.base(), d.dtype(), std::vector<std::int64_t>(d.shape().begin(), d.shape().end()),
                                                    std::vector<std::int64_t>(d.strides().begin(), d.strides().end()),
                                                    std::vector<std::int64_t>(block.begin(), block.begin() + R),
                                                    TensorDescriptor::Options{TensorDescriptor::swizzle_of_bytes(block[static_cast<std::size_t>(R - 1)] * size_bytes(d.dtype())),
                                                                              d.oob_fill(), d.l2_promotion()});
  derived_.emplace_back(key, v);
  return v;
}

int KernelCore::interpreter_cluster(std::uint64_t key, const ir::Specialization& spec) {
  std::lock_guard lock(mu_);
  for (const auto& [k, c] : interp_clusters_)
    if (k == key) return c;
  int c = opt_.num_ctas;
  try {
    c = codegen::generate(ir_, spec, codegen::target_for(opt_.arch.empty() ? "sm_90a" : opt_.arch), codegen_options(opt_)).num_ctas;
  } catch (const Error&) {
    // A kernel the code generator cannot lower for that target still runs here; keep the requested cluster's rule.
  }
  interp_clusters_.emplace_back(key, c);
  return c;
}

JitInfo KernelCore::prepare(std::span<const ArgSlot> args) {
  const std::uint64_t key = check_args(args);
  JitInfo info;
  if (dev_.backend() == Backend::interpreter) return info;
  variant_for(key, spec_of(key, args.size()), &info);
  return info;
}

namespace {
/// What the cost plan's bounds may read at a launch: the grid, integer arguments and descriptor shapes (the ArgSlots
/// `args` views must outlive the result).
ir::CostInputs cost_inputs(const Grid& g, std::span<const ArgSlot> args) {
  ir::CostInputs in;
  in.grid = {g.x, g.y, g.z};
  in.scalar = [args](int p) -> std::optional<long long> {
    if (p < 0 || static_cast<std::size_t>(p) >= args.size()) return std::nullopt;
    const ArgSlot& a = args[static_cast<std::size_t>(p)];
    if (a.kind == ArgSlot::Kind::i32) return a.v.i32;
    if (a.kind == ArgSlot::Kind::i64) return a.v.i64;
    return std::nullopt;
  };
  in.desc_shape = [args](int p, int dim) -> std::optional<long long> {
    if (p < 0 || static_cast<std::size_t>(p) >= args.size() || dim < 0) return std::nullopt;
    const ArgSlot& a = args[static_cast<std::size_t>(p)];
    if (a.kind != ArgSlot::Kind::descriptor || a.v.desc == nullptr || static_cast<std::size_t>(dim) >= a.v.desc->shape().size())
      return std::nullopt;
    return a.v.desc->shape()[static_cast<std::size_t>(dim)];
  };
  return in;
}
}  // namespace

std::optional<ir::LaunchCost> KernelCore::launch_cost(const Grid& g, std::span<const ArgSlot> args) const {
  return ir::evaluate_cost(cost_plan_, ir_, cost_inputs(g, args));
}

void KernelCore::launch(const Grid& g, Stream s, std::span<ArgSlot> args, const ir::LaunchCost* cost) {
  if (args.size() != ir_.params.size())
    throw InvalidArgument(fmt::format("kernel {} takes {} arguments, got {}", ir_.name, ir_.params.size(), args.size()));
  const long long dims[3] = {g.x, g.y, g.z};
  const long long limits[3] = {2147483647LL, 65535, 65535};
  for (int d = 0; d < 3; ++d)
    if (dims[d] < 1 || dims[d] > limits[d])
      throw InvalidArgument(fmt::format("grid.{} = {}: must be in [1, {}]", "xyz"[d], dims[d], limits[d]));
  const std::uint64_t key = check_args(args);
  // for_range's overflow rule for every loop whose bounds these arguments decide: refused here, before anything runs
  // (on a GPU such a loop would never end; the interpreter checks the loops whose bounds the kernel computes).
  if (!cost_plan_.loops.empty())
    if (const auto bad = ir::loop_overflow(cost_plan_, ir_, cost_inputs(g, args)))
      throw InvalidArgument(fmt::format("kernel {}: {}", ir_.name, *bad));
  // grid.x is whole clusters of the kernel that runs: num_ctas where the code generator applied it, else 1
  // (CompileOptions::num_ctas). On a GPU, that of the variant these arguments select (built here if needed).
  const Variant* var = nullptr;
  int cluster = 1;
  if (dev_.backend() == Backend::interpreter) {
    if (opt_.num_ctas > 1) cluster = interpreter_cluster(key, spec_of(key, args.size()));
  } else {
    var = &variant_for(key, spec_of(key, args.size()));
    cluster = var->num_ctas;
  }
  if (g.x % cluster != 0)
    throw InvalidArgument(fmt::format("grid.x = {}: must be a multiple of num_ctas = {} (the kernel runs in clusters of {} programs "
                                      "along x)", g.x, cluster, cluster));

  // The profiler's launch hook (every backend): one relaxed atomic load when no session listens.
  profiler::LaunchInfo info{.kernel = ir_.name, .grid = {g.x, g.y, g.z}};
  if (profiler::hook_active()) {
    const std::optional<ir::LaunchCost> c = cost ? std::optional<ir::LaunchCost>(*cost) : launch_cost(g, args);
    if (c) {
      info.flops = c->flops;
      info.flops_width = c->flops_width;
      info.bytes = c->bytes;
    }
  }
  profiler::LaunchScope hook(info);
  if (dev_.backend() == Backend::interpreter) {
    std::vector<ArgValue> vals(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ArgSlot& a = args[i];
      switch (a.kind) {
        case ArgSlot::Kind::pointer: vals[i].kind = ArgValue::Kind::pointer; vals[i].address = reinterpret_cast<std::uintptr_t>(a.v.p); break;
        case ArgSlot::Kind::i32: vals[i].i = a.v.i32; break;
        case ArgSlot::Kind::i64: vals[i].i = a.v.i64; break;
        case ArgSlot::Kind::f32: vals[i].kind = ArgValue::Kind::floating; vals[i].f = a.v.f32; break;
        case ArgSlot::Kind::f64: vals[i].kind = ArgValue::Kind::floating; vals[i].f = a.v.f64; break;
        case ArgSlot::Kind::descriptor:
          vals[i].kind = ArgValue::Kind::descriptor;
          vals[i].address = reinterpret_cast<std::uintptr_t>(a.v.desc->base());
          vals[i].rank = a.v.desc->rank();
          for (int d = 0; d < a.v.desc->rank(); ++d) {
            vals[i].shape[static_cast<std::size_t>(d)] = a.v.desc->shape()[static_cast<std::size_t>(d)];
            vals[i].strides[static_cast<std::size_t>(d)] = a.v.desc->strides()[static_cast<std::size_t>(d)];
          }
          vals[i].oob_nan = a.v.desc->oob_fill() == TensorDescriptor::OobFill::nan;
          break;
        case ArgSlot::Kind::out_of_range: case ArgSlot::Kind::out_of_range_u64: case ArgSlot::Kind::out_of_range_f32:
          throw InvalidArgument(fmt::format("argument {} does not fit its parameter", i));  // check_args has thrown for them
      }
    }
    const std::array<unsigned, 3> grid{static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z)};
    if (!opt_.device_events || !profiler::hook_active()) {
      interpret(ir_, grid, vals);
      return;
    }
    std::vector<profiler::DeviceEvent> events;
    interpret(ir_, grid, vals, 0, &events);
    std::vector<std::string> sites = ir_.event_sites;  // the interpreter's sites: the kernel's, then "program"
    sites.emplace_back(ir::kProgramSite);
    const std::size_t kept = std::min<std::size_t>(events.size(), opt_.device_event_capacity);
    profiler::report_device_events({.sites = sites, .events = std::span(events).first(kept), .dropped = events.size() - kept});
    return;
  }

  const Variant& v = *var;
  void* params[64];
  if (args.size() + (opt_.device_events ? 1 : 0) > 64)
    throw InvalidArgument(fmt::format("kernel {} has {} parameters{}; at most 64 are supported", ir_.name, args.size(),
                                      opt_.device_events ? " and the device-event buffer" : ""));
  for (std::size_t i = 0; i < args.size(); ++i)
    params[i] = args[i].kind == ArgSlot::Kind::descriptor ? const_cast<TensorDescriptor*>(args[i].v.desc) : static_cast<void*>(&args[i].v);
  std::array<std::shared_ptr<const TensorDescriptor>, 64> keep;
  for (std::size_t t = 0; t < v.tma_params.size(); ++t) {
    const int i = v.tma_params[t];
    const TensorDescriptor& td = *args[static_cast<std::size_t>(i)].v.desc;
    // The box: the kernel's rows along its row dim, one slab of columns (128, 64 or 32 bytes), 1 along every other dim.
    const ir::Param& p = ir_.params[static_cast<std::size_t>(i)];
    std::array<int, 5> box{1, 1, 1, 1, 1};
    box[static_cast<std::size_t>(p.row_dim)] = v.tma_boxes[t][0];
    box[static_cast<std::size_t>(p.rank - 1)] = v.tma_boxes[t][1];
    if (!td.has_tensor_map())
      throw InvalidArgument(fmt::format("{} is loaded through TMA but has no tensor map ({}): build it on this device",
                                        describe(ir_, static_cast<std::size_t>(i)), to_string(td)));
    // The swizzle spans one box row (a slab of 128, 64 or 32 bytes: codegen's slab width).
    bool same = td.swizzle() == TensorDescriptor::swizzle_of_bytes(v.tma_boxes[t][1] * size_bytes(td.dtype()));
    for (int k = 0; k < p.rank; ++k) same = same && td.block_shape()[static_cast<std::size_t>(k)] == box[static_cast<std::size_t>(k)];
    if (!same) {
      keep[i] = derived(td, box);  // alive until the launch has copied it, even if another thread evicts it
      params[i] = const_cast<TensorDescriptor*>(keep[i].get());
    }
  }
  LaunchDims d;
  d.grid[0] = static_cast<unsigned>(g.x);
  d.grid[1] = static_cast<unsigned>(g.y);
  d.grid[2] = static_cast<unsigned>(g.z);
  d.block[0] = v.threads;
  d.shared_bytes = v.dynamic_shared;
  if (opt_.device_events && profiler::hook_active()) {
    std::lock_guard lock(events_mu_);
    launch_recording(v, d, s, params, args.size());
    return;
  }
  void* none = nullptr;  // instrumented, nobody listening: a null buffer records nothing
  if (opt_.device_events) params[args.size()] = &none;
  dev_.launch(v.fn, d, s, params);
}

void KernelCore::launch_recording(const Variant& v, const LaunchDims& d, Stream s, void** params, std::size_t nargs) {
  static_assert(sizeof(profiler::DeviceEvent) == 32);
  // tj_evbuf: count (slots reserved, in growing chunks per recording thread), capacity, dropped (u32 each), 4
  // bytes unused, then the records. Zeroed before each launch: a reserved slot never written keeps time 0 and is skipped.
  constexpr std::size_t kHeader = 16;
  const std::uint32_t cap = opt_.device_event_capacity;
  const std::size_t bytes = kHeader + std::size_t{cap} * sizeof(profiler::DeviceEvent);
  if (event_buffer_ == nullptr) event_buffer_ = dev_.alloc(bytes);
  const std::uint32_t header[4] = {0, cap, 0, 0};
  dev_.synchronize();  // nothing still reads the buffer (an earlier launch on another stream)
  dev_.memset(event_buffer_, 0, bytes);
  dev_.copy_to_device(event_buffer_, header, sizeof header);
  void* buf = event_buffer_;
  params[nargs] = &buf;
  dev_.launch(v.fn, d, s, params);
  dev_.synchronize();  // the records are complete only when the kernel is
  std::uint32_t got[4] = {};
  dev_.copy_to_host(got, event_buffer_, sizeof got);
  const std::size_t slots = std::min<std::uint32_t>(got[0], cap);
  std::vector<profiler::DeviceEvent> events(slots);
  if (slots > 0) dev_.copy_to_host(events.data(), static_cast<char*>(event_buffer_) + kHeader, slots * sizeof(profiler::DeviceEvent));
  std::erase_if(events, [](const profiler::DeviceEvent& e) { return e.time_ns == 0; });
  profiler::report_device_events({.sites = v.event_sites, .events = events, .dropped = got[2]});
}

}  // namespace tilejit::runtime
