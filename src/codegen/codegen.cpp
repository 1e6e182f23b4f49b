// IR -> CUDA / HIP text. See include/tilejit/codegen/codegen.hpp.
//
// Every tile value becomes a register array `vN[R]` (R = registers per
// thread of the parent layout) written by straight-line code, one statement
// per register, so that register indices are compile-time constants; rank-0
// values become scalars `sN`. Registers that hold a copy of another register
// (digits whose image the value does not see) are copied, not recomputed,
// and never stored twice.
#include "tilejit/codegen/codegen.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <limits>
#include <optional>
#include <utility>
#include <set>
#include <string_view>

#include "prelude.hpp"
#include "tilejit/core/error.hpp"
#include "tilejit/ir/axis_info.hpp"
#include "tilejit/ir/lower_descriptors.hpp"
#include "tilejit/ir/remat.hpp"
#include "tilejit/layout/encodings/mma_sync.hpp"
#include "tilejit/layout/encodings/wgmma.hpp"

namespace tilejit::codegen {
namespace {

using ir::Node;
using ir::Op;

/// `bytes` rounded up to 1024: shared-memory regions start 1024-byte aligned (the 128-byte swizzle's period).
int align_1k(int bytes) { return (bytes + 1023) / 1024 * 1024; }

/// The parameter a pointer value is an offset of (through addptr, broadcast, expand_dims and reshape), or -1.
int pointer_param(const ir::Kernel& k, int id) {
  while (id >= 0) {
    const ir::Node& n = k[id];
    if (n.op == ir::Op::param) return static_cast<int>(n.i);
    if (n.op != ir::Op::addptr && n.op != ir::Op::broadcast && n.op != ir::Op::expand_dims && n.op != ir::Op::reshape) return -1;
    id = n.args[0];
  }
  return -1;
}

/// A scalar the TMA producer (a producer warp group, or thread 0 issuing a ring's copies ahead of the loop body) may
/// compute on its own from its operands: arithmetic (pointer offsets too), program ids, descriptor fields — and a scalar load from a
/// pointer parameter no store of the kernel writes through (a schedule table, sequence offsets), so running ahead of
/// the other threads cannot read a value before they write it. A store whose pointer has no single parameter makes
/// every load unsafe. Two pointer parameters aliasing one buffer are the caller's promise not to (as everywhere in
/// the generated code: there is no alias analysis).
bool producer_scalar(const ir::Kernel& k, int id) {
  const ir::Node& n = k[id];
  if (n.type.rank != 0) return false;
  using ir::Op;
  if (n.op == Op::constant || ir::is_binary(n.op) || n.op == Op::neg || n.op == Op::cast || n.op == Op::program_id ||
      n.op == Op::num_programs || n.op == Op::desc_field || n.op == Op::where || n.op == Op::addptr || n.op == Op::desc_view)
    return true;
  if (n.op != Op::load) return false;
  const int p = pointer_param(k, n.args[0]);
  if (p < 0) return false;
  for (const ir::Node& m : k.nodes)
    if (m.op == Op::store || ir::is_atomic(m.op)) {
      const int q = pointer_param(k, m.args[0]);
      if (q < 0 || q == p) return false;
    }
  return true;
}

/// The value a loop_carry node takes for the next iteration (its loop_yield's operand), or -1.
int carry_next(const ir::Kernel& k, int carry) {
  for (const ir::Node& n : k.nodes)
    if (n.op == ir::Op::loop_yield && n.args[0] == carry) return n.args[1];
  return -1;
}

/// The compute capability of an "sm_NN" / "sm_NNa" arch as a number (sm_90a -> 90, sm_100 -> 100); 0 for
/// anything else. (A string compare would put sm_100 below sm_80.)
int sm_number(std::string_view a) {
  if (a.substr(0, 3) != "sm_") return 0;
  int v = 0;
  for (char c : a.substr(3)) {
    if (c < '0' || c > '9') break;
    v = v * 10 + (c - '0');
  }
  return v;
}
/// The bit pattern of a quiet NaN of `t` (the fill a descriptor's OobFill NaN asks for); 0 for integers.
unsigned nan_bits(DType t) {
  switch (t) {
    case DType::f32: return 0x7fc00000u;
    case DType::f16: return 0x7e00u;
    case DType::bf16: return 0x7fc0u;
    case DType::f8e4nv: case DType::f8e5: return 0x7fu;  // S.1111.111 (e4m3's only NaN) / S.11111.11
    default: return 0u;
  }
}
/// Shared memory one program may use on a CUDA target (KiB; CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability"): sm_80 / sm_87 163, sm_86 / sm_89 and sm_120 / sm_121 99, sm_90 to
/// sm_110 227; other targets 48.
int max_shared_kib(const std::string& arch) {
  const int sm = sm_number(arch);
  if (sm >= 120) return 99;
  if (sm >= 90) return 227;
  if (sm == 80 || sm == 87) return 163;
  if (sm >= 80) return 99;
  return 48;
}

/// Thrown by Emitter::run when a cp.async ring does not fit the target's shared memory (the message says so).
struct RingTooLarge {
  std::string why;
};

class Emitter {
 public:
  Emitter(const ir::Kernel& k, const ir::Specialization& spec, const Target& t, const Options& o)
      : k_(k), spec_(spec), t_(t), o_(o), plan_(ir::assign_layouts(k, o.num_warps, t.warp_size, t.arch)),
        threads_(o.num_warps * t.warp_size), axes_(ir::analyze_axes(k, spec)) {
    check_registers_per_thread();
    plan_pipes();
    plan_packed();
    if (o_.device_events) {
      ev_sites_ = k_.event_sites;
      ev_program_ = static_cast<int>(ev_sites_.size());
      ev_sites_.emplace_back(ir::kProgramSite);
      for (const Pipe& p : pipes_) {
        if (cp_) break;  // (cp.async stages: no events yet)
        ev_pipe_site_[p.loop] = static_cast<int>(ev_sites_.size());
        ev_sites_.push_back(fmt::format("{}{}", ir::kTmaSitePrefix, p.loop));
      }
      if (o_.device_events_wgmma && std::any_of(plan_.dot_wgmma.begin(), plan_.dot_wgmma.end(), [](auto w) { return w != 0; })) {
        ev_wgmma_ = static_cast<int>(ev_sites_.size());
        ev_sites_.emplace_back(ir::kWgmmaSite);
      }
    }
  }

  Generated run() {
    if (ws_) emit_producer();
    for (std::size_t id = 0; id < k_.nodes.size(); ++id) {
      emit(static_cast<int>(id));
      after_node(static_cast<int>(id));
    }
    retire_deferred();  // a wgmma whose result nothing read must not be in flight (reading shared memory) at exit
    Generated g;
    g.kernel_name = k_.name;
    g.threads = threads_ + (ws_ ? 4 * t_.warp_size : 0);
    g.num_ctas = cluster_;
    g.event_sites = ev_sites_;
    const bool dynamic = ring_bytes_ > 0;
    // Static shared memory: 48 KiB on NVIDIA GPUs; on AMD's CDNA GPUs the LDS holds 64 KiB per workgroup.
    const int static_kib = t_.dialect == Dialect::hip ? 64 : 48;
    if (!dynamic && smem_bytes_ > static_kib * 1024)
      throw Unsupported(fmt::format("kernel {} needs {} bytes of shared memory for layout conversions and reductions{}; "
                                    "at most {} KiB of static shared memory is supported on {} yet", k_.name, smem_bytes_,
                                    smem_largest_.second == smem_bytes_ ? fmt::format(" (the largest: {})", smem_largest_.first) : "",
                                    static_kib, t_.arch));
    if (dynamic) {
      // The TMA rings first (1024-byte aligned for the 128B swizzle), then the scratch of conversions and
      // reductions; 1024 bytes of slack to align the dynamic base. H100/H200: at most 227 KiB per program.
      g.dynamic_shared_bytes = ring_bytes_ + align_1k(smem_bytes_) + 1024;
      if (const int kib = max_shared_kib(t_.arch); g.dynamic_shared_bytes > kib * 1024) {
        const bool st = !stores_.empty();  // then name the staging, and tma_store as a way out
        if (cp_) {  // generate() makes the kernel again with masked loads, and says why
          int stage = 0;
          for (const Pipe& p : pipes_) stage += p.stage_bytes;
          throw RingTooLarge{fmt::format("cp.async pipeline not applied: {} stage(s) x {} bytes and {} bytes of scratch need {} bytes of "
                                         "shared memory; {} allows {} KiB per program (lower num_stages or the block sizes): masked loads",
                                         o_.num_stages, stage, smem_bytes_, g.dynamic_shared_bytes, t_.arch, kib)};
        }
        throw Unsupported(fmt::format("kernel {} needs {} bytes of shared memory ({}{} for {} {} pipeline stage(s){}, {} of scratch): "
                                      "{} allows {} KiB per program; lower num_stages or the block sizes{}",
                                      k_.name, g.dynamic_shared_bytes,
                                      st ? fmt::format("{} for TMA store staging, ", staging_bytes()) : std::string(),
                                      ring_bytes_ - staging_bytes(), o_.num_stages, cp_ ? "cp.async" : "TMA", st ? " and blocks" : "",
                                      smem_bytes_, t_.arch, kib, st ? ", or turn tma_store off" : ""));
      }
      for (std::size_t i = 0; i < k_.params.size(); ++i)
        if (k_.params[i].type.is_desc && tma_param_[i]) {
          g.tma_params.push_back(static_cast<int>(i));
          g.tma_boxes.push_back({tma_param_[i], slab_w_[i] / size_bytes(k_.params[i].type.dtype)});
        }
    } else {
      g.shared_bytes = smem_bytes_;
    }
    g.diagnostics = plan_.diagnostics;
    g.diagnostics.insert(g.diagnostics.end(), plan_diag_.begin(), plan_diag_.end());
    std::string src;
    src += fmt::format("// generated by tilejit: kernel {}, num_warps={}, target {}\n", k_.name, o_.num_warps, t_.arch);
    for (std::size_t i = 0; i < plan_.layouts.size(); ++i)
      src += fmt::format("// layout L{}: {}\n", i, plan_.layouts[i].description);
    src += prelude(t_.dialect == Dialect::cuda);
    if (dynamic) src += cp_ ? cp_async_prelude() : tma_prelude();
    if (!stores_.empty()) src += tma_store_prelude();
    if (o_.device_events) src += events_prelude(t_.dialect == Dialect::cuda);
    src += combine_functions();
    // Warp-specialised: `.maxnreg` (__maxnreg__) fixes the launch allocation at launch_regs() per thread, the pool
    // setmaxnreg redistributes; with __launch_bounds__ alone ptxas may allocate fewer (58 for a 128x64 GEMM) and the
    // consumers' setmaxnreg.inc would wait forever for registers the program never had.
    const std::string cluster_dims = cluster_ > 1 ? fmt::format("__cluster_dims__({}, 1, 1) ", cluster_) : "";
    src += ws_ ? fmt::format("\nextern \"C\" __global__ void {}__maxnreg__({}) {}(", cluster_dims, launch_regs(), k_.name)
               : fmt::format("\nextern \"C\" __global__ void __launch_bounds__({}) {}(", g.threads, k_.name);
    for (std::size_t i = 0; i < k_.params.size(); ++i) {
      const auto& p = k_.params[i];
      const std::string ty = p.type.is_desc ? (t_.dialect == Dialect::cuda ? "const __grid_constant__ tj_desc" : "const tj_desc")
                             : p.type.is_ptr ? storage_type(p.type.dtype) + "*" : param_type(p.type.dtype);
      src += fmt::format("{}{} arg{}", i ? ", " : "", ty, i);
    }
    if (o_.device_events) src += fmt::format("{}tj_evbuf* tj_events", k_.params.empty() ? "" : ", ");
    src += ") {\n";
    src += fmt::format("  const int tj_tid = (int)threadIdx.x;\n  const int tj_lane = tj_tid % {};\n  const int tj_warp = tj_tid / {};\n",
                       t_.warp_size, t_.warp_size);
    for (std::size_t l = 0; l < plan_.layouts.size(); ++l)
      for (int dim = 0; dim < plan_.layouts[l].rank; ++dim)
        src += fmt::format("  const int tj_c{}_{} = {};  (void)tj_c{}_{};\n", l, dim, base_coord(plan_.layouts[l], dim), l, dim);
    src += "  (void)tj_lane; (void)tj_warp;\n";
    // sm_90a: the warp group's index broadcast from lane 0, so ptxas knows it is the same in every lane and keeps
    // wgmma descriptors built from it in uniform registers (CUTLASS's canonical_warp_idx_sync does the same).
    if (t_.dialect == Dialect::cuda && t_.arch == "sm_90a")
      src += "  const unsigned tj_wgu = __shfl_sync(0xffffffffu, (unsigned)tj_tid / 128u, 0);  (void)tj_wgu;\n";
    if (o_.device_events) {
      src += "  tj_evcur tj_evc = {0u, 0u, 4u, ~0u};  // device-event slots this thread has reserved\n";
      src += "  unsigned tj_wgi = 0u, tj_wgd = 0u;  (void)tj_wgi; (void)tj_wgd;  // wgmma groups committed / seen complete\n";
      src += "  if (tj_tid == 0) " + event_call(ev_program_, 0, "0") + "  // the program's span begins\n";
    }
    if (dynamic) {
      src += "  extern __shared__ __attribute__((aligned(1024))) unsigned char tj_dsmem[];\n";
      src += "  unsigned char* const tj_smem_raw = tj_dsmem + ((1024u - (tj_smem_addr(tj_dsmem) & 1023u)) & 1023u);\n";
      src += fmt::format("  unsigned char* const tj_smem = tj_smem_raw + {};  (void)tj_smem;\n", ring_bytes_);
      src += pipe_preamble_;
    } else if (smem_bytes_ > 0) {
      src += fmt::format("  __shared__ __attribute__((aligned({}))) unsigned char tj_smem[{}];\n", smem_align_, smem_bytes_);
    }
    if (ws_) src += producer_;
    src += body_;
    // A resident block's copy is issued unconditionally but waited for only by the dots that read it; if they
    // sit in a loop that ran zero times, the program must still not exit with the bulk copy in flight.
    if (!cp_)  // (a cp.async resident block is waited for where it is loaded)
      for (const Resident& r : resident_)
        src += fmt::format("  if (tj_tid == 0) tj_mbar_wait(tj_rbar{}, 0u);  // block %{} has landed before the program exits\n", r.node, r.node);
    if (!stores_.empty()) src += "  if (tj_tid == 0) tj_bulk_wait();  // the TMA stores have completed before the program exits\n";
    // A cluster's programs write each other's shared memory (multicast copies) and barriers (stage releases): none
    // exits while another may still do so. (The producer warp groups have exited; a cluster barrier waits only for
    // threads that have not.)
    if (cluster_ > 1) src += "  tj_cluster_sync();  // every program of the cluster is done with the others' shared memory\n";
    if (o_.device_events) src += "  if (tj_tid == 0) " + event_call(ev_program_, 1, "0") + "  // ... and ends\n";
    src += "}\n";
    g.source = std::move(src);
    return g;
  }

 private:
  struct Pipe {
    int loop = -1;                 // its loop_begin
    std::vector<int> loads;        // desc_load nodes it copies, in program order
    std::vector<int> offset;       // each load's offset in a stage (bytes)
    int stage_bytes = 0, stages = 1, prefetch = 0;
    int ring_off = 0, bar_off = 0;
    int tx_bytes = 0;              // bytes one stage's copies complete on its mbarrier
    std::vector<int> async_dots;   // wgmma dots left in flight across the iteration boundary
  };
  /// A block copied once, outside any loop (e.g. attention's Q tile): its own
  /// region and mbarrier; issued where the desc_load stands, waited for (parity
  /// 0, so later waits return at once) by each dot that reads it.
  struct Resident {
    int node = -1, off = 0, bar_off = 0, bytes = 0;
  };
  /// A block copied once per iteration of the loop `loop` that holds it, where that loop encloses a pipelined
  /// loop (a persistent kernel's per-item block, e.g. attention's Q tile of the item): one buffer with a "full"
  /// mbarrier (the copy landed; parity = iterations of `loop` done, tj_oit) and an "empty" one (every consumer
  /// warp is done with it). Read by wgmma in `loop` or in the loops it encloses; released once per iteration
  /// after `anchor` (its last reader, or the nested loop holding it) so the next iteration's copy can start
  /// while this one ends (e.g. during attention's epilogue).
  struct ItemBlock {
    int node = -1, loop = -1, off = 0, bar_off = 0, bytes = 0, anchor = -1;
  };
  /// A TMA store (desc_store): its staging buffer, [rows, 128 bytes] slabs with the 128B swizzle.
  struct StoreBuf {
    int node = -1, off = 0, bytes = 0;
    bool chunked = false;  // staged slab by slab through two slab buffers (slab_static)
  };
  // ---- TMA stores -----------------------------------------------------------
  /// Staging buffers after the blocks of the loads (1024-byte aligned, as the swizzle needs).
  /// A block of more than two slabs whose every register lands in one slab in every thread (slab_static) is staged
  /// slab by slab through two slab buffers (CUTLASS's epilogue subtiles): a quarter of a 4-slab block's staging,
  /// which leaves room for a deeper ring. Otherwise the whole block is staged at once.
  void plan_stores() {
    for (StoreBuf& b : stores_) {
      const int slabs = slabs_of(b.node);
      if (slabs > 2 && slab_static(b.node)) {
        b.chunked = true;
        b.bytes = 2 * k_[b.node].type.shape[0] * 128;
      }
      b.off = ring_bytes_;
      ring_bytes_ += align_1k(b.bytes);
      pipe_preamble_ += fmt::format("  const unsigned tj_stbuf{} = tj_smem_addr(tj_smem_raw) + {};  // TMA store staging of %{}\n",
                                    b.node, b.off, b.node);
      plan_diag_.push_back(b.chunked ? fmt::format("desc_store %{}: stored by TMA slab by slab through {} bytes of shared memory (two "
                                                   "buffers of one 128-byte slab; {} slabs)", b.node, b.bytes, slabs)
                                     : fmt::format("desc_store %{}: stored by TMA from {} bytes of shared memory ({} slab(s) of 128 "
                                                   "bytes)", b.node, b.bytes, slabs));
    }
  }
  /// The value desc_store `id` writes: cast<T>(x) of a float x to a float T in the same layout stores x, converted
  /// once (the cast rounds as the conversion does). An integer T keeps the cast (staging converts nothing to integers).
  int store_value(int id) const {
    const int val = k_[id].args[3];
    if (const Node& c = k_[val];
        c.op == Op::cast && is_float(c.type.dtype) && is_float(k_[c.args[0]].type.dtype) && TL(c.args[0]) == TL(val))
      return c.args[0];
    return val;
  }
  /// Whether each register of desc_store `id`'s value lies in the same 128-byte slab of the block in every thread:
  /// an additive layout whose lane and warp digits move a register's column by less than it has left to its slab's
  /// end (the wgmma accumulator: at most 6 columns from a multiple of 8).
  bool slab_static(int id) const {
    const ir::TileLayout& tl = TL(store_value(id));
    const int pd = tl.dim_of[1];
    if (tl.scalar || pd < 0 || !D(tl).additive) return false;
    const auto d = static_cast<std::size_t>(pd);
    int span = 0;  // the largest column offset a thread's lane and warp add
    for (const auto& g : D(tl).lane) span += (g.radix - 1) * g.image[d];
    for (const auto& g : D(tl).warp) span += (g.radix - 1) * g.image[d];
    const int W = 128 / size_bytes(k_[id].type.dtype);
    for (int r = 0; r < regs(tl); ++r) {
      const int c = D(tl).register_coord(r, pd);
      if (c / W != (c + span) / W) return false;
    }
    return true;
  }
  int staging_bytes() const {
    int n = 0;
    for (const StoreBuf& b : stores_) n += align_1k(b.bytes);
    return n;
  }
  /// Elements of value layout `tl` one thread writes to the staging buffer at once: a run of its registers along
  /// the minor dim (as vector stores), at most 16 bytes, starting at a multiple of the run in every thread (every
  /// other digit moves the column by a multiple of it), so it stays inside one 16-byte chunk of the swizzle.
  int staging_width(const ir::TileLayout& tl, int es) const {
    const int pd = tl.dim_of[1];
    if (tl.scalar || pd < 0 || !D(tl).additive) return 1;
    const auto& reg = D(tl).reg;
    int run = 1;
    std::size_t k = 0;
    for (; k < reg.size(); ++k) {
      const auto& g = reg[k];
      if (g.radix != 2 || g.stride != run || g.image[static_cast<std::size_t>(pd)] != run || run * 2 * es > 16) break;
      bool only_pd = true;
      for (int d = 0; d < D(tl).rank; ++d)
        if (d != pd && g.image[static_cast<std::size_t>(d)] != 0) only_pd = false;
      if (!only_pd) break;
      run *= 2;
    }
    auto aligned = [&](int w, std::size_t first) {
      for (std::size_t i = first; i < reg.size(); ++i)
        if (reg[i].image[static_cast<std::size_t>(pd)] % w) return false;
      for (const auto& g : D(tl).lane)
        if (g.image[static_cast<std::size_t>(pd)] % w) return false;
      for (const auto& g : D(tl).warp)
        if (g.image[static_cast<std::size_t>(pd)] % w) return false;
      return true;
    };
    while (run > 1 && !aligned(run, k)) {
      run /= 2;
      --k;
    }
    return run * es >= 4 ? run : 1;
  }
  /// desc_store `id` through TMA: wait until the previous store from this buffer has read it (a store in a loop),
  /// every consumer thread writes its elements at their swizzled offsets, proxy fence, barrier, then thread 0
  /// issues one bulk tensor store per 128-byte slab and commits them as one bulk group. A chunked buffer
  /// (plan_stores) does this per slab, alternating between its two slab buffers: before slab s >= 2 is written the
  /// store of slab s - 2 must have read its buffer (wait_group.read 1: the other buffer's may still be in flight),
  /// before slab 0 in a loop every earlier store (read 0); one bulk group per slab.
  void emit_tma_store(int id) {
    const Node& n = k_[id];
    const StoreBuf* sb = nullptr;
    for (const StoreBuf& b : stores_)
      if (b.node == id) sb = &b;
    if (!sb) throw Unsupported(fmt::format("codegen: desc_store %{} has no staging buffer", id));
    const int val = store_value(id);
    const int B0 = n.type.shape[0], es = size_bytes(n.type.dtype), W = 128 / es;
    line(fmt::format("// %{}: block of descriptor %{} stored by TMA from the swizzled staging buffer tj_stbuf{}{}", id, n.args[0], id,
                     sb->chunked ? ", slab by slab through two slab buffers" : ""));
    const bool in_loop = parent_[static_cast<std::size_t>(id)] >= 0;
    auto issue = [&](int s, int at) {
      const ir::DescRef b = block_desc(id);
      return fmt::format("tj_tma_store_{}d(&s{}.map, tj_stbuf{} + {}u, {}); ", b.rank, b.param, id, at,
                         box_coords(id, v(n.args[1], 0), fmt::format("(int)({}) + {}", v(n.args[2], 0), s * W), outer_values(id)));
    };
    if (!sb->chunked) {
      if (in_loop) {
        line("if (tj_tid == 0) tj_bulk_wait_read();  // the previous store from this buffer has read it");
        line(sync());
      }
      stage_registers(id, val, -1, sb->off);
      line("tj_fence_proxy_async();  // the writes above are visible to TMA");
      line(sync() + "  // the staging buffer is complete");
      std::string all;
      for (int s = 0; s < slabs_of(id); ++s) all += issue(s, s * B0 * 128);
      line(fmt::format("if (tj_tid == 0) {{ {}tj_bulk_commit(); }}", all));
      return;
    }
    for (int s = 0; s < slabs_of(id); ++s) {
      if (s >= 2) {
        line(fmt::format("if (tj_tid == 0) tj_bulk_wait_read1();  // slab {}'s store has read buffer {}", s - 2, s % 2));
        line(sync());
      } else if (s == 0 && in_loop) {
        line("if (tj_tid == 0) tj_bulk_wait_read();  // the previous block's stores have read both buffers");
        line(sync());
      }
      stage_registers(id, val, s, sb->off + s % 2 * B0 * 128);
      line("tj_fence_proxy_async();  // the writes above are visible to TMA");
      line(sync() + fmt::format("  // slab {} is staged", s));
      line(fmt::format("if (tj_tid == 0) {{ {}tj_bulk_commit(); }}", issue(s, s % 2 * B0 * 128)));
    }
  }
  /// Every consumer thread writes value `val`'s registers of desc_store `id` that lie in slab `slab` (-1: all) at
  /// their 128B-swizzled offsets in the staging buffer at shared offset `off` (which holds that slab first when
  /// slab >= 0).
  void stage_registers(int id, int val, int slab, int off) {
    const Node& n = k_[id];
    const int B0 = n.type.shape[0], es = size_bytes(n.type.dtype), W = 128 / es;
    const ir::TileLayout& tl = TL(val);
    const int pd = tl.dim_of[1];
    const int vw = staging_width(tl, es), bytes = vw * es;
    const std::string own = owner_predicate(tl);
    for (int r = 0; r < regs(tl); r += vw) {
      if (canonical(r, tl) != r) continue;
      if (slab >= 0 && D(tl).register_coord(r, pd) / W != slab) continue;
      const std::string col = slab > 0 ? fmt::format("({}) * {} - {}", coord(tl, r, 1), es, slab * 128) : fmt::format("({}) * {}", coord(tl, r, 1), es);
      const std::string at = fmt::format("tj_smem_raw + {}u + tj_swz128({}, {}, {})", off, coord(tl, r, 0), col, B0);
      std::string st;
      if (bytes < 4) {
        st = fmt::format("*({}*)({}) = {};", storage_type(n.type.dtype), at, store_expr(n.type.dtype, v(val, r)));
      } else {
        const std::string tv = fmt::format("t{}_{}", id, r);
        line(fmt::format("tj_v{} {};", bytes, tv));
        for (int w = 0; w < bytes / 4; ++w) {
          std::string word;
          if (es == 4) {
            word = n.type.dtype == DType::f32 ? fmt::format("tj_as_u32({})", v(val, r + w)) : fmt::format("(unsigned)({})", v(val, r + w));
          } else {
            word = pair_word(n.type.dtype, v(val, r + 2 * w), v(val, r + 2 * w + 1));
          }
          line(fmt::format("{}.w[{}] = {};", tv, w, word));
        }
        st = fmt::format("*(tj_v{}*)({}) = {};", bytes, at, tv);
      }
      line(own.empty() ? st : fmt::format("if ({}) {}", own, st));
    }
  }
  /// The slab width (bytes, = the swizzle span) block `id` is held in: its descriptor parameter's (slab_w_, chosen
  /// by plan_slab_widths); 128 for a block that is not a descriptor block of a planned parameter.
  int slab_w(int id) const {
    if (slab_w_.empty()) return 128;
    const int param = static_cast<int>(k_[block_desc(id).param].i);
    return slab_w_[static_cast<std::size_t>(param)];
  }
  /// Each descriptor parameter's slab width: the swizzle span its TMA blocks are held in (and copied with, one box
  /// per slab), 128 bytes unless its rows are not a whole number of 128-byte slabs; then the widest of 64 and 32
  /// bytes that divides them, so that a block is held exactly: a [rows, 96] bf16 block (192-byte rows, attention
  /// at head dim 96) is three 64-byte slabs with the 64B swizzle, not two 128-byte ones with a quarter of zero
  /// fill. Only where wgmma reads the blocks in place (sm_90a TMA blocks; wgmma's descriptors take the 32B, 64B
  /// and 128B swizzles alike); cp.async rings, TMA stores and every other target keep 128-byte slabs.
  void plan_slab_widths() {
    slab_w_.assign(k_.params.size(), 128);
    if (t_.dialect != Dialect::cuda || cp_) return;
    std::vector<char> stored(k_.params.size(), 0);
    std::vector<int> width(k_.params.size(), 0);
    for (std::size_t id = 0; id < k_.nodes.size(); ++id) {
      const Node& n = k_.nodes[id];
      if (n.op != Op::desc_load && n.op != Op::desc_store) continue;
      const auto param = static_cast<std::size_t>(k_[block_desc(static_cast<int>(id)).param].i);
      if (n.op == Op::desc_store) {
        stored[param] = 1;
        continue;
      }
      const int rb = n.type.shape[1] * size_bytes(n.type.dtype), rows = n.type.shape[0];
      const int w = rb % 128 == 0 || rows % 8 != 0 ? 128 : rb % 64 == 0 ? 64 : rb % 32 == 0 ? 32 : 128;
      width[param] = width[param] && width[param] != w ? 128 : w;  // blocks of one parameter share one box
    }
    for (std::size_t i = 0; i < k_.params.size(); ++i)
      if (!stored[i] && width[i]) slab_w_[i] = width[i];
  }
  /// Slabs a block [rows, cols] is held in (one TMA box each; the last may be partly used when the rows are not
  /// a whole number of slabs).
  int slabs_of(int id) const {
    const ir::Type& t = k_[id].type;
    const int w = slab_w(id);
    return (t.shape[1] * size_bytes(t.dtype) + w - 1) / w;
  }
  int block_bytes(int id) const { return slabs_of(id) * k_[id].type.shape[0] * slab_w(id); }
  /// Thread 0's copies of block `x` into shared address `dst` at coordinates (row, col), completing on `bar`.
  /// A multicast block of a pipelined loop (multicast(x)): only the cluster's first program copies it, into every
  /// program's shared memory at the same offset, completing on every program's barrier at the same offset.
  /// `outer`: the coordinates of the block's other dims (a rank 3..5 descriptor's, dim order; none for rank 2).
  std::string tma_copies(int x, const std::string& dst, const std::string& row, const std::string& col, const std::string& bar,
                         bool in_pipe = false, const std::vector<std::string>& outer = {}) const {
    const ir::Type& t = k_[x].type;
    const bool mc = in_pipe && multicast(x);
    const ir::DescRef b = block_desc(x);
    const int param = k_[b.param].i;
    const bool split = mc && mc_split_[static_cast<std::size_t>(param)];
    std::string out;
    const int w = slab_w(x);
    for (int s = 0; s < slabs_of(x); ++s) {
      const std::string at = fmt::format("{} + {}u", dst, s * t.shape[0] * w), x0 = fmt::format("(int)({}) + {}", col, s * (w / size_bytes(t.dtype)));
      if (split) {  // rank r copies rows [r·R/C, (r+1)·R/C) of the block to every program
        const int part = t.shape[0] / cluster_;
        out += fmt::format("tj_tma_load_{}d_multicast({} + tj_crank * {}u, &s{}.map, {}, {}, {}); ", b.rank, at, part * w, b.param,
                           box_coords(x, row, x0, outer, fmt::format(" + (int)tj_crank * {}", part)), bar, (1 << cluster_) - 1);
      } else {
        const std::string args = fmt::format("{}, &s{}.map, {}, {}", at, b.param, box_coords(x, row, x0, outer), bar);
        out += mc ? fmt::format("tj_tma_load_{}d_multicast({}, {}); ", b.rank, args, (1 << cluster_) - 1)
                  : fmt::format("tj_tma_load_{}d({}); ", b.rank, args);
      }
    }
    return mc && !split ? fmt::format("if (tj_crank == 0) {{ {}}} ", out) : out;
  }
  /// The descriptor block `x` (desc_load / desc_store) is read from (ir::desc_ref).
  ir::DescRef block_desc(int x) const { return ir::desc_ref(k_, x); }
  /// The values of block x's outer coordinates where they are defined (outside a coordinate function).
  std::vector<std::string> outer_values(int x) const {
    std::vector<std::string> out;
    for (int u : block_desc(x).outer) out.push_back(v(u, 0));
    return out;
  }
  /// A TMA box's coordinates, innermost first: the column, then dims rank-2 .. 0 (the row along the row dim, plus
  /// `row_add`).
  std::string box_coords(int x, const std::string& row, const std::string& col, const std::vector<std::string>& outer,
                         const std::string& row_add = "") const {
    const ir::DescRef b = block_desc(x);
    if (static_cast<int>(outer.size()) != b.rank - 2)
      throw Unsupported(fmt::format("codegen: block %{} of a rank-{} descriptor has {} outer coordinates", x, b.rank, outer.size()));
    std::string out = col;
    for (int d = b.rank - 2, j = b.rank - 3; d >= 0; --d)
      out += d == b.row_dim ? fmt::format(", (int)({}){}", row, row_add) : fmt::format(", (int)({})", outer[static_cast<std::size_t>(j--)]);
    return out;
  }
  /// The 2-D slice a cp.async copy of block x reads (tj_view), `outer` its outer coordinates as for tma_copies.
  std::string cp_view(int x, const std::vector<std::string>& outer) const {
    const ir::DescRef b = block_desc(x);
    std::string out = fmt::format("tj_view_of(s{}, {}, {}, {}", b.param, b.rank, b.row_dim, size_bytes(k_[x].type.dtype));
    for (const std::string& u : outer) out += fmt::format(", (int)({})", u);
    return out + ")";
  }
  /// Block x's outer coordinates as a coordinate function's result holds them (c.w[2], ...).
  std::vector<std::string> outer_slots(int x) const {
    std::vector<std::string> out;
    for (std::size_t j = 0; j < block_desc(x).outer.size(); ++j) out.push_back(fmt::format("c.w[{}]", j + 2));
    return out;
  }
  /// desc_load `x` was written load_multicast and this kernel runs in clusters.
  bool multicast(int x) const { return cluster_ > 1 && k_[x].i == 1; }
  /// A consumer warp's release of the stage barrier at `bar` (after __syncwarp): by lane 0, or in a cluster in every
  /// program of the cluster, whose producers may multicast into this program's stage — lane r arrives in rank r's
  /// barrier, the cluster's arrivals issued at once.
  std::string release(const std::string& cond, const std::string& bar) const {
    return cluster_ > 1 ? fmt::format("if (tj_lane < {}{}) tj_mbar_arrive_remote({}, (unsigned)tj_lane)", cluster_, cond, bar)
                        : fmt::format("if (tj_lane == 0{}) tj_mbar_arrive({})", cond, bar);
  }
  // ---- the TMA pipeline -----------------------------------------------------------
  /// The desc_loads left in the IR are the ones generate() gave to TMA (each
  /// inside a loop, feeding wgmma only). Per loop: a ring of num_stages
  /// stages, each holding one block of every such load; an mbarrier per stage
  /// that the copies complete (expect_tx of the stage's bytes); a counter of
  /// consumed stages that gives the stage (it % S) and the parity (it / S & 1)
  /// to wait for. Copies for iteration i + S - 1 are issued by thread 0 at the
  /// end of iteration i, after every warp group's wgmma of iteration i - 1 has
  /// completed (wgmma.wait_group, then a barrier) — that stage's buffers are
  /// the ones being refilled. (Per-stage "empty" mbarriers that warps release
  /// and thread 0 waits on, without the CTA barrier, measured 1–3% slower on
  /// the H200 for GEMM and ~5% for attention: thread 0's wait stalls its warp
  /// group. They pay off with a separate producer warp — warp specialisation.)
  void plan_pipes() {
    const std::size_t N = k_.nodes.size();
    // Blocks left in the IR on a CUDA target without wgmma are cp.async blocks (async_loads): a ring per loop, no
    // mbarriers, no tensor maps, no producer warp.
    cp_ = t_.dialect == Dialect::cuda && t_.arch != "sm_90a";
    pipe_of_loop_.assign(N, -1);
    alias_.assign(N, -1);
    tma_param_.assign(k_.params.size(), 0);
    plan_slab_widths();
    const auto ends = ir::loop_ends(k_);
    loop_end_.assign(ends.begin(), ends.end());
    std::vector<int> parent(N, -1), stack;
    for (std::size_t id = 0; id < N; ++id) {
      const Node& n = k_.nodes[id];
      if (n.op == Op::loop_end) stack.pop_back();
      parent[id] = stack.empty() ? -1 : stack.back();
      if (n.op == Op::loop_begin) stack.push_back(static_cast<int>(id));
    }
    auto note_param = [&](const Node& n) {
      if (cp_) return;  // cp.async reads through the descriptor's base, shape and strides: no tensor map
      const int param = static_cast<int>(k_[block_desc(static_cast<int>(&n - k_.nodes.data())).param].i);
      int& rows = tma_param_[static_cast<std::size_t>(param)];
      if (rows && rows != n.type.shape[0])
        throw Unsupported(fmt::format("descriptor parameter {} is copied by TMA in blocks of {} and of {} rows: one box per "
                                      "descriptor", param, rows, n.type.shape[0]));
      // Boxes are one slab wide (slab_w: the swizzle span wgmma reads): a block whose rows are not whole slabs is
      // copied with its last slab's columns past the block (in bounds: read from memory; past the tensor: zero-filled).
      const int row_bytes = n.type.shape[1] * size_bytes(n.type.dtype);
      const int id = static_cast<int>(&n - k_.nodes.data()), w = slab_w(id);
      if (!rows && row_bytes % w != 0) {
        const int used = n.type.shape[0] * row_bytes, moved = block_bytes(id);
        plan_diag_.push_back(fmt::format("descriptor parameter {}: its [{}, {}] blocks have {}-byte rows, copied as {} TMA box(es) "
                                         "{} elements ({} bytes) wide: each copy moves {} bytes into shared memory for a block of {} "
                                         "({:.2f}x; columns past the tensor are zero-filled, the others are read); blocks whose rows "
                                         "are a multiple of 32 bytes ({} elements) copy only what they use",
                                         param, n.type.shape[0], n.type.shape[1], row_bytes, slabs_of(id), w / size_bytes(n.type.dtype),
                                         w, moved, used, static_cast<double>(moved) / used, 32 / size_bytes(n.type.dtype)));
      } else if (!rows && w < 128 && row_bytes > 0) {
        plan_diag_.push_back(fmt::format("descriptor parameter {}: its [{}, {}] blocks have {}-byte rows, held exactly as {} slab(s) of "
                                         "{} bytes with the {}B swizzle (no columns past the block)",
                                         param, n.type.shape[0], n.type.shape[1], row_bytes, slabs_of(id), w, w));
      }
      rows = n.type.shape[0];
    };
    // A loop whose blocks are copied per iteration into one buffer each (ItemBlock) rather than a ring: one that
    // encloses a loop with blocks of its own (a pipelined loop nested in a loop over work items).
    std::vector<char> has_blocks(N, 0), encloses(N, 0);
    for (std::size_t id = 0; id < N; ++id)
      if (k_.nodes[id].op == Op::desc_load && parent[id] >= 0) has_blocks[static_cast<std::size_t>(parent[id])] = 1;
    for (std::size_t id = 0; id < N; ++id)
      if (k_.nodes[id].op == Op::loop_begin && has_blocks[id] && parent[id] >= 0) encloses[static_cast<std::size_t>(parent[id])] = 1;
    for (std::size_t id = 0; id < N; ++id) {
      const Node& n = k_.nodes[id];
      if (n.op == Op::desc_store) {  // left in the IR by generate(): a TMA store (plan_stores)
        note_param(n);
        stores_.push_back(StoreBuf{static_cast<int>(id), 0, block_bytes(static_cast<int>(id))});
        continue;
      }
      if (n.op != Op::desc_load) continue;
      const int L = parent[id];
      note_param(n);
      if (cp_ && L >= 0 && encloses[static_cast<std::size_t>(L)])
        throw Unsupported(fmt::format("codegen: cp.async block %{} is not in an innermost loop with blocks", id));
      if (L < 0) {
        resident_.push_back(Resident{static_cast<int>(id), 0, 0, block_bytes(static_cast<int>(id))});
        continue;
      }
      if (encloses[static_cast<std::size_t>(L)]) {
        items_.push_back(ItemBlock{static_cast<int>(id), L, 0, 0, block_bytes(static_cast<int>(id)), -1});
        continue;
      }
      if (pipe_of_loop_[static_cast<std::size_t>(L)] < 0) {
        pipe_of_loop_[static_cast<std::size_t>(L)] = static_cast<int>(pipes_.size());
        pipes_.push_back(Pipe{});
        pipes_.back().loop = L;
      }
      Pipe& p = pipes_[static_cast<std::size_t>(pipe_of_loop_[static_cast<std::size_t>(L)])];
      p.loads.push_back(static_cast<int>(id));
      p.offset.push_back(p.stage_bytes);
      const int bytes = block_bytes(static_cast<int>(id));
      p.tx_bytes += bytes;
      p.stage_bytes += align_1k(bytes);
    }
    // Async dots: a wgmma whose accumulator is a carry of the pipe's loop, used
    // by nothing else in the body, and whose result only goes back into it.
    std::vector<std::vector<int>> uses(N);
    for (std::size_t id = 0; id < N; ++id)
      for (int a : k_.nodes[id].args)
        if (a >= 0) uses[static_cast<std::size_t>(a)].push_back(static_cast<int>(id));
    for (Pipe& p : pipes_) {
      p.stages = o_.num_stages;
      p.prefetch = o_.num_stages - 1;
      p.ring_off = ring_bytes_;
      ring_bytes_ += p.stage_bytes * p.stages;
      for (std::size_t d = static_cast<std::size_t>(p.loop) + 1; d < static_cast<std::size_t>(ends[static_cast<std::size_t>(p.loop)]); ++d) {
        const Node& n = k_.nodes[d];
        // (register-A wgmma reads its A registers asynchronously too: never left in flight)
        if (cp_ || n.op != Op::dot || parent[d] != p.loop || !plan_.in_smem[static_cast<std::size_t>(n.args[0])] ||
            !plan_.in_smem[static_cast<std::size_t>(n.args[1])])
          continue;
        const int c = n.args[2];
        if (k_[c].op != Op::loop_carry || k_[c].args[1] != p.loop) continue;
        bool ok = true;
        // The carry is read by this dot, its own yield and the loop's result only: another carry's yield that
        // copies it (e.g. `prev = acc`) must see the value before the product, which an in-place wgmma overwrites.
        for (int u : uses[static_cast<std::size_t>(c)])
          if (u != static_cast<int>(d) && !(k_[u].op == Op::loop_yield && k_[u].args[0] == c) && k_[u].op != Op::loop_result)
            ok = false;
        for (int u : uses[d])
          if (k_[u].op != Op::loop_yield || k_[u].args[0] != c) ok = false;
        if (!ok) continue;
        p.async_dots.push_back(static_cast<int>(d));
        alias_[d] = c;
      }
    }
    for (Resident& r : resident_) {
      r.off = ring_bytes_;
      ring_bytes_ += align_1k(r.bytes);
    }
    for (ItemBlock& b : items_) {
      b.off = ring_bytes_;
      ring_bytes_ += align_1k(b.bytes);
      // The release point: after the last wgmma reading the block (itself when it sits in b.loop's body, else the
      // end of the nested loop holding it: every wgmma of a loop with wgmma has completed when it ends).
      std::vector<int> readers;
      for (int u : uses[static_cast<std::size_t>(b.node)]) {
        if (k_[u].op == Op::dot) readers.push_back(u);
        if (k_[u].op == Op::trans)
          for (int w : uses[static_cast<std::size_t>(u)])
            if (k_[w].op == Op::dot) readers.push_back(w);
      }
      for (int r : readers) {
        int a = r;
        while (parent[static_cast<std::size_t>(a)] != b.loop) a = parent[static_cast<std::size_t>(a)];
        b.anchor = std::max(b.anchor, a == r ? r : ends[static_cast<std::size_t>(a)]);
      }
      if (b.anchor < 0) throw Unsupported(fmt::format("codegen: TMA block %{} has no wgmma reader", b.node));
    }
    plan_stores();
    parent_ = parent;
    decide_warp_specialization(parent, ends);
    decide_cluster();
    // Barriers after all rings (8 bytes each): per stage a "full" one (the copies landed) and, warp-specialised,
    // an "empty" one (every consumer warp is done with the stage).
    for (Pipe& p : pipes_) {
      p.bar_off = ring_bytes_;
      if (!cp_) ring_bytes_ += 8 * p.stages * (ws_ ? 2 : 1);
    }
    for (Resident& r : resident_) {
      r.bar_off = ring_bytes_;
      ring_bytes_ += 8;
    }
    for (ItemBlock& b : items_) {
      b.bar_off = ring_bytes_;
      ring_bytes_ += 16;  // "full", then "empty"
    }
    ring_bytes_ = align_1k(ring_bytes_);
    for (const Pipe& p : pipes_) {
      const int L = p.loop;
      if (cp_) {
        pipe_preamble_ += fmt::format("  const unsigned tj_ring{0} = tj_smem_addr(tj_smem_raw) + {1};  // loop %{0}'s cp.async ring\n", L, p.ring_off);
        pipe_preamble_ += fmt::format("  unsigned tj_it{} = 0;  // stages of loop %{} consumed so far\n", L, L);
        plan_diag_.push_back(fmt::format("loop %{}: cp.async pipeline of {} stage(s) x {} bytes ({} block(s)), {} in flight while "
                                         "an iteration computes; mma.sync reads the fragments from shared memory",
                                         L, p.stages, p.stage_bytes, p.loads.size(), p.prefetch));
        continue;
      }
      pipe_preamble_ += fmt::format("  const unsigned tj_ring{0} = tj_smem_addr(tj_smem_raw) + {1}, tj_bar{0} = tj_smem_addr(tj_smem_raw) + {2};\n",
                                    L, p.ring_off, p.bar_off);
      pipe_preamble_ += fmt::format("  unsigned tj_it{} = 0;  // stages of loop %{} consumed so far\n", L, L);
      pipe_preamble_ += fmt::format("  if (tj_tid == 0) {{ for (int s = 0; s < {}; ++s) tj_mbar_init(tj_bar{} + 8 * s, 1); tj_mbar_fence_init(); }}\n",
                                    p.stages, L);
      if (ws_)
        pipe_preamble_ += fmt::format("  const unsigned tj_empty{0} = tj_bar{0} + {1}u;  // per stage: every consumer warp released it\n"
                                      "  if (tj_tid == 0) {{ for (int s = 0; s < {2}; ++s) tj_mbar_init(tj_empty{0} + 8 * s, {3}); tj_mbar_fence_init(); }}\n",
                                      L, 8 * p.stages, p.stages, o_.num_warps * cluster_);
      plan_diag_.push_back(fmt::format("loop %{}: TMA pipeline of {} stage(s) x {} bytes ({} block(s)), {} wgmma left in flight "
                                       "across iterations", L, p.stages, p.stage_bytes, p.loads.size(), p.async_dots.size()));
    }
    for (const Resident& r : resident_) {
      if (cp_) {
        pipe_preamble_ += fmt::format("  const unsigned tj_res{0} = tj_smem_addr(tj_smem_raw) + {1};  // block %{0}, copied once\n", r.node, r.off);
        plan_diag_.push_back(fmt::format("desc_load %{}: copied once by cp.async into {} bytes of shared memory; mma.sync reads the "
                                         "fragments there", r.node, r.bytes));
        continue;
      }
      pipe_preamble_ += fmt::format("  const unsigned tj_res{0} = tj_smem_addr(tj_smem_raw) + {1}, tj_rbar{0} = tj_smem_addr(tj_smem_raw) + {2};\n",
                                    r.node, r.off, r.bar_off);
      pipe_preamble_ += fmt::format("  if (tj_tid == 0) {{ tj_mbar_init(tj_rbar{}, 1); tj_mbar_fence_init(); }}\n", r.node);
      plan_diag_.push_back(fmt::format("desc_load %{}: copied once by TMA into {} bytes of shared memory ({} slab(s) of 128 bytes)",
                                       r.node, r.bytes, slabs_of(r.node)));
    }
    std::vector<int> item_loops;
    for (const ItemBlock& b : items_) {
      pipe_preamble_ += fmt::format("  const unsigned tj_item{0} = tj_smem_addr(tj_smem_raw) + {1}, tj_ibar{0} = tj_smem_addr(tj_smem_raw) + {2};"
                                    "  // full at +0, empty at +8\n", b.node, b.off, b.bar_off);
      pipe_preamble_ += fmt::format("  if (tj_tid == 0) {{ tj_mbar_init(tj_ibar{0}, 1); tj_mbar_init(tj_ibar{0} + 8u, {1}); tj_mbar_fence_init(); }}\n",
                                    b.node, o_.num_warps);
      if (std::find(item_loops.begin(), item_loops.end(), b.loop) == item_loops.end()) {
        item_loops.push_back(b.loop);
        pipe_preamble_ += fmt::format("  unsigned tj_oit{0} = 0;  // iterations of loop %{0} done: the phase of its blocks' barriers\n", b.loop);
      }
      plan_diag_.push_back(fmt::format("desc_load %{}: copied by TMA once per iteration of loop %{} into one buffer of {} bytes, released "
                                       "after %{}", b.node, b.loop, b.bytes, b.anchor));
    }
    if (cluster_ > 1) {
      // The barriers are initialised in every program of the cluster before any program multicasts into them.
      pipe_preamble_ += "  const unsigned tj_crank = tj_cluster_rank();  // this program's rank in its cluster\n";
      pipe_preamble_ += "  tj_cluster_sync();  // every program's barriers are initialised\n";
    } else if (!cp_ && (!pipes_.empty() || !resident_.empty() || !items_.empty())) {
      pipe_preamble_ += "  __syncthreads();\n";
    }
  }
  const ItemBlock* item_of(int id) const {
    for (const ItemBlock& b : items_)
      if (b.node == id) return &b;
    return nullptr;
  }
  bool has_items(int loop) const {
    for (const ItemBlock& b : items_)
      if (b.loop == loop) return true;
    return false;
  }
  /// Thread 0 (or the producer lane): wait until every consumer warp released the previous iteration's copy of
  /// item block `b`, then copy this iteration's.
  std::string item_issue(const ItemBlock& b) const {
    return fmt::format("if (tj_oit{0} > 0u) tj_mbar_wait(tj_ibar{1} + 8u, (tj_oit{0} - 1u) & 1u); tj_mbar_expect_tx(tj_ibar{1}, {2}u); {3}",
                       b.loop, b.node, b.bytes,
                       tma_copies(b.node, fmt::format("tj_item{}", b.node), v(k_[b.node].args[1], 0), v(k_[b.node].args[2], 0),
                                  fmt::format("tj_ibar{}", b.node), false, outer_values(b.node)));
  }
  /// Each consumer warp, once per iteration of the block's loop: this iteration's copy has landed (it has, once
  /// read; the wait also covers an iteration whose readers did not run) and no wgmma reads it any more.
  void emit_item_release(const ItemBlock& b) {
    line(fmt::format("tj_mbar_wait(tj_ibar{0}, tj_oit{1} & 1u); __syncwarp(); if (tj_lane == 0) tj_mbar_arrive(tj_ibar{0} + 8u);"
                     "  // block %{0}: released for loop %{1}'s next iteration", b.node, b.loop));
  }
  /// After node `id` of the consumers' code: release the item blocks whose last reader it is (a wgmma still in
  /// flight: once it is retired, see retire_deferred).
  void after_node(int id) {
    for (const ItemBlock& b : items_) {
      if (b.anchor != id) continue;
      if (std::find(deferred_.begin(), deferred_.end(), id) != deferred_.end())
        pending_release_.push_back(b.node);
      else
        emit_item_release(b);
    }
  }
  const Resident* resident_of(int id) const {
    for (const Resident& r : resident_)
      if (r.node == id) return &r;
    return nullptr;
  }
  const Pipe* pipe_of_load(int id) const {
    for (const Pipe& p : pipes_)
      for (int l : p.loads)
        if (l == id) return &p;
    return nullptr;
  }
  int load_offset(const Pipe& p, int id) const {
    for (std::size_t i = 0; i < p.loads.size(); ++i)
      if (p.loads[i] == id) return p.offset[i];
    throw Unsupported(fmt::format("codegen: %{} is not a block of this pipeline", id));
  }
  /// The scalar nodes inside loop L that the coordinates of `load` depend on,
  /// in program order (the induction variable and values from outside are used as they are).
  std::vector<int> coord_chain(int load, int L) const {
    std::vector<char> need(k_.nodes.size(), 0);
    std::vector<int> todo{k_[load].args[0], k_[load].args[1], k_[load].args[2]};  // (a desc_view: its coordinates)
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (x <= L || need[static_cast<std::size_t>(x)]) continue;
      need[static_cast<std::size_t>(x)] = 1;
      for (int a : k_[x].args)
        if (a >= 0) todo.push_back(a);
    }
    std::vector<int> out;
    for (std::size_t i = 0; i < need.size(); ++i)
      if (need[i]) out.push_back(static_cast<int>(i));
    return out;
  }
  /// Before `for`: a coordinate function per block, the copy-issue function, the prologue.
  void emit_pipe_prologue(const Pipe& p) {
    if (ws_) {
      line(fmt::format("// loop %{}: its TMA copies are issued by the producer warp", p.loop));
      if (const int O = parent_[static_cast<std::size_t>(p.loop)]; O >= 0)
        line(fmt::format("const unsigned tj_it0{0} = tj_it{0};  // stages consumed before this run of loop %{0} (the ring continues across loop %{1})",
                         p.loop, O));
      return;
    }
    emit_pipe_issue(p);
    const int L = p.loop;
    const Node& lb = k_[L];
    const std::string lo = v(lb.args[0], 0), hi = v(lb.args[1], 0), step = v(lb.args[2], 0);
    if (cp_) {  // every thread; one group per stage, empty past the loop's end (the group count stays uniform)
      if (p.prefetch > 0)
        line(fmt::format("for (int p = 0; p < {}; ++p) {{ if ({} + p * {} < {}) tj_issue{}({} + p * {}, tj_it{} + (unsigned)p); tj_cp_commit(); }}",
                         p.prefetch, lo, step, hi, L, lo, step, L));
      return;
    }
    if (p.prefetch > 0)
      line(fmt::format("if (tj_tid == 0) for (int p = 0; p < {}; ++p) if ({} + p * {} < {}) tj_issue{}({} + p * {}, tj_it{} + (unsigned)p);",
                       p.prefetch, lo, step, hi, L, lo, step, L));
  }
  /// The coordinate functions of the pipe's blocks and tj_issue<L>(iv, it): the copies of one iteration.
  void emit_pipe_issue(const Pipe& p) {
    const int L = p.loop;
    const Node& lb = k_[L];
    const std::string lo = v(lb.args[0], 0), hi = v(lb.args[1], 0), step = v(lb.args[2], 0);
    for (int x : p.loads) {
      line(fmt::format("auto tj_at{} = [&](const int s{}) {{  // coordinates of block %{} at an iteration", x, L, x));
      for (int c : coord_chain(x, L)) emit(c);
      if (const ir::DescRef b = block_desc(x); b.rank > 2) {  // column, row, then the other dims
        std::string w = fmt::format("(int){}, (int){}", v(k_[x].args[2], 0), v(k_[x].args[1], 0));
        for (int u : b.outer) w += fmt::format(", (int){}", v(u, 0));
        line(fmt::format("  return tj_crd{{{{{}}}}};", w));
      } else {
        line(fmt::format("  return tj_v8{{{{(unsigned){}, (unsigned){}}}}};", v(k_[x].args[2], 0), v(k_[x].args[1], 0)));
      }
      line("};");
    }
    if (cp_) {
      line(fmt::format("auto tj_issue{} = [&](const int iv, const unsigned it) {{  // every thread: its share of one iteration's copies", L));
      line(fmt::format("  const unsigned st = it % {}u;", p.stages));
      for (std::size_t i = 0; i < p.loads.size(); ++i) {
        const int x = p.loads[i];
        const ir::Type& bt = k_[x].type;
        line(fmt::format("  {{ const auto c = tj_at{}(iv); tj_cp_block<{}, {}, {}, {}, {}u>(tj_ring{} + st * {}u + {}u, {}, (int)c.w[1], (int)c.w[0], tj_tid); }}",
                         x, size_bytes(bt.dtype), bt.shape[0], bt.shape[1], threads_, nan_bits(bt.dtype), L, p.stage_bytes,
                         p.offset[i], cp_view(x, outer_slots(x))));
      }
      line("};");
      return;
    }
    line(fmt::format("auto tj_issue{} = [&](const int iv, const unsigned it) {{  // thread 0: the copies of one iteration", L));
    line(fmt::format("  const unsigned st = it % {}u, bar = tj_bar{} + 8u * st;", p.stages, L));
    line(fmt::format("  tj_mbar_expect_tx(bar, {}u);", p.tx_bytes));
    for (std::size_t i = 0; i < p.loads.size(); ++i) {
      const int x = p.loads[i];
      line(fmt::format("  {{ const auto c = tj_at{}(iv); {}}}", x,
                       tma_copies(x, fmt::format("tj_ring{} + st * {}u + {}u", L, p.stage_bytes, p.offset[i]), "c.w[1]", "c.w[0]", "bar", true,
                                  outer_slots(x))));
    }
    if (o_.device_events) line("  " + event_call(ev_pipe_site_.at(L), 0, "it") + "  // the stage's copies are issued");
    line("};");
  }
  /// Whether cp.async ring p refills at the top of an iteration, right after its barrier, rather than at the end.
  /// With 2 stages (one prefetched) a refill at the end is waited for at the next iteration's top, so nothing but
  /// other programs hides its latency; at the top it is in flight during the whole iteration's math: +2–15% for
  /// the attention forward on the H200, more than a third stage refilled at the end gave (docs/perf.md v0.23).
  /// With 3 or more stages the end is better: a refill at the top delays the iteration's first ldmatrix (GEMM
  /// −3–4%, v0.14).
  static bool top_refill(const Pipe& p) { return p.prefetch == 1; }
  /// The cp.async refill of ring p: every thread's copies for the iteration p.prefetch ahead (none past the
  /// loop's end), then a commit — one group per iteration, empty past the end, so the ring's wait counts hold.
  std::string cp_refill(const Pipe& p) const {
    const Node& lb = k_[p.loop];
    return fmt::format("if (s{0} + {1} * {2} < {3}) tj_issue{0}(s{0} + {1} * {2}, tj_it{0} + {1}u); tj_cp_commit();", p.loop, p.prefetch,
                       v(lb.args[2], 0), v(lb.args[1], 0));
  }
  /// First lines of an iteration: issue (no prefetch) and wait for this stage's copies.
  void emit_pipe_wait(const Pipe& p) {
    const int L = p.loop;
    line(fmt::format("const unsigned tj_st{} = tj_it{} % {}u;", L, L, p.stages));
    if (cp_) {
      // Without a prefetch the copy refills the stage the previous iteration read: every thread must be done with it.
      if (p.prefetch == 0) line(fmt::format("__syncthreads(); tj_issue{0}(s{0}, tj_it{0}); tj_cp_commit();", L));
      line(fmt::format("tj_cp_wait<{}>(); __syncthreads();  // this stage's copies (every thread's) have landed", p.prefetch > 0 ? p.prefetch - 1 : 0));
      // The other stage, read by iteration i - 1: every thread passed the barrier above after reading it.
      if (top_refill(p)) line(cp_refill(p) + "  // in flight during this iteration's math");
      return;
    }
    if (p.prefetch == 0 && !ws_) line(fmt::format("if (tj_tid == 0) tj_issue{}(s{}, tj_it{});", L, L, L));
    line(fmt::format("tj_mbar_wait(tj_bar{} + 8u * tj_st{}, (tj_it{} / {}u) & 1u);", L, L, L, p.stages));
    if (o_.device_events)  // one record per consumer warp group
      line(fmt::format("if (tj_tid % 128 == 0) {}  // the stage has landed", event_call(ev_pipe_site_.at(L), 1, fmt::format("tj_it{}", L))));
  }
  /// wgmma.wait_group n: every group of this warp group but the n most recent has completed. With device events,
  /// the groups completed since the last wait end here (ids as at their commit).
  void wgmma_wait(std::size_t n, const std::string& comment = "") {
    line(fmt::format("asm volatile(\"wgmma.wait_group.sync.aligned {};\" ::: \"memory\");{}", n, comment));
    if (ev_wgmma_ >= 0)
      line(fmt::format("for (; tj_wgd + {}u < tj_wgi; ++tj_wgd) if (tj_tid % 128 == 0) {}", n,
                       event_call(ev_wgmma_, 1, "((unsigned)(tj_tid / 128) << 24) | tj_wgd")));
  }
  /// A call of the prelude's tj_event: site, kind (0 begin, 1 end), id (an unsigned expression).
  static std::string event_call(int site, int kind, const std::string& id) {
    return fmt::format("tj_event(tj_events, tj_evc, {}u, {}u, (unsigned)({}), tj_warp);", site, kind, id);
  }
  /// Last lines of an iteration: retire the previous iteration's wgmma, then refill its stage.
  void emit_pipe_tail(const Pipe& p) {
    const int L = p.loop;
    const Node& lb = k_[L];
    const std::string hi = v(lb.args[1], 0), step = v(lb.args[2], 0);
    if (cp_) {
      // The stage refilled is the one iteration i - 1 read: every thread passed this iteration's barrier after
      // reading it, so no barrier is needed here. One group per iteration, empty past the end.
      if (p.prefetch > 0 && !top_refill(p)) line(cp_refill(p));
      line(fmt::format("++tj_it{};", L));
      return;
    }
    retire_deferred();  // a stage is refilled below: every wgmma reading the ring has completed
    // With a prefetch the stage refilled next is the previous iteration's: its groups are retired by leaving this
    // iteration's in flight. Without one (a single stage) the next copy overwrites this very stage: wait for all.
    if (!p.async_dots.empty())
      wgmma_wait(p.prefetch > 0 ? p.async_dots.size() : std::size_t{0});
    if (ws_) {
      // Release a stage no wgmma reads any more: this iteration's when nothing is left in flight, else the previous one's.
      // In a loop nested in a persistent loop the previous stage is this run's own (the last stage of the previous
      // run is released after that run's loop).
      const int lag = release_lag(p);
      const std::string first = parent_[static_cast<std::size_t>(L)] >= 0 ? fmt::format("tj_it0{}", L) : "0";
      line(lag ? fmt::format("__syncwarp(); {};", release(fmt::format(" && tj_it{} > {}", L, first),
                                                            fmt::format("tj_empty{0} + 8u * ((tj_it{0} - 1u) % {1}u)", L, p.stages)))
               : fmt::format("__syncwarp(); {};", release("", fmt::format("tj_empty{0} + 8u * tj_st{0}", L))));
      line(fmt::format("++tj_it{};", L));
      return;
    }
    line(sync() + "  // every warp group is done with the stage refilled next");
    if (p.prefetch > 0)
      line(fmt::format("if (tj_tid == 0 && s{} + {} * {} < {}) tj_issue{}(s{} + {} * {}, tj_it{} + {}u);", L, p.prefetch, step, hi, L, L,
                       p.prefetch, step, L, p.prefetch));
    line(fmt::format("++tj_it{};", L));
  }

  /// Clusters (num_ctas > 1) need the producer warp group's empty barriers: a program's stage may be refilled only
  /// when every program of its cluster has released it.
  void decide_cluster() {
    if (o_.num_ctas <= 1) return;
    if (!ws_) {
      plan_diag_.push_back(fmt::format("num_ctas = {} not applied: clusters need warp specialisation (its stage barriers)", o_.num_ctas));
      return;
    }
    // Each consumer warp releases a stage in every program of the cluster and a multicast copy lands in every
    // program: the programs of a cluster must run every pipelined loop (and the loop over work items around it)
    // the same number of times, and a multicast block's coordinates must agree, else a producer waits for a release
    // (or a consumer for a copy) that never comes. Where that cannot be shown, no cluster.
    std::vector<signed char> memo(k_.nodes.size(), -1);
    auto varies = [&](int x) { return !cluster_uniform(x, memo); };
    for (const Pipe& p : pipes_) {
      for (int L : {parent_[static_cast<std::size_t>(p.loop)], p.loop})
        if (L >= 0 && (varies(k_[L].args[0]) || varies(k_[L].args[1]) || varies(k_[L].args[2]))) {
          plan_diag_.push_back(fmt::format("num_ctas = {} not applied: the trip count of loop %{} may differ between the programs of a "
                                           "cluster (its bounds depend on program_id(0) other than through program_id(0) / c, c a "
                                           "multiple of num_ctas)", o_.num_ctas, L));
          return;
        }
      for (int x : p.loads)
        if (k_[x].i == 1 && (varies(k_[x].args[0]) || varies(k_[x].args[1]) || varies(k_[x].args[2]))) {
          plan_diag_.push_back(fmt::format("num_ctas = {} not applied: the coordinates of multicast block %{} may differ between the "
                                           "programs of a cluster (they depend on program_id(0) other than through program_id(0) / c, "
                                           "c a multiple of num_ctas)", o_.num_ctas, x));
          return;
        }
    }
    cluster_ = o_.num_ctas;
    int mc = 0;
    // A descriptor whose every TMA block is multicast, with rows a multiple of 8 per program (the 128B swizzle's
    // 1024-byte period), is copied in C slices, one per program (its TMA box R/C rows): the cluster's TMA units share
    // the copy, as CUTLASS's multicast loads do. Otherwise the first program copies the whole block.
    mc_split_.assign(k_.params.size(), 1);
    for (const Pipe& p : pipes_)
      for (int x : p.loads) {
        const auto param = static_cast<std::size_t>(k_[block_desc(x).param].i);
        mc += k_[x].i == 1;
        if (k_[x].i != 1 || k_[x].type.shape[0] % (8 * cluster_) != 0) mc_split_[param] = 0;
      }
    for (const Resident& r : resident_) mc_split_[static_cast<std::size_t>(k_[block_desc(r.node).param].i)] = 0;
    for (const ItemBlock& b : items_) mc_split_[static_cast<std::size_t>(k_[block_desc(b.node).param].i)] = 0;
    // A TMA store moves its program's whole block: its box is never a slice.
    for (const StoreBuf& b : stores_) mc_split_[static_cast<std::size_t>(k_[block_desc(b.node).param].i)] = 0;
    for (std::size_t i = 0; i < k_.params.size(); ++i)
      if (tma_param_[i] && mc_split_[i]) tma_param_[i] /= cluster_;
    plan_diag_.push_back(fmt::format("clusters of {} programs along x: {} pipelined block(s) multicast (read from L2 once per cluster), "
                                     "each stage released in every program of the cluster", cluster_, mc));
  }

  /// Whether scalar `x` is provably the same in every program of a cluster of num_ctas programs along grid x:
  /// built from parameters, constants, descriptor fields, grid sizes, program ids along y and z, program_id(0) / c
  /// (c a positive multiple of num_ctas), loads from such addresses and induction variables of loops with such bounds.
  bool cluster_uniform(int x, std::vector<signed char>& memo) const {
    if (x < 0) return true;
    signed char& m = memo[static_cast<std::size_t>(x)];
    if (m >= 0) return m != 0;
    const Node& n = k_[x];
    bool u = true;
    if (n.op == Op::program_id) {
      u = n.axis != 0;
    } else if (n.op == Op::loop_carry || n.op == Op::loop_result) {
      u = false;  // (warp specialisation refuses these in bounds and coordinates anyway)
    } else if (n.op == Op::div && k_[n.args[0]].op == Op::program_id && k_[n.args[0]].axis == 0 && k_[n.args[1]].op == Op::constant &&
               k_[n.args[1]].type.rank == 0 && is_int(k_[n.args[1]].type.dtype) && k_[n.args[1]].i > 0 &&
               k_[n.args[1]].i % o_.num_ctas == 0) {
      u = true;
    } else {
      for (int a : n.args) u = u && cluster_uniform(a, memo);
    }
    m = u ? 1 : 0;
    return u;
  }

  /// Warp-specialised consumers release a stage one iteration late when a wgmma reading it is left in flight.
  static int release_lag(const Pipe& p) { return !p.async_dots.empty() && p.prefetch > 0 ? 1 : 0; }

  /// warp_specialize applies when every pipelined loop is outermost and its
  /// bounds and block coordinates come from scalars computed outside any loop
  /// (parameters, program ids, constants and arithmetic on them): the producer
  /// warp recomputes them on its own. Otherwise a diagnostic says why not.
  /// A pipelined loop may also sit directly in one top-level loop (a persistent
  /// loop over output tiles) whose bounds are such scalars and which copies
  /// nothing by TMA itself; the inner loop's bounds and coordinates may then
  /// also use the outer induction variable and scalar arithmetic on it in the
  /// outer body (not loads, not values the outer loop carries). The producer
  /// walks the same nest, and both sides keep the ring's counter across outer
  /// iterations. Blocks the outer loop loads itself (ItemBlock) are copied by
  /// the producer too, once per outer iteration, before or after the nested
  /// loop's copies as the program loads them.
  void decide_warp_specialization(const std::vector<int>& parent, const std::vector<int>& ends) {
    if (!o_.warp_specialize) {
      if (o_.pingpong) plan_diag_.push_back("pingpong ignored: it needs warp_specialize");
      return;
    }
    auto no = [&](const std::string& why) { plan_diag_.push_back("warp specialisation not applied: " + why); };
    if (pipes_.empty()) return no("no loop has a TMA pipeline");
    if (cp_) return no(fmt::format("target {} has no TMA (its pipelines are cp.async, copied by every thread)", t_.arch));
    if (o_.num_warps % 4 != 0) return no(fmt::format("num_warps = {} is not whole warp groups", o_.num_warps));
    if (threads_ + 4 * t_.warp_size > 1024)
      return no(fmt::format("num_warps = {} and the producer warp group make {} threads: a program has at most 1024", o_.num_warps,
                            threads_ + 4 * t_.warp_size));
    std::vector<char> need(k_.nodes.size(), 0), outer(k_.nodes.size(), 0);
    std::vector<int> todo;
    for (const Pipe& p : pipes_) {
      // A pipelined loop directly inside one top-level loop (a persistent loop over output tiles): the producer walks
      // both. Deeper nests, and an outer loop with TMA copies of its own, stay unspecialised.
      if (const int O = parent[static_cast<std::size_t>(p.loop)]; O >= 0) {
        if (const int O2 = parent[static_cast<std::size_t>(O)]; O2 >= 0)
          return no(fmt::format("loop %{} is nested in loop %{}, itself nested in loop %{}: the producer walks one enclosing loop "
                                "at most", p.loop, O, O2));
        if (const int po = pipe_of_loop_[static_cast<std::size_t>(O)]; po >= 0)
          return no(fmt::format("loop %{} is nested in loop %{}, which copies blocks by TMA outside it (desc_load %{})", p.loop, O,
                                pipes_[static_cast<std::size_t>(po)].loads.front()));
        outer[static_cast<std::size_t>(O)] = 1;
        for (int a : k_[O].args) todo.push_back(a);
      }
      for (int a : k_[p.loop].args) todo.push_back(a);
      for (int x : p.loads) {
        todo.push_back(k_[x].args[0]);
        for (int c : coord_chain(x, p.loop)) todo.push_back(c);
        todo.push_back(k_[x].args[1]);
        todo.push_back(k_[x].args[2]);
      }
    }
    // Blocks copied once per iteration of the loop enclosing a pipelined loop: the producer copies them too, as it
    // walks that loop, so their coordinates are the producer's business as well.
    for (const ItemBlock& b : items_) {
      if (!outer[static_cast<std::size_t>(b.loop)] || parent[static_cast<std::size_t>(b.loop)] >= 0)
        return no(fmt::format("desc_load %{} is copied once per iteration of loop %{}, which is not a top-level loop directly "
                              "enclosing a pipelined loop", b.node, b.loop));
      for (int j = 0; j < 3; ++j) todo.push_back(k_[b.node].args[static_cast<std::size_t>(j)]);
    }
    while (!todo.empty()) {
      const int x = todo.back();
      todo.pop_back();
      if (x < 0 || need[static_cast<std::size_t>(x)]) continue;
      need[static_cast<std::size_t>(x)] = 1;
      for (int a : k_[x].args) todo.push_back(a);
      if (k_[x].op == Op::loop_carry) todo.push_back(carry_next(k_, x));  // the producer repeats the recurrence
    }
    // In an enclosing loop's body, outside the pipelined loop: scalar arithmetic the producer repeats per outer
    // iteration. Not a load (the producer runs ahead of the consumers' stores), not a value carried by the outer loop
    // or produced by another loop (the producer would have to run that loop too). Checked last node first, so the
    // diagnostic names the value nearest the coordinate.
    for (std::size_t id = need.size(); id-- > 0;) {
      const int L = parent[id];
      if (!need[id] || L < 0 || !outer[static_cast<std::size_t>(L)] || pipe_of_loop_[id] >= 0) continue;  // (the pipelined loop's own induction variable)
      const Op op = k_.nodes[id].op;
      const bool carried_scalar = op == Op::loop_carry && !tile(static_cast<int>(id)) && k_.nodes[id].args[1] == L;
      if (!carried_scalar && !producer_scalar(k_, static_cast<int>(id)))
        return no(fmt::format("%{} ({}) in loop %{} feeds a loop bound or a block coordinate of a nested pipelined loop and is "
                              "not scalar arithmetic on loop %{}'s induction variable, the scalars it carries, loads of "
                              "parameters the kernel never stores to, and values computed outside loops",
                              id, ir::name(op), L, L));
    }
    for (std::size_t id = 0; id < need.size(); ++id) {
      if (!need[id]) continue;
      const int L = parent[id];
      const bool in_pipe = L >= 0 && pipe_of_loop_[static_cast<std::size_t>(L)] >= 0;
      if (pipe_of_loop_[id] >= 0 || outer[id]) continue;  // a loop's induction variable: the producer walks that loop too
      const Op op = k_.nodes[id].op;
      if (L >= 0 && outer[static_cast<std::size_t>(L)]) {
        if (op == Op::loop_carry) outer_carries_.push_back(static_cast<int>(id));  // declared before the producer's loop
        else outer_deps_.push_back(static_cast<int>(id));
        continue;
      }
      if (tile(static_cast<int>(id)) || op == Op::loop_carry || op == Op::loop_result || op == Op::loop_begin || (L >= 0 && !in_pipe) ||
          (op == Op::load && !producer_scalar(k_, static_cast<int>(id))))
        return no(fmt::format("%{} ({}) feeds a loop bound or a block coordinate and is not a scalar computed outside loops (a load "
                              "only from a parameter the kernel never stores to)", id, ir::name(op)));
      if (!in_pipe) producer_deps_.push_back(static_cast<int>(id));
    }
    ws_ = true;
    plan_diag_.push_back(fmt::format("warp specialised: {} consumer warp(s) with {} registers each and a producer warp group (24 "
                                     "registers) whose first lane issues the TMA copies of {} loop(s)",
                                     o_.num_warps, std::max(consumer_regs(), launch_regs()), pipes_.size()));
    for (const Pipe& p : pipes_)
      if (const int O = parent[static_cast<std::size_t>(p.loop)]; O >= 0)
        plan_diag_.push_back(fmt::format("warp specialised: the producer walks loop %{} inside loop %{}; the ring's stages and phases "
                                         "continue across loop %{}'s iterations (its copies run ahead into the next one)", p.loop, O, O));
    if (!o_.pingpong) return;
    if (o_.num_warps != 8) {
      plan_diag_.push_back(fmt::format("pingpong not applied: it needs two consumer warp groups (num_warps = 8), not {}", o_.num_warps));
      return;
    }
    if (pipes_.size() != 1) {
      plan_diag_.push_back("pingpong not applied: it needs exactly one pipelined loop");
      return;
    }
    const Pipe& p = pipes_.front();
    // Nested in a persistent loop (the producer walks at most one enclosing loop): the turns continue across the
    // outer loop's iterations — group 1 hands group 0 its first turn once, before the outer loop, and group 0 takes
    // the last hand-off once, after it. Handing over per run of the inner loop instead would let group 1 arrive
    // twice in a row (its last turn's hand-off, then the next run's first) before group 0 absorbs one, which
    // completes the named barrier with group 1's threads alone.
    const int encloser = parent[static_cast<std::size_t>(p.loop)];
    pp_hand_ = encloser >= 0 ? encloser : p.loop;
    for (int d = p.loop + 1; d < ends[static_cast<std::size_t>(p.loop)]; ++d)
      if (k_[d].op == Op::dot && parent[static_cast<std::size_t>(d)] == p.loop && plan_.dot_wgmma[static_cast<std::size_t>(d)]) {
        if (pp_first_ < 0) pp_first_ = d;
        pp_last_ = d;
      }
    if (pp_first_ < 0) {
      plan_diag_.push_back(fmt::format("pingpong not applied: loop %{} issues no wgmma", p.loop));
      return;
    }
    pingpong_ = true;
    plan_diag_.push_back(fmt::format("pingpong: the warp groups take turns over loop %{}'s wgmma from dot %{} to dot %{}{}", p.loop,
                                     pp_first_, pp_last_,
                                     encloser >= 0 ? fmt::format(", continuing across loop %{}'s iterations", encloser) : ""));
  }
  /// The producer warp's code, before everything else: lane 0 walks every pipelined loop's iteration space,
  /// waits for a stage to be released (from the second round on) and issues its copies; then the warp exits.
  /// The consumers never use the CTA-wide barrier after this point (sync() is a named barrier of their threads).
  void emit_producer() {
    std::string saved = std::move(body_);
    body_.clear();
    line(fmt::format("if (tj_warp >= {}) {{  // the producer warp group: its first lane issues every TMA copy of the pipelined loops", o_.num_warps));
    line("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 24;\");  // registers go to the consumers");
    for (int d : producer_deps_) emit(d);
    line(fmt::format("if (tj_tid == {}) {{", threads_));
    auto walk = [&](const Pipe& p) {
      const int L = p.loop;
      emit_pipe_issue(p);
      if (parent_[static_cast<std::size_t>(L)] < 0) line(fmt::format("unsigned tj_it{} = 0;", L));
      step_guard(L);
      loop_header(L, fmt::format(", ++tj_it{}", L));
      line(fmt::format("  if (tj_it{0} >= {1}u) tj_mbar_wait(tj_empty{0} + 8u * (tj_it{0} % {1}u), (tj_it{0} / {1}u - 1u) & 1u);", L, p.stages));
      line(fmt::format("  tj_issue{0}(s{0}, tj_it{0});", L));
      line("}");
    };
    for (std::size_t i = 0; i < pipes_.size();) {
      const int O = parent_[static_cast<std::size_t>(pipes_[i].loop)];
      if (O < 0) {
        walk(pipes_[i++]);
        continue;
      }
      // A persistent loop: the same outer iterations as the consumers, the pipelined loops inside it in program order,
      // each ring's counter kept across outer iterations (never reset), so the copies of the next outer iteration are
      // issued while the consumers finish this one (its epilogue).
      std::size_t j = i;
      while (j < pipes_.size() && parent_[static_cast<std::size_t>(pipes_[j].loop)] == O) ++j;
      for (std::size_t q = i; q < j; ++q) line(fmt::format("unsigned tj_it{} = 0;  // across all of loop %{}", pipes_[q].loop, O));
      if (has_items(O)) line(fmt::format("unsigned tj_oit{} = 0;", O));
      for (int c : outer_carries_)  // scalars the loop carries (a prefetched work item): the producer's own copy
        if (k_[c].args[1] == O) line(fmt::format("{} s{} = {};  // carried by loop %{}", reg_type(k_[c].type), c, v(k_[c].args[0], 0), O));
      step_guard(O);
      loop_header(O, "", fmt::format("  // loop %{}, as the consumers walk it", O));
      for (int d : outer_deps_)
        if (parent_[static_cast<std::size_t>(d)] == O) emit(d);
      // The loop's own blocks (one buffer each) and its pipelined loops, in program order: a block read before a
      // nested loop is copied before its first copies, one read after it (attention's last V block) after them.
      std::size_t next_item = 0;
      auto items_before = [&](int node) {
        for (; next_item < items_.size() && items_[next_item].node < node; ++next_item)
          if (items_[next_item].loop == O)
            line(fmt::format("{}  // block %{}", item_issue(items_[next_item]), items_[next_item].node));
      };
      for (; i < j; ++i) {
        items_before(pipes_[i].loop);
        walk(pipes_[i]);
      }
      items_before(static_cast<int>(k_.nodes.size()));
      for (int c : outer_carries_)  // every carry's next value first: the yields of one iteration happen together
        if (k_[c].args[1] == O) line(fmt::format("{} const y{} = {};", reg_type(k_[c].type), c, v(carry_next(k_, c), 0)));
      for (int c : outer_carries_)
        if (k_[c].args[1] == O) line(fmt::format("s{0} = y{0};", c));
      if (has_items(O)) line(fmt::format("++tj_oit{};", O));
      line("}");
    }
    line("}");
    line("return;");
    line("}");
    if (consumer_regs() > launch_regs())  // (else the consumers keep what the launch gave them)
      line(fmt::format("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 {};\");  // the consumer warp groups", consumer_regs()));
    producer_ = std::move(body_);
    body_ = std::move(saved);
  }
  /// setmaxnreg moves registers only within the program's own allocation: the
  /// kernel is declared __maxnreg__(launch_regs()) (64K / threads, a multiple
  /// of 8, at most 255), which makes ptxas allocate exactly that at launch. The
  /// consumers take what the producer group's 24 leave, a multiple of 8, at
  /// most 240. An inc past the pool would block forever.
  int launch_regs() const { return std::min(255, 65536 / (threads_ + 4 * t_.warp_size) / 8 * 8); }
  int consumer_regs() const {
    const int pool = launch_regs() * (threads_ + 4 * t_.warp_size) - 4 * t_.warp_size * 24;
    return std::min(240, pool / threads_ / 8 * 8);
  }
  /// A barrier of the consumer threads: the CTA barrier, or named barrier 1 when a producer warp runs apart.
  std::string sync() const {
    if (in_turn_) turn_conflict_ = true;  // every consumer thread would wait while the other group waits for its turn
    return ws_ ? fmt::format("asm volatile(\"bar.sync 1, {};\" ::: \"memory\");", threads_) : "__syncthreads();";
  }

 public:
  /// A barrier of all consumer threads was emitted inside a ping-pong turn: the
  /// program would deadlock. generate() then makes the kernel again without pingpong.
  bool turn_conflict() const { return turn_conflict_; }
  std::pair<int, int> turn_span() const { return {pp_first_, pp_last_}; }

 private:

  // ---- types ----------------------------------------------------------------
  static std::string storage_type(DType t) {
    switch (t) {
      case DType::f32: return "float";
      case DType::f64: return "double";
      case DType::f16: return "tj_f16";
      case DType::bf16: return "tj_bf16";
      case DType::f8e4nv: case DType::f8e5: return "unsigned char";
      case DType::i1: return "bool";
      case DType::i8: return "signed char";
      case DType::u8: return "unsigned char";
      case DType::i16: return "short";
      case DType::u16: return "unsigned short";
      case DType::i32: return "int";
      case DType::u32: return "unsigned";
      case DType::i64: return "long long";
      case DType::u64: return "unsigned long long";
      default: throw Unsupported(fmt::format("codegen: dtype {} is not supported yet", name(t)));
    }
  }
  /// Type of a value in registers: half precisions compute in f32.
  static std::string reg_type(const ir::Type& t) {
    if (t.is_ptr) return storage_type(t.dtype) + "*";
    if (t.dtype == DType::f16 || t.dtype == DType::bf16 || t.dtype == DType::f8e4nv || t.dtype == DType::f8e5) return "float";
    return storage_type(t.dtype);
  }
  static std::string param_type(DType t) { return storage_type(t); }
  /// The element type and bytes of a value of type t in a shared-memory round trip (convert, emit_reshape): 16-bit
  /// floats as themselves (the caller rounds the f32 register and widens it back), f8 as its f32 register (the
  /// register holds the decoded value; a byte slot would truncate it numerically), the rest as stored.
  static std::pair<std::string, int> scratch_type(const ir::Type& t) {
    if (t.is_ptr) return {storage_type(t.dtype) + "*", 8};
    if (t.dtype == DType::f8e4nv || t.dtype == DType::f8e5) return {"float", 4};
    return {storage_type(t.dtype), size_bytes(t.dtype)};
  }

  // ---- layout helpers ---------------------------------------------------------
  static std::string base_coord(const ir::Distributed& d_, int dim) {
    // Runs of radix-2 lane/warp digits with images c, 2c, 4c ... become one masked term.
    std::vector<std::string> terms;
    auto add_terms = [&](const std::vector<ir::InputDigit>& digits, const char* var) {
      std::size_t j = 0;
      while (j < digits.size()) {
        int img = digits[j].image[dim];
        if (img == 0) { ++j; continue; }
        if (digits[j].radix != 2 || !std::has_single_bit(static_cast<unsigned>(digits[j].stride))) {
          // A digit of another radix, or one above it (12 warps = 2·2·3 in either order): no bit field of the index
          // (additive: distributed_from refuses other mixes).
          terms.push_back(fmt::format("(({} / {}) % {}) * {}", var, digits[j].stride, digits[j].radix, img));
          ++j;
          continue;
        }
        std::size_t e = j + 1;
        if (d_.additive)
          while (e < digits.size() && digits[e].radix == 2 && digits[e].image[dim] == img * (1 << (e - j)) &&
                 digits[e].stride == digits[j].stride * (1 << (e - j)))
            ++e;
        int bits = static_cast<int>(e - j);
        int shift = std::countr_zero(static_cast<unsigned>(digits[j].stride));
        std::string t = fmt::format("(({} >> {}) & {})", var, shift, (1 << bits) - 1);
        if (img != 1) t = d_.additive ? fmt::format("{} * {}", t, img) : fmt::format("({} ? {} : 0)", t, img);
        terms.push_back(t);
        j = e;
      }
    };
    add_terms(d_.lane, "tj_lane");
    add_terms(d_.warp, "tj_warp");
    if (terms.empty()) return "0";
    std::string out = terms[0];
    for (std::size_t i = 1; i < terms.size(); ++i) out += (d_.additive ? " + " : " ^ ") + terms[i];
    return out;
  }

  const ir::TileLayout& TL(int id) const { return plan_.values[static_cast<std::size_t>(id)]; }
  const ir::Distributed& D(const ir::TileLayout& t) const { return plan_.layouts[static_cast<std::size_t>(t.layout)]; }
  int regs(const ir::TileLayout& t) const { return t.scalar ? 1 : D(t).registers; }
  /// Values of more than kMaxRegistersPerThread elements per thread are refused: code generation unrolls every
  /// register, so the source grows with them and NVRTC's time superlinearly (measured on the dev box: an
  /// elementwise [256, 256] f32 tile at 1 warp, 2048 per thread, 1.8 MB of source, 126 s; [210, 210] at 4 warps,
  /// 11,025 per thread because only its factors of 2 spread over threads, 5.3 MB, over 300 s).
  static constexpr int kMaxRegistersPerThread = 4096;
  /// Shared memory a scan's cross-warp step uses at a time (its block totals go in chunks of this size).
  static constexpr int kScanScratchBytes = 16384;
  void check_registers_per_thread() const {
    auto elements_of = [&](int id) {
      long e = 1;
      const ir::Type& t = k_.nodes[static_cast<std::size_t>(id)].type;
      for (int d = 0; d < t.rank; ++d) e *= t.shape[static_cast<std::size_t>(d)];
      return e;
    };
    int worst = -1;  // the value with the most registers; among equals the largest tile (not a broadcast operand)
    for (std::size_t id = 0; id < k_.nodes.size(); ++id) {
      const ir::Type& t = k_.nodes[id].type;
      if (t.rank == 0 || plan_.in_smem[id]) continue;
      const int r = R(static_cast<int>(id));
      if (r <= kMaxRegistersPerThread) continue;
      if (worst < 0 || r > R(worst) || (r == R(worst) && elements_of(static_cast<int>(id)) > elements_of(worst)))
        worst = static_cast<int>(id);
    }
    if (worst >= 0) {
      const auto id = static_cast<std::size_t>(worst);
      const ir::Type& t = k_.nodes[id].type;
      const int r = R(worst);
      long elements = 1;
      for (int d = 0; d < t.rank; ++d) elements *= t.shape[static_cast<std::size_t>(d)];
      throw Unsupported(fmt::format(
          "node %{} ({}) would hold {} elements in every thread ({} distinct of {} threads hold its {} elements), more than the "
          "{} code generation unrolls per value: its source would be megabytes and NVRTC would run for minutes. Use tile dims with more "
          "factors of 2 (224 = 32 x 7 spreads over every thread; 210 = 2 x 105 over two), more warps, or a smaller tile "
          "(layout: {})", id, ir::to_string(t), r, std::max(1L, elements / r), threads_, elements, kMaxRegistersPerThread,
          plan_.diagnostics.empty() ? "" : layout_description(TL(static_cast<int>(id)).layout)));
    }
  }
  /// The plan's description of layout L<n> ("blocked [210,210] ..."), for messages.
  std::string layout_description(int n) const {
    const std::string tag = fmt::format("layout L{}: ", n);
    for (const auto& d : plan_.diagnostics)
      if (d.rfind(tag, 0) == 0) return d.substr(tag.size());
    return fmt::format("L{}", n);
  }
  int R(int id) const { return regs(TL(id)); }
  /// Bytes of one register of element type t in a shared-memory scratch: 8 for i64, u64 and f64 (u64's was counted
  /// as 4: a review's u64 reduction across warps wrote past the scratch and faulted on the H200), 4 for the rest
  /// (f16 and bf16 are f32 registers, narrow integers int).
  static int register_bytes(DType t) { return t == DType::i64 || t == DType::u64 || t == DType::f64 ? 8 : 4; }

  /// Input digits a value in layout `t` does not see (image zero on all its dims): copies.
  static bool digit_hidden(const ir::InputDigit& g, const ir::TileLayout& t) {
    for (int d : t.dim_of)
      if (d >= 0 && g.image[static_cast<std::size_t>(d)] != 0) return false;
    return true;
  }
  int canonical(int r, const ir::TileLayout& t) const {
    for (const auto& g : D(t).reg)
      if (digit_hidden(g, t)) r -= ((r / g.stride) % g.radix) * g.stride;
    return r;
  }
  int canonical(int r, int id) const { return canonical(r, TL(id)); }
  std::string owner_predicate(const ir::TileLayout& t) const {
    if (t.scalar) return "tj_tid == 0";
    int lm = 0, wm = 0;
    std::vector<std::string> c;
    for (const auto& g : D(t).lane) if (digit_hidden(g, t)) lm |= g.stride * (g.radix - 1);
    for (const auto& g : D(t).warp)
      if (digit_hidden(g, t)) {
        if (g.radix == 2 && std::has_single_bit(static_cast<unsigned>(g.stride))) wm |= g.stride;
        else c.push_back(fmt::format("(tj_warp / {}) % {} == 0", g.stride, g.radix));  // 12 warps: mixed-radix digits
      }
    if (lm) c.push_back(fmt::format("(tj_lane & {}) == 0", lm));
    if (wm) c.push_back(fmt::format("(tj_warp & {}) == 0", wm));
    if (c.empty()) return "";
    std::string out = c[0];
    for (std::size_t i = 1; i < c.size(); ++i) out += " && " + c[i];
    return out;
  }
  std::string coord(const ir::TileLayout& t, int r, int tile_dim) const {
    const int pd = t.dim_of[static_cast<std::size_t>(tile_dim)];
    if (pd < 0) return "0";
    const int rc = D(t).register_coord(r, pd);
    if (rc == 0) return fmt::format("tj_c{}_{}", t.layout, pd);
    return D(t).additive ? fmt::format("(tj_c{}_{} + {})", t.layout, pd, rc) : fmt::format("(tj_c{}_{} ^ {})", t.layout, pd, rc);
  }
  std::string coord(int id, int r, int tile_dim) const { return coord(TL(id), r, tile_dim); }

  // ---- values -------------------------------------------------------------------
  bool tile(int id) const { return k_[id].type.rank > 0; }
  std::string v(int id, int r) const {
    if (!alias_.empty() && alias_[static_cast<std::size_t>(id)] >= 0) id = alias_[static_cast<std::size_t>(id)];
    if (!tile(id)) return fmt::format("s{}", id);
    if (packed(id)) return packed_half(k_[id].type.dtype, fmt::format("v{}", id), r);
    return fmt::format("v{}[{}]", id, r);
  }
  /// Element r of a 16-bit tile of type dt held packed in array `words`: one half of word r / 2 (element 2i low).
  static std::string packed_half(DType dt, const std::string& words, int r) {
    return fmt::format("tj_{}x2_{}({}[{}])", dt == DType::bf16 ? "bf16" : "f16", r % 2 ? "hi" : "lo", words, r / 2);
  }
  bool packed(int id) const { return !packed_.empty() && packed_[static_cast<std::size_t>(id)]; }
  /// A tile that is a broadcast constant 0 (or -0).
  bool is_zero_tile(int id) const {
    const Node& n = k_[id];
    return tile(id) && n.op == Op::broadcast && k_[n.args[0]].op == Op::constant && k_[n.args[0]].f == 0 && k_[n.args[0]].i == 0;
  }

  /// 16-bit float tiles carried by a loop, and loop results, whose every reader is a wgmma taking them as its
  /// register A operand in their own layout (FlashAttention-3's P_{j-1}, multiplied by V in the next iteration) live packed:
  /// two elements per 32-bit register, `unsigned vN[R / 2]`, register 2i in the low half of word i. That is half
  /// the registers of the f32 form across the loop's back edge, and a register-A wgmma reads the words as they
  /// are. A value with any other reader stays in f32 registers (each read would pay an unpack).
  void plan_packed() {
    const std::size_t N = k_.nodes.size();
    packed_.assign(N, 0);
    std::vector<std::vector<std::pair<int, int>>> uses(N);  // (user, operand slot; slot 3: a TMA store's value)
    for (std::size_t id = 0; id < N; ++id)
      for (int j = 0; j < 4; ++j)
        if (const int a = k_.nodes[id].args[static_cast<std::size_t>(j)]; a >= 0) uses[static_cast<std::size_t>(a)].emplace_back(static_cast<int>(id), j);
    for (std::size_t id = 0; id < N; ++id) {
      const Node& n = k_.nodes[id];
      const int x = static_cast<int>(id);
      if ((n.op != Op::loop_carry && n.op != Op::loop_result) || !tile(x) || n.type.is_ptr || n.type.rank != 2 ||
          (n.type.dtype != DType::bf16 && n.type.dtype != DType::f16) || R(x) % 2)
        continue;
      bool ok = !uses[id].empty();  // (an async dot accumulating into a carry reads it as its slot 2: not packed)
      for (const auto& [u, j] : uses[id]) {
        const Op o = k_[u].op;
        if (n.op == Op::loop_carry && o == Op::loop_yield && j == 0) continue;  // the write of the next value
        if (o == Op::loop_result && j == 0) continue;                           // packed or unpacked on its own
        // A register-A wgmma reading B in place (emit_wgmma_smem): mma.sync and MFMA would unpack every element.
        if (o == Op::dot && j == 0 && !plan_.dot_mfma[static_cast<std::size_t>(u)] && plan_.in_smem[static_cast<std::size_t>(k_[u].args[1])] &&
            plan_.operand_layout(k_, u, 0) == TL(x))
          continue;
        ok = false;
      }
      packed_[id] = ok ? 1 : 0;
    }
  }
  /// Word i (registers 2i, 2i + 1) of operand j of node `user`, in the layout `user` needs it in, as a packed pair
  /// of 16-bit floats of type t: the word itself when the operand is packed; one cvt.rn of the f32 source of a cast
  /// to t in the same layout; else the two f32 registers packed (rounded to nearest even).
  std::string word(int user, int j, int i, DType t) const {
    const int a = k_[user].args[static_cast<std::size_t>(j)];
    const ir::TileLayout want = plan_.operand_layout(k_, user, j);
    const char* pk = t == DType::bf16 ? "tj_pack_bf16x2" : "tj_pack_f16x2";
    if (std::string w = packed_word(user, j, i, t); !w.empty()) return w;
    if (const int src = want == TL(a) && k_[a].type.dtype == t ? f32_cast_source(a) : -1; src >= 0)
      return fmt::format("{}({}, {})", pk, v(src, 2 * i), v(src, 2 * i + 1));
    return fmt::format("{}({}, {})", pk, opnd(user, j, 2 * i), opnd(user, j, 2 * i + 1));
  }
  /// Word i of operand j of node `user` (16-bit type t) when it is held packed in the layout `user` needs it in —
  /// the value itself (plan_packed) or its conversion (convert) — else "".
  std::string packed_word(int user, int j, int i, DType t) const {
    const int a = k_[user].args[static_cast<std::size_t>(j)];
    if (!tile(a) || k_[a].type.dtype != t) return "";
    const ir::TileLayout want = plan_.operand_layout(k_, user, j);
    if (want == TL(a)) return packed(a) ? fmt::format("v{}[{}]", a, i) : "";
    const auto it = conversions_.find(conversion_key(a, want));
    return it != conversions_.end() && packed_conversions_.count(it->second) ? fmt::format("{}[{}]", it->second, i) : "";
  }
  /// When tile `a` is a cast of an f32 tile held in the same layout (P = cast<bf16>(p)): that f32 tile, whose
  /// registers pack straight into 16-bit pairs by one cvt.rn each; else -1.
  int f32_cast_source(int a) const {
    if (k_[a].op != Op::cast) return -1;
    const int src = k_[a].args[0];
    return tile(src) && !k_[src].type.is_ptr && k_[src].type.dtype == DType::f32 && TL(src) == TL(a) ? src : -1;
  }

  /// Operand `j` of node `id` at register r of the layout the node needs it in:
  /// the value itself, or its conversion (emitted by convert_operands).
  std::string opnd(int id, int j, int r) const {
    const int a = k_[id].args[static_cast<std::size_t>(j)];
    if (!tile(a)) return v(a, 0);
    const ir::TileLayout want = plan_.operand_layout(k_, id, j);
    if (want == TL(a)) return v(a, r);
    const std::string& name = conversions_.at(conversion_key(a, want));
    if (packed_conversions_.count(name)) return packed_half(k_[a].type.dtype, name, r);
    return fmt::format("{}[{}]", name, r);
  }
  static std::string conversion_key(int a, const ir::TileLayout& t) {
    return fmt::format("{}:{}:{}:{}", a, t.layout, t.dim_of[0], t.dim_of[1]);
  }
  /// Emit a shared-memory round trip for every operand of `id` whose layout
  /// differs from the one `id` needs: owners write each element at its
  /// logical (row-major, padded) position, every thread reads the elements
  /// its registers hold in the target layout.
  void convert_operands(int id) {
    for (int j = 0; j < 3; ++j) {
      const int a = k_[id].args[static_cast<std::size_t>(j)];
      if (a < 0 || !tile(a) || plan_.in_smem[static_cast<std::size_t>(a)]) continue;  // (a block: read in place)
      const ir::TileLayout want = plan_.operand_layout(k_, id, j);
      if (want == TL(a)) continue;
      convert(a, want, id, -1);
    }
  }

  /// Value `a` in layout `want` for node `id` (the first of its users when
  /// hoisted before loop `hoisted`, else -1): emitted once per scope. The
  /// converted registers `x<a>_<n>` are reused by later users that can see
  /// their declaration: one made inside a loop body is forgotten at the end of
  /// that loop (conv_scopes_). n counts every conversion made before, so
  /// names are unique in the kernel.
  void convert(int a, const ir::TileLayout& want, int id, int hoisted) {
    const std::string key = conversion_key(a, want);
    if (conversions_.count(key)) return;
    const std::string name = fmt::format("x{}_{}", a, conversions_made_++);
    conversions_[key] = name;
    if (!conv_scopes_.empty()) conv_scopes_.back().push_back(key);
    const std::string where = hoisted >= 0 ? fmt::format(" before loop %{} (%{} is loop-invariant)", hoisted, a) : "";
    const ir::Type& t = k_[a].type;
    if (const auto perm = thread_local_permutation(TL(a), want, t.rank)) {
      // Every thread already holds the elements it needs (e.g. the row statistics of two wgmma accumulators
      // of different N): a register copy, no shared memory.
      line(fmt::format("// %{}: L{} to L{} is a permutation of each thread's registers", a, TL(a).layout, want.layout));
      line(fmt::format("{} {}[{}];", reg_type(t), name, regs(want)));
      for (int r = 0; r < regs(want); ++r) line(fmt::format("{}[{}] = {};", name, r, v(a, (*perm)[static_cast<std::size_t>(r)])));
      plan_diag_.push_back(fmt::format("converted %{} from L{} to L{} for %{} ({}){} in registers (same lanes and warps)", a,
                                       TL(a).layout, want.layout, id, ir::name(k_[id].op), where));
      return;
    }
    const bool half = !t.is_ptr && (t.dtype == DType::f16 || t.dtype == DType::bf16);  // (a tile of pointers moves pointers)
    const auto [st, esize] = scratch_type(t);
    const int cols = t.rank == 2 ? t.shape[1] : t.shape[0];
    const int rows = t.rank == 2 ? t.shape[0] : 1;
    // One bank of padding per row; 16-bit rows of whole 16-byte chunks take 16 bytes (ldmatrix reads 16-byte rows,
    // and an odd number of chunks per row spreads a warp's 8 row addresses over every bank; word pairs stored from
    // mma-like layouts, 4 words per row and 8 rows, fall in 32 banks too).
    const int stride = t.rank != 2 ? cols : half && cols % 16 == 0 ? cols + 8 : cols + std::max(1, 4 / esize);
    smem_bytes_ = std::max(smem_bytes_, rows * stride * esize);
    if (rows * stride * esize > smem_largest_.second)
      smem_largest_ = {fmt::format("the conversion of %{} {} for %{} ({}), {} bytes", a, ir::to_string(t), id, ir::name(k_[id].op),
                                   rows * stride * esize), rows * stride * esize};
    auto index = [&](const ir::TileLayout& tl, int r) {
      return t.rank == 2 ? fmt::format("{} * {} + {}", coord(tl, r, 0), stride, coord(tl, r, 1)) : coord(tl, r, 0);
    };
    const std::string buf = fmt::format("(({}*)tj_smem)", st);
    line(fmt::format("// convert %{} from L{} to L{} through shared memory", a, TL(a).layout, want.layout));
    const std::string own = owner_predicate(TL(a));
    // 16-bit elements in register pairs at adjacent columns move as one 32-bit word (paired_columns).
    const bool pairs_ok = half && (t.rank == 1 || stride % 2 == 0);
    const char* x2 = t.dtype == DType::f16 ? "f16" : "bf16";
    auto word_at = [&](const ir::TileLayout& tl, int r) { return fmt::format("((unsigned*)tj_smem)[({}) >> 1]", index(tl, r)); };
    for (int r = 0; r < R(a); ++r) {
      if (canonical(r, a) != r) continue;
      std::string st_line;
      if (pairs_ok && paired_columns(TL(a), r, t.rank) && canonical(r + 1, a) == r + 1) {
        // A bf16 tile's f32 registers hold bf16 values exactly: their high halves are the pair (bit operations that
        // ptxas folds into the loads or math before; f16 needs the conversion).
        st_line = t.dtype == DType::bf16
                      ? fmt::format("{} = (tj_as_u32({}) & 0xffff0000u) | (tj_as_u32({}) >> 16);", word_at(TL(a), r), v(a, r + 1), v(a, r))
                      : fmt::format("{} = tj_pack_f16x2({}, {});", word_at(TL(a), r), v(a, r), v(a, r + 1));
        ++r;
      } else {
        std::string val = half ? fmt::format("{}({})", t.dtype == DType::f16 ? "tj_f32_to_f16" : "tj_f32_to_bf16", v(a, r)) : v(a, r);
        st_line = fmt::format("{}[{}] = {};", buf, index(TL(a), r), val);
      }
      line(own.empty() ? st_line : fmt::format("if ({}) {}", own, st_line));
    }
    line(sync());
    bool all_pairs = pairs_ok && regs(want) % 2 == 0;
    for (int r = 0; all_pairs && r < regs(want); r += 2) all_pairs = paired_columns(want, r, t.rank);
    if (all_pairs) {
      // Held packed, two elements per word (as plan_packed's tiles): half the registers, and an mma.sync operand
      // in this layout reads the words as they are (packed_word).
      packed_conversions_.insert(name);
      line(fmt::format("unsigned {}[{}];  // packed: element 2i in the low half of word i", name, regs(want) / 2));
      const auto blocks = t.rank == 2 && ldsm_ok(stride * esize) ? ldsm_blocks(want) : std::vector<LdsmBlock>{};
      if (!blocks.empty()) {
        // The mma.sync A-fragment layout: one ldmatrix.x4 per 16 x 16 block. Lane l addresses row l % 8 + 8 (l / 8 % 2),
        // column 8 (l / 16) of the block, from its warp's corner (the thread's base less its lane's share).
        const int pr = want.dim_of[0], pc = want.dim_of[1];
        line(fmt::format("const unsigned tj_la{} = tj_smem_addr(tj_smem) + ((tj_c{}_{} - ((tj_lane >> 2) & 7) + (tj_lane & 7) + ((tj_lane >> 3) & 1) * 8) * {} "
                         "+ tj_c{}_{} - (tj_lane & 3) * 2 + (tj_lane >> 4) * 8) * 2;",
                         name, want.layout, pr, stride, want.layout, pc));
        for (const LdsmBlock& b : blocks)
          line(fmt::format("tj_ldsm_x4(tj_la{} + {}u, {}[{}], {}[{}], {}[{}], {}[{}]);", name, (b.row * stride + b.col) * 2, name, b.word[0], name,
                           b.word[1], name, b.word[2], name, b.word[3]));
      } else {
        for (int r = 0; r < regs(want); r += 2) line(fmt::format("{}[{}] = {};", name, r / 2, word_at(want, r)));
      }
      line(sync());
      plan_diag_.push_back(fmt::format("converted %{} from L{} to L{} for %{} ({}){} through {} bytes of shared memory, 32-bit words", a,
                                       TL(a).layout, want.layout, id, ir::name(k_[id].op), where, rows * stride * esize));
      return;
    }
    line(fmt::format("{} {}[{}];", reg_type(t), name, regs(want)));
    for (int r = 0; r < regs(want); ++r) {
      if (pairs_ok && paired_columns(want, r, t.rank)) {
        line(fmt::format("{{ const unsigned w = {}; {}[{}] = tj_{}x2_lo(w); {}[{}] = tj_{}x2_hi(w); }}", word_at(want, r), name, r, x2, name, r + 1, x2));
        ++r;
        continue;
      }
      std::string ld = fmt::format("{}[{}]", buf, index(want, r));
      if (half) ld = fmt::format("{}({})", t.dtype == DType::f16 ? "tj_f16_to_f32" : "tj_bf16_to_f32", ld);
      line(fmt::format("{}[{}] = {};", name, r, ld));
    }
    line(sync());
    plan_diag_.push_back(fmt::format("converted %{} from L{} to L{} for %{} ({}){} through {} bytes of shared memory", a,
                                     TL(a).layout, want.layout, id, ir::name(k_[id].op), where, rows * stride * esize));
  }

  /// reshape %id of %a (both rank 1 or 2, the same elements in row-major order). When the two layouts give every
  /// thread the same row-major indices — the planner's regrouped or flattened layouts (ir::reshaped_layout) do —
  /// each register is copied from the register that holds its element in the same thread; otherwise the owners
  /// write each element at its row-major index in shared memory and every thread reads the elements of its
  /// registers back (the fallback, reported in the diagnostics).
  void emit_reshape(int id) {
    const int a = k_[id].args[0];
    bool used = false;  // (a reshape that a chain folded away, tj::reshape's rule, is traced but read by nothing)
    for (const ir::Node& u : k_.nodes)
      for (int x : u.args) used = used || x == id;
    if (!used) {
      line(fmt::format("// reshape %{} of %{}: unused, not emitted", id, a));
      return;
    }
    const ir::Type& from = k_[a].type;
    const ir::Type& t = k_[id].type;
    auto shape_str = [](const ir::Type& ty) {
      return ty.rank == 2 ? fmt::format("[{},{}]", ty.shape[0], ty.shape[1]) : fmt::format("[{}]", ty.shape[0]);
    };
    if (const auto map = reshape_register_map(a, id)) {
      line(fmt::format("// reshape %{} {} -> {}: every thread keeps its elements (L{} read as L{})", a, shape_str(from), shape_str(t),
                       TL(a).layout, TL(id).layout));
      each_register(id, [&](int r) { return v(a, (*map)[static_cast<std::size_t>(r)]); });
      plan_diag_.push_back(fmt::format("reshape %{}: {} to {} in registers: every thread keeps its elements (L{} read as L{})", id,
                                       shape_str(from), shape_str(t), TL(a).layout, TL(id).layout));
      return;
    }
    const bool half = !t.is_ptr && (t.dtype == DType::f16 || t.dtype == DType::bf16);
    const auto [st, esize] = scratch_type(t);
    smem_bytes_ = std::max(smem_bytes_, t.numel() * esize);
    if (t.numel() * esize > smem_largest_.second)
      smem_largest_ = {fmt::format("reshape %{} {} to {}, {} bytes (its layouts give the threads different elements)", id,
                                   shape_str(from), shape_str(t), t.numel() * esize), t.numel() * esize};
    auto index = [&](const ir::TileLayout& tl, const ir::Type& ty, int r) {
      return ty.rank == 2 ? fmt::format("{} * {} + {}", coord(tl, r, 0), ty.shape[1], coord(tl, r, 1)) : coord(tl, r, 0);
    };
    const std::string buf = fmt::format("(({}*)tj_smem)", st);
    line(fmt::format("// reshape %{} {} -> {} through shared memory (L{} to L{}: the threads hold different elements)", a, shape_str(from),
                     shape_str(t), TL(a).layout, TL(id).layout));
    const std::string own = owner_predicate(TL(a));
    for (int r = 0; r < R(a); ++r) {
      if (canonical(r, a) != r) continue;
      const std::string val = half ? fmt::format("{}({})", t.dtype == DType::f16 ? "tj_f32_to_f16" : "tj_f32_to_bf16", v(a, r)) : v(a, r);
      const std::string st_line = fmt::format("{}[{}] = {};", buf, index(TL(a), from, r), val);
      line(own.empty() ? st_line : fmt::format("if ({}) {}", own, st_line));
    }
    line(sync());
    each_register(id, [&](int r) {
      const std::string ld = fmt::format("{}[{}]", buf, index(TL(id), t, r));
      return half ? fmt::format("{}({})", t.dtype == DType::f16 ? "tj_f16_to_f32" : "tj_bf16_to_f32", ld) : ld;
    });
    line(sync());
    plan_diag_.push_back(fmt::format("reshape %{}: {} to {} through {} bytes of shared memory (fallback: L{} and L{} give the threads "
                                     "different elements)", id, shape_str(from), shape_str(t), t.numel() * esize, TL(a).layout,
                                     TL(id).layout));
  }
  /// For reshape %id of %a: the register of %a each register of %id copies, when both layouts are additive and give
  /// every lane and warp digit the same row-major offset (so each thread's base index agrees) and each of %id's
  /// registers' offsets is one of %a's in the same thread. Else nullopt.
  std::optional<std::vector<int>> reshape_register_map(int a, int id) const {
    const ir::TileLayout &from = TL(a), &to = TL(id);
    if (from.scalar || to.scalar) return std::nullopt;
    const ir::Distributed &da = D(from), &db = D(to);
    if (!da.additive || !db.additive || da.lane.size() != db.lane.size() || da.warp.size() != db.warp.size()) return std::nullopt;
    // Row-major index of the coordinates `c(p)` along the parent dims the tile's dims map to.
    auto flat = [](const ir::Type& ty, const ir::TileLayout& tl, auto&& c) {
      long long f = 0;
      for (int d = 0; d < ty.rank; ++d) {
        f *= ty.shape[static_cast<std::size_t>(d)];
        if (const int p = tl.dim_of[static_cast<std::size_t>(d)]; p >= 0) f += c(p);
      }
      return f;
    };
    const ir::Type &ta = k_[a].type, &tb = k_[id].type;
    auto same = [&](const std::vector<ir::InputDigit>& x, const std::vector<ir::InputDigit>& y) {
      for (std::size_t i = 0; i < x.size(); ++i)
        if (x[i].radix != y[i].radix || x[i].stride != y[i].stride ||
            flat(ta, from, [&](int p) { return x[i].image[static_cast<std::size_t>(p)]; }) !=
                flat(tb, to, [&](int p) { return y[i].image[static_cast<std::size_t>(p)]; }))
          return false;
      return true;
    };
    if (!same(da.lane, db.lane) || !same(da.warp, db.warp)) return std::nullopt;
    std::map<long long, int> have;
    for (int r = 0; r < regs(from); ++r) have.emplace(flat(ta, from, [&](int p) { return da.register_coord(r, p); }), r);
    std::vector<int> map(static_cast<std::size_t>(regs(to)));
    for (int r = 0; r < regs(to); ++r) {
      const auto it = have.find(flat(tb, to, [&](int p) { return db.register_coord(r, p); }));
      if (it == have.end()) return std::nullopt;
      map[static_cast<std::size_t>(r)] = it->second;
    }
    return map;
  }

  /// A 16 x 16 block of a layout that ldmatrix.x4 fills: its corner (row, col) relative to the warp's, and the
  /// words (register pairs / 2) that receive matrices 0..3 (rows 0-7 / 8-15 of columns 0-7, then of columns 8-15).
  struct LdsmBlock {
    int row = 0, col = 0;
    std::array<int, 4> word{};
    int filled = 0;  // bit m: matrix m's word found
  };
  /// Whether this target reads converted 16-bit tiles with ldmatrix (sm_75+; the helpers come with the cp.async
  /// prelude) from rows of `pitch` bytes: whole 16-byte chunks, the buffer 16-byte aligned.
  bool ldsm_ok(int pitch) const {
    return cp_ && ring_bytes_ > 0 && ring_bytes_ % 16 == 0 && sm_number(t_.arch) >= 75 && pitch % 16 == 0;
  }
  /// The blocks of layout `t` when it is the mma.sync m16n8k16 A-fragment layout per warp (PTX ISA, "Matrix
  /// fragments for mma.m16n8k16"): lane l at row l / 4, columns 2 (l % 4) + {0, 1} of each 8 x 8 matrix, every
  /// register pair two adjacent columns, the pairs of each 16 x 16 block at rows {0, 8} x columns {0, 8}. Empty
  /// when `t` is anything else.
  std::vector<LdsmBlock> ldsm_blocks(const ir::TileLayout& t) const {
    if (t.scalar || t.dim_of[0] < 0 || t.dim_of[1] < 0 || regs(t) % 8) return {};
    const ir::Distributed& d = D(t);
    const auto pr = static_cast<std::size_t>(t.dim_of[0]), pc = static_cast<std::size_t>(t.dim_of[1]);
    if (!d.additive || d.lane.size() != 5) return {};
    static constexpr int kRow[5] = {0, 0, 1, 2, 4}, kCol[5] = {2, 4, 0, 0, 0};  // lane bits 0..4
    for (std::size_t i = 0; i < 5; ++i) {
      const ir::InputDigit& g = d.lane[i];
      if (g.radix != 2 || g.stride != 1 << i || g.image[pr] != kRow[i] || g.image[pc] != kCol[i]) return {};
    }
    std::map<std::pair<int, int>, LdsmBlock> blocks;
    for (int r = 0; r < regs(t); r += 2) {
      if (!paired_columns(t, r, 2)) return {};
      const int row = d.register_coord(r, static_cast<int>(pr)), col = d.register_coord(r, static_cast<int>(pc));
      if ((row % 16 != 0 && row % 16 != 8) || (col % 16 != 0 && col % 16 != 8)) return {};
      const std::pair<int, int> key{row - row % 16, col - col % 16};
      LdsmBlock& b = blocks[key];
      b.row = key.first, b.col = key.second;
      const int m = (col % 16 == 8 ? 2 : 0) + (row % 16 == 8 ? 1 : 0);
      if (b.filled & (1 << m)) return {};  // two words at one place: registers repeat
      b.filled |= 1 << m;
      b.word[static_cast<std::size_t>(m)] = r / 2;
    }
    std::vector<LdsmBlock> out;
    for (const auto& [key, b] : blocks) {
      if (b.filled != 15) return {};
      out.push_back(b);
    }
    return out;
  }
  /// Whether registers r (even) and r + 1 of layout `t` (a rank-`rank` tile) hold adjacent elements of one row,
  /// the first at an even column in every thread: the layout is additive, register r + 1 sits one column right of
  /// r in the same row, r's column is even and so is every lane's and warp's column offset. A shared-memory row of
  /// 16-bit elements with an even pitch then holds the pair in one aligned 32-bit word.
  bool paired_columns(const ir::TileLayout& t, int r, int rank) const {
    if (t.scalar || r % 2 || r + 1 >= regs(t) || rank < 1) return false;
    const ir::Distributed& d = D(t);
    const int pc = t.dim_of[static_cast<std::size_t>(rank - 1)], pr = rank == 2 ? t.dim_of[0] : -1;
    if (!d.additive || pc < 0) return false;
    const int c = d.register_coord(r, pc);
    if (c % 2 || d.register_coord(r + 1, pc) != c + 1) return false;
    if (pr >= 0 && d.register_coord(r + 1, pr) != d.register_coord(r, pr)) return false;
    for (const auto* digits : {&d.lane, &d.warp})
      for (const ir::InputDigit& g : *digits)
        if (g.image[static_cast<std::size_t>(pc)] % 2) return false;
    return true;
  }

  /// Before loop `L`: the conversions its body needs of values computed
  /// before it (loop-invariant: one conversion instead of a shared-memory
  /// round trip and two barriers per iteration, and in scope after the loop
  /// too) — when that is no more registers than converting in the loop: the
  /// value is read in no other layout from the loop on, so its registers die
  /// here and the converted copy, no larger, lives across the loop in their
  /// place. Any other conversion is made in the body, where it is needed, and
  /// forgotten at the loop's end.
  void hoist_conversions(int L) {
    const int e = loop_end_[static_cast<std::size_t>(L)];
    for (int id = L + 1; id < e; ++id)
      for (int j = 0; j < 3; ++j) {
        const int a = k_[id].args[static_cast<std::size_t>(j)];
        if (a < 0 || a >= L || !tile(a) || plan_.in_smem[static_cast<std::size_t>(a)]) continue;
        const ir::TileLayout want = plan_.operand_layout(k_, id, j);
        if (want == TL(a) || conversions_.count(conversion_key(a, want)) || regs(want) > R(a) || !only_read_as(a, want, L)) continue;
        convert(a, want, id, L);
      }
  }
  /// Every read of value `a` by node `from` or a later one wants it in layout `want`.
  bool only_read_as(int a, const ir::TileLayout& want, int from) const {
    for (int id = from; id < static_cast<int>(k_.nodes.size()); ++id)
      for (int j = 0; j < 3; ++j)
        if (k_[id].args[static_cast<std::size_t>(j)] == a && !(plan_.operand_layout(k_, id, j) == want)) return false;
    return true;
  }

  /// When layouts `from` and `to` of a rank-`rank` tile give every lane and
  /// warp the same coordinates (equal lane / warp digit images on the tile's
  /// dims, both additive), the target register r holds what source register
  /// perm[r] holds. nullopt otherwise.
  std::optional<std::vector<int>> thread_local_permutation(const ir::TileLayout& from, const ir::TileLayout& to, int rank) const {
    if (from.scalar || to.scalar || rank < 1) return std::nullopt;
    const ir::Distributed& a = D(from);
    const ir::Distributed& b = D(to);
    if (!a.additive || !b.additive || a.lane.size() != b.lane.size() || a.warp.size() != b.warp.size()) return std::nullopt;
    auto same = [&](const std::vector<ir::InputDigit>& x, const std::vector<ir::InputDigit>& y) {
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (x[i].radix != y[i].radix || x[i].stride != y[i].stride) return false;
        for (int d = 0; d < rank; ++d) {
          const int pa = from.dim_of[static_cast<std::size_t>(d)], pb = to.dim_of[static_cast<std::size_t>(d)];
          const int ia = pa < 0 ? 0 : x[i].image[static_cast<std::size_t>(pa)], ib = pb < 0 ? 0 : y[i].image[static_cast<std::size_t>(pb)];
          if (ia != ib) return false;
        }
      }
      return true;
    };
    if (!same(a.lane, b.lane) || !same(a.warp, b.warp)) return std::nullopt;
    auto key = [&](const ir::TileLayout& t, const ir::Distributed& dd, int r) {
      std::array<int, 2> c{0, 0};
      for (int d = 0; d < rank; ++d)
        if (const int p = t.dim_of[static_cast<std::size_t>(d)]; p >= 0) c[static_cast<std::size_t>(d)] = dd.register_coord(r, p);
      return c;
    };
    std::map<std::array<int, 2>, int> have;
    for (int r = 0; r < regs(from); ++r) have.emplace(key(from, a, r), r);
    std::vector<int> perm(static_cast<std::size_t>(regs(to)));
    for (int r = 0; r < regs(to); ++r) {
      auto it = have.find(key(to, b, r));
      if (it == have.end()) return std::nullopt;
      perm[static_cast<std::size_t>(r)] = it->second;
    }
    return perm;
  }

  static std::string literal(const ir::Type& t, double f, std::int64_t i, Dialect dl) {
    if (is_float(t.dtype)) {
      double x = round_to(t.dtype, f);
      if (std::isnan(x)) return dl == Dialect::cuda ? "__int_as_float(0x7fc00000)" : "__builtin_nanf(\"\")";
      if (std::isinf(x)) return std::string(x < 0 ? "-" : "") + (dl == Dialect::cuda ? "__int_as_float(0x7f800000)" : "__builtin_inff()");
      if (t.dtype == DType::f64) return fmt::format("{}", x).find_first_of(".e") == std::string::npos ? fmt::format("{}.0", x) : fmt::format("{}", x);
      std::string s = fmt::format("{}", static_cast<float>(x));
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s + "f";
    }
    if (t.dtype == DType::i1) return i ? "true" : "false";
    if (t.dtype == DType::i64)  // INT64_MIN has no literal of its own (9223372036854775808 does not fit a long long)
      return i == std::numeric_limits<std::int64_t>::min() ? std::string("(-9223372036854775807LL - 1)") : fmt::format("{}LL", i);
    if (t.dtype == DType::i32 && i == std::numeric_limits<std::int32_t>::min()) return "(-2147483647 - 1)";
    if (t.dtype == DType::u64) return fmt::format("{}ULL", static_cast<std::uint64_t>(i));
    if (t.dtype == DType::u32) return fmt::format("{}u", static_cast<std::uint32_t>(i));
    return fmt::format("{}", i);
  }

  /// Round an f32 register value to the node's storage precision.
  static std::string rounded(const ir::Type& t, const std::string& e) {
    if (t.is_ptr) return e;
    if (t.dtype == DType::f16) return "tj_round_f16(" + e + ")";
    if (t.dtype == DType::bf16) return "tj_round_bf16(" + e + ")";
    if (t.dtype == DType::f8e4nv) return "tj_e4m3_to_f32(tj_f32_to_e4m3(" + e + "))";
    if (t.dtype == DType::f8e5) return "tj_e5m2_to_f32(tj_f32_to_e5m2(" + e + "))";
    return e;
  }
  static std::string load_expr(DType t, const std::string& p) {
    if (t == DType::f16) return "tj_f16_to_f32(*" + p + ")";
    if (t == DType::bf16) return "tj_bf16_to_f32(*" + p + ")";
    if (t == DType::f8e4nv) return "tj_e4m3_to_f32(*" + p + ")";
    if (t == DType::f8e5) return "tj_e5m2_to_f32(*" + p + ")";
    return "*" + p;
  }
  /// The low element `x` ((unsigned)(...)) of a 32-bit word packing two 16-bit elements of type t: a signed 16-bit
  /// integer converted to unsigned is sign-extended, and its upper ones would overwrite the high element.
  static std::string low_half(DType t, const std::string& x) { return is_float(t) ? x : "(" + x + " & 0xFFFFu)"; }
  static std::string store_expr(DType t, const std::string& x) {
    if (t == DType::f16) return "tj_f32_to_f16(" + x + ")";
    if (t == DType::bf16) return "tj_f32_to_bf16(" + x + ")";
    if (t == DType::f8e4nv) return "tj_f32_to_e4m3(" + x + ")";
    if (t == DType::f8e5) return "tj_f32_to_e5m2(" + x + ")";
    return x;
  }
  /// Two 16-bit elements (f32 register expressions lo and hi, stored as type t) packed into one 32-bit word, lo in
  /// the low half (cut to 16 bits first: a signed 16-bit value converted to unsigned is sign-extended).
  static std::string pair_word(DType t, const std::string& lo, const std::string& hi) {
    auto half = [&](const std::string& x) { return fmt::format("(unsigned)({})", store_expr(t, x)); };
    return fmt::format("{} | ({} << 16)", low_half(t, half(lo)), half(hi));
  }
  /// The condition under which a memory node's register r is written: the owner predicate `own` and, when `masked`,
  /// operand 2 (the mask) at r; "" when always.
  std::string store_guard(int id, int r, bool masked, const std::string& own) const {
    if (!masked) return own;
    return own.empty() ? opnd(id, 2, r) : own + " && " + opnd(id, 2, r);
  }

  void line(const std::string& s) { body_ += "  " + s + "\n"; }

  /// Before a loop over a run-time step: one scalar check, outside the loop, that the step is positive (a step of 0
  /// or less would never end `for (s = lo; s < hi; s += step)` on the GPU; the interpreter throws for it): the
  /// kernel traps instead of hanging. A constant step needs none (tracing rejects a non-positive one), nor
  /// num_programs (>= 1).
  void step_guard(int loop) {
    const Node& st = k_[k_[loop].args[2]];
    if ((st.op == Op::constant && st.i > 0) || st.op == Op::num_programs) return;
    line(fmt::format("if ({} <= 0) tj_bad_step();  // loop %{}: for_range's step must be positive (else the loop never ends)",
                     v(k_[loop].args[2], 0), loop));
  }

  /// The `for` header of loop L (`also`: more increments, `comment`: a trailing comment). for_range's overflow rule
  /// (hi + step - 1 <= 2^31 - 1) is checked on the host at launch, not here: an overflow-safe increment cost the
  /// D = 64 / 96 attention forward 6%, and a check in the kernel, even before the loops, 4% at D = 64 and spills
  /// inside a persistent item loop (docs/perf.md v0.28).
  void loop_header(int L, const std::string& also = "", const std::string& comment = "") {
    const Node& lb = k_[L];
    line(fmt::format("for (int s{0} = {1}; s{0} < {2}; s{0} += {3}{4}) {{{5}", L, v(lb.args[0], 0), v(lb.args[1], 0), v(lb.args[2], 0),
                     also, comment));
  }

  /// Emit `value(r)` into every canonical register of `id`, copies into the others.
  void each_register(int id, const std::function<std::string(int)>& value) {
    const ir::Type& t = k_[id].type;
    if (!tile(id)) {
      line(fmt::format("{} const s{} = {};", reg_type(t), id, value(0)));
      return;
    }
    line(fmt::format("{} v{}[{}];", reg_type(t), id, R(id)));
    for (int r = 0; r < R(id); ++r) {
      int c = canonical(r, id);
      if (c == r)
        line(fmt::format("v{}[{}] = {};", id, r, value(r)));
      else
        line(fmt::format("v{}[{}] = v{}[{}];", id, r, id, c));
    }
  }

  /// `x` (a register of type `from`) converted to `to`'s register type.
  /// Casts to a float round once (nearest even): to f64 and f32 by the conversion itself; to the 16- and 8-bit
  /// formats, whose registers are floats, from f64 and from integers of more than 24 bits by round-to-odd to float
  /// first (tj_*_to_f32_odd: nearest float, then nearest f16, could round twice; core/dtype.hpp to_f32_odd).
  static std::string cast_expr(const ir::Type& from, const ir::Type& to, const std::string& x) {
    if (to.dtype == DType::i1) return "(" + x + " != 0)";
    if (to.dtype == DType::f64) return "(double)(" + x + ")";
    if (to.dtype == DType::f32) return "(float)(" + x + ")";
    if (is_float(to.dtype)) {
      if (from.dtype == DType::f64) return rounded(to, "tj_f64_to_f32_odd(" + x + ")");
      if (from.dtype == DType::i64) return rounded(to, "tj_i64_to_f32_odd((long long)(" + x + "))");
      if (from.dtype == DType::u64) return rounded(to, "tj_u64_to_f32_odd((unsigned long long)(" + x + "))");
      if (from.dtype == DType::i32 || from.dtype == DType::u32) return rounded(to, "tj_f64_to_f32_odd((double)(" + x + "))");
      return rounded(to, "(float)(" + x + ")");
    }
    if (is_float(from.dtype) || from.dtype != to.dtype) return "(" + reg_type(to) + ")(" + x + ")";
    return x;
  }

  /// Throws Unsupported for unary op `n` (node `what`, in words) where the target has no code for it: on HIP without
  /// the ROCm device libraries (hiprtc / clang as tilejit runs them), f64 exp, exp2, log and the transcendental
  /// functions built on them have no instruction and no library to call (clang: "no libcall available for fexp");
  /// floor, ceil, sqrt, rsqrt and abs are instructions.
  void check_unary_target(const Node& n, const std::string& what) const {
    const bool needs_libm = n.op == Op::exp || n.op == Op::exp2 || n.op == Op::log || n.op == Op::log2 || n.op == Op::sin ||
                            n.op == Op::cos || n.op == Op::tanh || n.op == Op::erf || n.op == Op::sigmoid;
    if (t_.dialect == Dialect::hip && n.type.dtype == DType::f64 && needs_libm)
      throw Unsupported(fmt::format("{}: {} of an f64 tile on HIP needs the ROCm device libraries, which tilejit's HIP "
                                    "compile does not link; compute it in f32 (tj::cast<float>) or on a CUDA target", what,
                                    ir::name(n.op)));
  }

  /// The kernel's scan and reduction operators (Kernel::combines) as device functions `tj_comb<c>(earlier, later)` of the scan
  /// element's register type: a line per node, each rounded to its type as the kernel's own elementwise code is.
  /// The register type of combine c's element: the operand's register type, or for several operands the struct
  /// tj_tup<c> of theirs.
  std::string combine_type(int c) const {
    const ir::Combine& cb = k_.combines[static_cast<std::size_t>(c)];
    return cb.arity() == 1 ? reg_type(cb.nodes[0].type) : fmt::format("tj_tup{}", c);
  }

  std::string combine_functions() const {
    std::string out;
    for (std::size_t c = 0; c < k_.combines.size(); ++c) {
      const ir::Combine& cb = k_.combines[c];
      const int arity = cb.arity();
      const std::string rt = combine_type(static_cast<int>(c));
      if (arity > 1) {
        // The element of a scan of several operands: a struct of their registers, with the lane shuffle the scan's
        // lane steps use, field by field.
        out += fmt::format("// combine {}'s element: one register per operand\nstruct {} {{", c, rt);
        for (int j = 0; j < arity; ++j) out += fmt::format(" {} v{};", reg_type(cb.nodes[static_cast<std::size_t>(j)].type), j);
        out += fmt::format(" }};\nstatic __device__ __forceinline__ {0} tj_shfl_xor({0} x, int m) {{\n", rt);
        for (int j = 0; j < arity; ++j)
          out += fmt::format("  x.v{0} = ({1})tj_shfl_xor(x.v{0}, m);\n", j, reg_type(cb.nodes[static_cast<std::size_t>(j)].type));
        out += "  return x;\n}\n";
      }
      out += fmt::format("// combine {}: the operator of an associative_scan or reduce\nstatic __device__ __forceinline__ {} tj_comb{}({} {}, {} {}) {{\n",
                         c, rt, c, rt, arity > 1 ? "tj_x" : "c0", rt, arity > 1 ? "tj_y" : "c1");
      for (int j = 0; arity > 1 && j < 2 * arity; ++j)
        out += fmt::format("  const {} c{} = {}.v{};\n", reg_type(cb.nodes[static_cast<std::size_t>(j)].type), j, j < arity ? "tj_x" : "tj_y",
                           j % arity);
      for (std::size_t j = static_cast<std::size_t>(2 * arity); j < cb.nodes.size(); ++j) {
        const Node& n = cb.nodes[j];
        auto x = [&](int a) { return fmt::format("c{}", n.args[static_cast<std::size_t>(a)]); };
        auto type_of = [&](int a) -> const ir::Type& { return cb.nodes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(a)])].type; };
        std::string e;
        if (n.op == Op::constant) {
          e = literal(n.type, n.f, n.i, t_.dialect);
        } else if (ir::is_binary(n.op)) {
          e = binary_expr(n.op, type_of(0), x(0), x(1));
          if (!ir::is_compare(n.op)) e = rounded(n.type, e);
        } else if (ir::is_unary(n.op)) {
          check_unary_target(n, fmt::format("combine {} node %{}", c, j));
          e = rounded(n.type, std::string(unary_function(n, 0)) + "(" + x(0) + ")");
        } else if (n.op == Op::where) {
          e = x(0) + " ? " + x(1) + " : " + x(2);
        } else if (n.op == Op::cast) {
          e = cast_expr(type_of(0), n.type, x(0));
        } else {
          throw Unsupported(fmt::format("codegen: combine {} node %{} ({}) is not a scalar elementwise op", c, j, ir::name(n.op)));
        }
        out += fmt::format("  const {} c{} = {};\n", reg_type(n.type), j, e);
      }
      if (arity == 1) {
        out += fmt::format("  return c{};\n}}\n", cb.results[0]);
      } else {
        std::string fields;
        for (int r : cb.results) fields += fmt::format("{}c{}", fields.empty() ? "" : ", ", r);
        out += fmt::format("  return {} {{{}}};\n}}\n", rt, fields);
      }
    }
    return out;
  }

  std::string binary_expr(Op op, const ir::Type& operand, const std::string& a, const std::string& b) const {
    const bool fl = !operand.is_ptr && is_float(operand.dtype);
    switch (op) {
      case Op::add: return a + " + " + b;
      case Op::sub: return a + " - " + b;
      case Op::mul: return a + " * " + b;
      case Op::div: return a + " / " + b;
      case Op::rem: return fl ? "tj_fmod(" + a + ", " + b + ")" : a + " % " + b;
      case Op::maximum: return "tj_max(" + a + ", " + b + ")";
      case Op::minimum: return "tj_min(" + a + ", " + b + ")";
      case Op::bit_and: return a + " & " + b;
      case Op::bit_or: return a + " | " + b;
      case Op::bit_xor: return a + " ^ " + b;
      case Op::lt: return a + " < " + b;
      case Op::le: return a + " <= " + b;
      case Op::gt: return a + " > " + b;
      case Op::ge: return a + " >= " + b;
      case Op::eq: return a + " == " + b;
      case Op::ne: return a + " != " + b;
      default: throw Unsupported(fmt::format("codegen: {} is not a binary op", ir::name(op)));
    }
  }

  void emit(int id) {
    const Node& n = k_[id];
    const ir::Type& t = n.type;
    auto arg = [&](int j) { return n.args[static_cast<std::size_t>(j)]; };
    auto op = [&](int j, int r) { return opnd(id, j, r); };
    if (!deferred_.empty()) retire_deferred(deferred_needed_by(id), id);
    convert_operands(id);
    switch (n.op) {
      case Op::param: {
        const int i = static_cast<int>(n.i);
        const std::uint8_t f = i < static_cast<int>(spec_.flags.size()) ? spec_.flags[static_cast<std::size_t>(i)] : 0;
        if (t.is_desc) {
          line(fmt::format("const tj_desc& s{} = arg{};", id, i));
        } else if (t.is_ptr) {
          if (f & ir::Specialization::kDiv16)
            line(fmt::format("{}* const s{} = ({}*)__builtin_assume_aligned(arg{}, 16);", storage_type(t.dtype), id, storage_type(t.dtype), i));
          else
            line(fmt::format("{}* const s{} = arg{};", storage_type(t.dtype), id, i));
        } else if (is_int(t.dtype) && (f & ir::Specialization::kEqual1)) {
          line(fmt::format("const {} s{} = 1;  // specialised: arg{} == 1", reg_type(t), id, i));
        } else {
          if (is_int(t.dtype) && (f & ir::Specialization::kDiv16)) line(fmt::format("__builtin_assume(arg{} % 16 == 0);", i));
          std::string e = t.dtype == DType::f16 ? fmt::format("tj_f16_to_f32(arg{})", i)
                          : t.dtype == DType::bf16 ? fmt::format("tj_bf16_to_f32(arg{})", i) : fmt::format("arg{}", i);
          line(fmt::format("const {} s{} = {};", reg_type(t), id, e));
        }
        return;
      }
      case Op::program_id:
        line(fmt::format("const int s{} = (int)blockIdx.{};", id, "xyz"[n.axis]));
        return;
      case Op::num_programs:
        line(fmt::format("const int s{} = (int)gridDim.{};", id, "xyz"[n.axis]));
        return;
      case Op::constant: {
        std::string lit = literal(t, n.f, n.i, t_.dialect);
        each_register(id, [&](int) { return lit; });
        return;
      }
      case Op::arange:
        each_register(id, [&](int r) { return coord(id, r, 0); });
        return;
      case Op::desc_field: {
        const std::string d = v(arg(0), 0);
        if (n.i == 0)
          line(fmt::format("{}* const s{} = ({}*){}.base;", storage_type(t.dtype), id, storage_type(t.dtype), d));
        else if (n.i >= ir::kDescStride)
          line(fmt::format("const int s{} = (int){}.strides[{}];", id, d, n.i - ir::kDescStride));
        else if (n.i >= ir::kDescShape)
          line(fmt::format("const int s{} = (int){}.shape[{}];", id, d, n.i - ir::kDescShape));
        else
          line(fmt::format("const int s{} = (int){}.{};", id, d,
                           n.i == 1 ? "shape[0]" : n.i == 2 ? "shape[1]" : n.i == 3 ? "strides[0]" : "tail[3]"));  // tail[3]: byte 259, OobFill
        return;
      }
      case Op::desc_view:  // read where its blocks are copied (block_desc): the parameter and these coordinates
        return;
      case Op::desc_load:
        if (const Resident* r = resident_of(id); r && cp_) {
          // Every thread copies its chunks, then waits for them (no ring's groups are pending here or, if a loop
          // before left some, they are drained early: a wait only ever returns later than needed) and a barrier.
          const ir::Type& bt = n.type;
          line(fmt::format("// %{}: block of descriptor %{} copied once by cp.async", id, arg(0)));
          line(fmt::format("tj_cp_block<{}, {}, {}, {}, {}u>(tj_res{}, {}, (int){}, (int){}, tj_tid); tj_cp_commit(); tj_cp_wait<0>(); "
                           "__syncthreads();",
                           size_bytes(bt.dtype), bt.shape[0], bt.shape[1], threads_, nan_bits(bt.dtype), id, cp_view(id, outer_values(id)),
                           v(arg(1), 0), v(arg(2), 0)));
        } else if (const Resident* r = resident_of(id)) {
          line(fmt::format("// %{}: block of descriptor %{} copied once by TMA", id, arg(0)));
          line(fmt::format("if (tj_tid == 0) {{ tj_mbar_expect_tx(tj_rbar{}, {}u); {}}}", id, r->bytes,
                           tma_copies(id, fmt::format("tj_res{}", id), v(arg(1), 0), v(arg(2), 0), fmt::format("tj_rbar{}", id), false,
                                      outer_values(id))));
        } else if (const ItemBlock* b = item_of(id)) {
          line(fmt::format("// %{}: block of descriptor %{} copied by TMA once per iteration of loop %{}", id, arg(0), b->loop));
          if (!ws_) line(fmt::format("if (tj_tid == 0) {{ {}}}", item_issue(*b)));
        } else {
          line(fmt::format("// %{}: block of descriptor %{} copied by {} (loop %{}'s pipeline)", id, arg(0), cp_ ? "cp.async" : "TMA",
                           pipe_of_load(id)->loop));
        }
        return;
      case Op::desc_store:
        emit_tma_store(id);
        return;
      case Op::event:  // recorded by the program's first (consumer) thread; nothing without device_events
        if (o_.device_events) {
          std::string shown = ev_sites_[static_cast<std::size_t>(n.i)];  // in a comment: printable ASCII only
          for (char& c : shown)
            if (c < 0x20 || c > 0x7e) c = '?';
          line(fmt::format("if (tj_tid == 0) {}  // {} '{}'", event_call(static_cast<int>(n.i), n.axis, v(arg(0), 0)),
                           n.axis == 0 ? "async_begin" : "async_end", shown));
        }
        return;
      case Op::trans:
        if (plan_.in_smem[static_cast<std::size_t>(id)]) return;  // a view: wgmma reads the K-major block as B
        // A register tile: the operand was brought to the transpose of this value's layout, so register r holds
        // the element this value's register r names, with its coordinates swapped.
        each_register(id, [&](int r) { return op(0, r); });
        return;
      case Op::reshape:
        emit_reshape(id);
        return;
      case Op::broadcast:
      case Op::expand_dims:
        each_register(id, [&](int r) { return op(0, r); });
        return;
      case Op::cast: {
        const ir::Type& from = k_[arg(0)].type;
        each_register(id, [&](int r) { return cast_expr(from, t, op(0, r)); });
        return;
      }
      case Op::addptr:
        each_register(id, [&](int r) { return op(0, r) + " + " + op(1, r); });
        return;
      case Op::where:
        each_register(id, [&](int r) { return op(0, r) + " ? " + op(1, r) + " : " + op(2, r); });
        return;
      case Op::load: {
        const bool masked = arg(1) >= 0;
        const std::string other = arg(2) >= 0 ? v(arg(2), 0) : literal(t, 0, 0, t_.dialect);
        if (const int vw = vector_width(id, 0, masked ? 1 : -1); vw > 1) {
          emit_vector_load(id, vw, masked, other);
          return;
        }
        each_register(id, [&](int r) {
          std::string ld = load_expr(t.dtype, op(0, r));
          return masked ? op(1, r) + " ? " + ld + " : " + other : ld;
        });
        return;
      }
      case Op::store: {
        const std::string own = owner_predicate(TL(id));
        const bool masked = arg(2) >= 0;
        if (emit_quad_transposed_store(id, masked, own)) return;
        if (const int vw = vector_width(id, 0, masked ? 2 : -1); vw > 1) {
          emit_vector_store(id, vw, masked, own);
          return;
        }
        for (int r = 0; r < R(id); ++r) {
          if (tile(id) && canonical(r, id) != r) continue;
          const std::string cond = store_guard(id, r, masked, own);
          std::string st = fmt::format("*{} = {};", op(0, r), store_expr(t.dtype, op(1, r)));
          line(cond.empty() ? st : fmt::format("if ({}) {}", cond, st));
        }
        return;
      }
      case Op::reduce_sum:
      case Op::reduce_max:
      case Op::reduce_min:
      case Op::reduce_custom:
        emit_reduce(id);
        return;
      case Op::scan_sum:
      case Op::scan_prod:
      case Op::scan_max:
      case Op::scan_min:
      case Op::scan_custom:
        emit_scan(id);
        return;
      case Op::tuple_get:
        emit_tuple_get(id);
        return;
      case Op::atomic_add:
      case Op::atomic_max:
      case Op::atomic_min:
      case Op::atomic_xchg:
      case Op::atomic_cas:
        emit_atomic(id);
        return;
      case Op::dot:
        if (plan_.dot_mfma[static_cast<std::size_t>(id)])
          emit_mfma(id);
        else if (plan_.in_smem[static_cast<std::size_t>(arg(1))] && !cp_)
          emit_wgmma_smem(id);
        else if (plan_.dot_wgmma[static_cast<std::size_t>(id)])
          emit_wgmma(id);
        else
          emit_dot(id);
        return;
      case Op::loop_begin: {
        // Carried values live in mutable variables declared before the loop.
        for (std::size_t c = static_cast<std::size_t>(id) + 1; c < k_.nodes.size(); ++c) {
          const Node& cn = k_.nodes[c];
          if (cn.op != Op::loop_carry || cn.args[1] != id) continue;
          const int cid = static_cast<int>(c);
          if (packed(cid)) {
            convert_operands(cid);
            line(fmt::format("unsigned v{}[{}];  // {} packed in pairs", cid, R(cid) / 2, name(cn.type.dtype)));
            for (int i = 0; i < R(cid) / 2; ++i) line(fmt::format("v{}[{}] = {};", cid, i, word(cid, 0, i, cn.type.dtype)));
          } else if (tile(cid)) {
            convert_operands(cid);
            line(fmt::format("{} v{}[{}];", reg_type(cn.type), cid, R(cid)));
            for (int r = 0; r < R(cid); ++r) line(fmt::format("v{}[{}] = {};", cid, r, opnd(cid, 0, r)));
          } else {
            line(fmt::format("{} s{} = {};", reg_type(cn.type), cid, v(cn.args[0], 0)));
          }
        }
        const int pi = pipe_of_loop_[static_cast<std::size_t>(id)];
        if (pi >= 0) emit_pipe_prologue(pipes_[static_cast<std::size_t>(pi)]);
        if (pingpong_ && id == pp_hand_)  // group 1 hands group 0 the first turn
          line("if (tj_warp / 4 == 1) asm volatile(\"bar.arrive 2, 256;\" ::: \"memory\");  // warp group 0 issues first");
        hoist_conversions(id);
        wait_resident_before(id);
        step_guard(id);
        loop_header(id);
        conv_scopes_.emplace_back();
        if (pi >= 0) emit_pipe_wait(pipes_[static_cast<std::size_t>(pi)]);
        return;
      }
      case Op::loop_carry:
        return;
      case Op::loop_yield: {
        // Copy into a temporary first: yields of one iteration happen together.
        const int c = arg(0), nx = arg(1);
        if (alias_[static_cast<std::size_t>(nx)] == c) return;  // an in-place accumulator: nothing to copy
        if (packed(c)) {
          line(fmt::format("unsigned y{}[{}];", c, R(c) / 2));
          for (int i = 0; i < R(c) / 2; ++i) line(fmt::format("y{}[{}] = {};", c, i, word(id, 1, i, k_[c].type.dtype)));
        } else if (tile(c)) {
          line(fmt::format("{} y{}[{}];", reg_type(k_[c].type), c, R(c)));
          for (int r = 0; r < R(c); ++r) line(fmt::format("y{}[{}] = {};", c, r, op(1, r)));
        } else {
          line(fmt::format("{} const y{} = {};", reg_type(k_[c].type), c, v(nx, 0)));
        }
        return;
      }
      case Op::loop_end: {
        const int pi = pipe_of_loop_[static_cast<std::size_t>(arg(0))];
        if (pi >= 0) emit_pipe_tail(pipes_[static_cast<std::size_t>(pi)]);
        for (std::size_t y = static_cast<std::size_t>(arg(0)) + 1; y < static_cast<std::size_t>(id); ++y) {
          const Node& yn = k_.nodes[y];
          if (yn.op != Op::loop_yield || k_[yn.args[0]].args[1] != arg(0)) continue;
          const int c = yn.args[0];
          if (alias_[static_cast<std::size_t>(yn.args[1])] == c) continue;
          if (tile(c))
            for (int r = 0; r < (packed(c) ? R(c) / 2 : R(c)); ++r) line(fmt::format("v{}[{}] = y{}[{}];", c, r, c, r));
          else
            line(fmt::format("s{} = y{};", c, c));
        }
        if (has_items(arg(0))) {
          for (const ItemBlock& b : items_)  // (released already: its reader retired at the latest at this loop's end)
            if (b.loop == arg(0) && std::find(pending_release_.begin(), pending_release_.end(), b.node) != pending_release_.end())
              throw Unsupported(fmt::format("codegen: block %{} was not released in loop %{}", b.node, b.loop));
          line(fmt::format("++tj_oit{};", arg(0)));
        }
        line("}");
        for (const std::string& key : conv_scopes_.back()) conversions_.erase(key);  // declared in the loop body
        conv_scopes_.pop_back();
        if (pingpong_ && arg(0) == pp_hand_)  // group 1 handed a last turn to group 0 in its final iteration: take it
          line("if (tj_warp / 4 == 0) asm volatile(\"bar.sync 2, 256;\" ::: \"memory\");  // the last hand-off");
        if (pi >= 0 && !pipes_[static_cast<std::size_t>(pi)].async_dots.empty())
          wgmma_wait(0, "  // the accumulators are final");
        if (pi >= 0 && ws_ && parent_[static_cast<std::size_t>(arg(0))] >= 0 && release_lag(pipes_[static_cast<std::size_t>(pi)])) {
          // Nested in a persistent loop: the producer refills the last stage for the next outer iteration, so release it
          // now (its wgmma has completed) rather than in the first iteration of the next run, after the epilogue.
          const Pipe& p = pipes_[static_cast<std::size_t>(pi)];
          line(fmt::format("if (tj_it{0} > tj_it0{0}) {{ __syncwarp(); {1}; }}  // the run's last stage", p.loop,
                           release("", fmt::format("tj_empty{0} + 8u * ((tj_it{0} - 1u) % {1}u)", p.loop, p.stages))));
        }
        return;
      }
      case Op::loop_result:
        if (packed(id)) {
          line(fmt::format("unsigned v{}[{}];  // {} packed in pairs", id, R(id) / 2, name(n.type.dtype)));
          for (int i = 0; i < R(id) / 2; ++i) line(fmt::format("v{}[{}] = {};", id, i, word(id, 0, i, n.type.dtype)));
          return;
        }
        each_register(id, [&](int r) { return op(0, r); });
        return;
      default:
        break;
    }
    if (ir::is_unary(n.op)) {
      check_unary_target(n, fmt::format("node %{}", id));
      each_register(id, [&](int r) {
        std::string x = op(0, r);
        std::string e = std::string(unary_function(n, r)) + "(" + x + ")";
        return rounded(t, e);
      });
      return;
    }
    if (ir::is_binary(n.op)) {
      const ir::Type& ot = k_[arg(0)].type;
      if (n.op == Op::mul && n.i == 1 && tile(id) && t.dtype == DType::f32 && emit_rescale(id)) return;
      each_register(id, [&](int r) {
        std::string e = binary_expr(n.op, ot, op(0, r), op(1, r));
        return ir::is_compare(n.op) ? e : rounded(t, e);
      });
      return;
    }
    throw Unsupported(fmt::format("codegen: cannot lower node %{} ({})", id, ir::name(n.op)));
  }

  /// The distinct values a thread holds of operand `j` of node `id`, as expressions: through broadcasts and
  /// expand_dims held in the layouts their readers want (no conversion between), down to the registers of the
  /// tile they repeat — e.g. the two row values of expand_dims<1>(alpha) under a wgmma accumulator [64, N].
  std::vector<std::string> distinct_values(int id, int j) const {
    std::vector<int> regs(static_cast<std::size_t>(R(id)));
    for (std::size_t r = 0; r < regs.size(); ++r) regs[r] = static_cast<int>(r);
    for (int node = id;;) {
      const int a = k_[node].args[static_cast<std::size_t>(j)];
      if (!tile(a)) return {v(a, 0)};
      const ir::TileLayout want = plan_.operand_layout(k_, node, j);
      std::set<int> held;
      for (int r : regs) held.insert(canonical(r, want));
      const bool repeats = (k_[a].op == Op::broadcast || k_[a].op == Op::expand_dims) && want == TL(a) && !packed(a) &&
                           (alias_.empty() || alias_[static_cast<std::size_t>(a)] < 0);
      if (!repeats) {
        std::vector<std::string> out;
        for (int r : held) out.push_back(opnd(node, j, r));
        return out;
      }
      regs.assign(held.begin(), held.end());  // a's register r is its operand's register r in this layout
      node = a, j = 0;
    }
  }
  /// tj::rescale (mul with i = 1): x · factor, where a thread whose factor values are all exactly 1 keeps x as it
  /// is — one compare per distinct factor value (a row of the online softmax's alpha) instead of a multiply per
  /// register. False (nothing emitted) where every register has its own factor value: a plain multiply then.
  bool emit_rescale(int id) {
    const std::vector<std::string> f = distinct_values(id, 1);
    if (f.size() >= static_cast<std::size_t>(R(id))) return false;
    std::string unit;
    for (const std::string& x : f) unit += (unit.empty() ? "" : " && ") + ("(" + x + ") == 1.0f");
    auto fill = [&](const auto& value) {  // the canonical registers; the others copy theirs after the branch
      for (int r = 0; r < R(id); ++r)
        if (canonical(r, id) == r) line(fmt::format("v{}[{}] = {};", id, r, value(r)));
    };
    line(fmt::format("float v{}[{}];", id, R(id)));
    line(fmt::format("if ({}) {{  // every factor this thread holds is 1: x as it is", unit));
    fill([&](int r) { return opnd(id, 0, r); });
    line("} else {");
    fill([&](int r) { return opnd(id, 0, r) + " * " + opnd(id, 1, r); });
    line("}");
    for (int r = 0; r < R(id); ++r)
      if (canonical(r, id) != r) line(fmt::format("v{}[{}] = v{}[{}];", id, r, id, canonical(r, id)));
    return true;
  }

  /// Elements per vector access for memory node `id` (pointer operand `pj`,
  /// mask operand `mj` or -1): the thread's run of consecutive registers along
  /// the tile's minor dim, limited by the pointers' contiguity and alignment
  /// (AxisInfo), the mask's constancy, and 16 bytes. 1 = scalar accesses.
  int vector_width(int id, int pj, int mj) const {
    const ir::Type& t = k_[id].type;
    if (!tile(id)) return 1;
    const ir::TileLayout& tl = TL(id);
    const auto axis = [&](int j) -> const ir::AxisInfo& { return axes_[static_cast<std::size_t>(k_[id].args[static_cast<std::size_t>(j)])]; };
    return ir::vector_elements(D(tl), tl, t, axis(pj), mj >= 0 ? &axis(mj) : nullptr, t.rank - 1);  // the planner's rule
  }
  /// Element i of a loaded vector word array `t` as the register value.
  std::string unpack(DType dt, const std::string& t, int i) const {
    if (size_bytes(dt) == 4) {
      if (dt == DType::f32) return fmt::format("tj_as_f32({}.w[{}])", t, i);
      return fmt::format("({})({}.w[{}])", storage_type(dt), t, i);
    }
    const std::string h = fmt::format("(unsigned short)({}.w[{}] >> {})", t, i / 2, 16 * (i % 2));
    if (dt == DType::f16) return "tj_f16_to_f32(" + h + ")";
    if (dt == DType::bf16) return "tj_bf16_to_f32(" + h + ")";
    return fmt::format("({})({})", storage_type(dt), h);
  }
  void emit_vector_load(int id, int vw, bool masked, const std::string& other) {
    const ir::Type& t = k_[id].type;
    const int bytes = vw * size_bytes(t.dtype);
    line(fmt::format("{} v{}[{}];  // {}-byte vector loads", reg_type(t), id, R(id), bytes));
    for (int r = 0; r < R(id); ++r) {
      if (canonical(r, id) != r) {
        line(fmt::format("v{}[{}] = v{}[{}];", id, r, id, canonical(r, id)));
        continue;
      }
      if (r % vw != 0) continue;  // filled with its group
      const std::string tv = fmt::format("t{}_{}", id, r);
      const std::string ld = fmt::format("*(const tj_v{}*)({})", bytes, opnd(id, 0, r));
      line(masked ? fmt::format("tj_v{} {} = {} ? {} : tj_v{}{{}};", bytes, tv, opnd(id, 1, r), ld, bytes)
                  : fmt::format("tj_v{} {} = {};", bytes, tv, ld));
      for (int i = 0; i < vw; ++i) {
        const std::string x = unpack(t.dtype, tv, i);
        line(fmt::format("v{}[{}] = {};", id, r + i, masked ? fmt::format("{} ? {} : {}", opnd(id, 1, r), x, other) : x));
      }
    }
  }
  /// A store of 16-bit elements held as mma / wgmma accumulators hold them — each thread a pair of adjacent columns
  /// (a register digit of image 1), the four lanes of a quad the next pairs (lane digits 0 and 1: columns 2 and 4),
  /// and register digits stepping by 8 or more columns — writes 4 bytes per register pair, so up to four store
  /// instructions share each 32-byte sector (Nsight: half the sectors excess at wgmma's layout). Here the quad first
  /// transposes its 4 x 4 words (two butterfly rounds of shfl.xor 1 and 2, swapping the lane digits with the two
  /// smallest such register digits, X < Y columns): lane c then holds the 8 columns at X (c & 1) + Y (c >> 1) of its
  /// group and stores them as one 16-byte vector. With wgmma's layout (X = 8, Y = 16) a quad writes 64 contiguous
  /// bytes of its row; with mma.sync's where warps interleave at 8 columns (X = 16, Y = 32), 16-byte halves of
  /// sectors. Needs the pointers contiguous along the whole row of the tile and 16-byte aligned at its start
  /// (AxisInfo), every other column digit a multiple of 8, a mask constant along the row, and no duplicated
  /// registers; returns false (nothing emitted) otherwise. Every lane shuffles; the mask guards only the stores.
  bool emit_quad_transposed_store(int id, bool masked, const std::string& own) {
    const ir::Type& t = k_[id].type;
    if (!tile(id) || t.rank != 2 || t.is_ptr || size_bytes(t.dtype) != 2) return false;
    const ir::TileLayout& tl = TL(id);
    const ir::Distributed& d = D(tl);
    const int pc = tl.dim_of[1];
    if (pc < 0 || !d.additive || d.lane.size() < 2) return false;
    auto col_of = [&](const ir::InputDigit& g) {  // the digit's column step, -1 if it moves rows or is not radix 2
      if (g.radix != 2) return -1;
      for (int x = 0; x < d.rank; ++x)
        if (x != pc && g.image[static_cast<std::size_t>(x)] != 0) return -1;
      return g.image[static_cast<std::size_t>(pc)];
    };
    if (d.lane[0].stride != 1 || col_of(d.lane[0]) != 2 || d.lane[1].stride != 2 || col_of(d.lane[1]) != 4) return false;
    int s0 = -1, sx = -1, sy = -1, x = 0, y = 0;  // register strides of the pair digit and of the X and Y digits
    for (const auto& g : d.reg) {
      const int c = col_of(g);
      if (c == 1) s0 = g.stride;
      if (c >= 8 && c % 8 == 0 && (sx < 0 || c < x)) sy = sx, y = x, sx = g.stride, x = c;
      else if (c >= 8 && c % 8 == 0 && (sy < 0 || c < y)) sy = g.stride, y = c;
    }
    if (s0 < 0 || sx < 0 || sy < 0) return false;
    // Every other digit moves whole 8-column blocks, so each vector starts 16-byte aligned.
    for (const auto* gs : {&d.reg, &d.lane, &d.warp})
      for (const auto& g : *gs) {
        const int col = g.image[static_cast<std::size_t>(pc)];
        if (col % 8 != 0 && col != 1 && col != 2 && col != 4) return false;
      }
    for (int r = 0; r < R(id); ++r)
      if (canonical(r, id) != r) return false;
    const auto axis = [&](int j) -> const ir::AxisInfo& { return axes_[static_cast<std::size_t>(k_[id].args[static_cast<std::size_t>(j)])]; };
    const int cols = t.shape[1];
    if (axis(0).contiguity[1] < cols || axis(0).divisibility[1] < 16) return false;
    if (masked && axis(2).constancy[1] < cols) return false;
    line(fmt::format("// store %{}: each quad transposes its 4 x 4 words (shfl.xor 1, 2), then 16-byte vectors", id));
    // Lane c's register r points at column 2c of its group; its vector starts at X (c & 1) + Y (c >> 1).
    line(fmt::format("{{ const bool tj_q0_{0} = (tj_lane & 1) != 0, tj_q1_{0} = (tj_lane & 2) != 0; const int tj_qo_{0} = (tj_q0_{0} ? {1} : 0) + "
                     "(tj_q1_{0} ? {2} : 0);", id, x - 2, y - 4));
    auto word = [&](int r) { return pair_word(t.dtype, opnd(id, 1, r), opnd(id, 1, r + s0)); };
    const auto bit = [](int r, int s) { return (r / s) % 2; };
    int group = 0;
    for (int r = 0; r < R(id); ++r) {
      if (bit(r, s0) || bit(r, sx) || bit(r, sy)) continue;
      const std::string w = fmt::format("tj_w{}_{}", id, group++);
      // w[j], j = 2 j1 + j0: the pair at column X j0 + Y j1 (+ 2c) of the group.
      line(fmt::format("unsigned {0}[4] = {{{1}, {2}, {3}, {4}}};", w, word(r), word(r + sx), word(r + sy), word(r + sx + sy)));
      // Round 1 swaps lane digit 0 with j0, round 2 lane digit 1 with j1: afterwards lane c holds, at j = k, the
      // words lane k held at j = c.
      line(fmt::format("{{ const unsigned x0 = tj_shfl_xor(tj_q0_{1} ? {0}[0] : {0}[1], 1), x1 = tj_shfl_xor(tj_q0_{1} ? {0}[2] : {0}[3], 1);"
                       " if (tj_q0_{1}) {0}[0] = x0, {0}[2] = x1; else {0}[1] = x0, {0}[3] = x1; }}", w, id));
      line(fmt::format("{{ const unsigned x0 = tj_shfl_xor(tj_q1_{1} ? {0}[0] : {0}[2], 2), x1 = tj_shfl_xor(tj_q1_{1} ? {0}[1] : {0}[3], 2);"
                       " if (tj_q1_{1}) {0}[0] = x0, {0}[1] = x1; else {0}[2] = x0, {0}[3] = x1; }}", w, id));
      const std::string cond = store_guard(id, r, masked, own);
      const std::string st = fmt::format("{{ tj_v16 tv; tv.w[0] = {0}[0]; tv.w[1] = {0}[1]; tv.w[2] = {0}[2]; tv.w[3] = {0}[3]; "
                                         "*(tj_v16*)(({1}) + tj_qo_{2}) = tv; }}", w, opnd(id, 0, r), id);
      line(cond.empty() ? st : fmt::format("if ({}) {}", cond, st));
    }
    line("}");
    plan_diag_.push_back(fmt::format("store %{}: {} groups of 4 x 4 words (column steps {} and {}), transposed in each quad and stored as "
                                     "16-byte vectors", id, group, x, y));
    return true;
  }
  void emit_vector_store(int id, int vw, bool masked, const std::string& own) {
    const ir::Type& t = k_[id].type;
    const int es = size_bytes(t.dtype), bytes = vw * es;
    for (int r = 0; r < R(id); r += vw) {
      if (canonical(r, id) != r) continue;
      const std::string tv = fmt::format("t{}_{}", id, r);
      line(fmt::format("tj_v{} {};", bytes, tv));
      for (int w = 0; w < bytes / 4; ++w) {
        std::string word;
        if (es == 4) {
          word = t.dtype == DType::f32 ? fmt::format("tj_as_u32({})", opnd(id, 1, r + w)) : fmt::format("(unsigned)({})", opnd(id, 1, r + w));
        } else {
          word = pair_word(t.dtype, opnd(id, 1, r + 2 * w), opnd(id, 1, r + 2 * w + 1));
        }
        line(fmt::format("{}.w[{}] = {};", tv, w, word));
      }
      const std::string cond = store_guard(id, r, masked, own);
      const std::string st = fmt::format("*(tj_v{}*)({}) = {};", bytes, opnd(id, 0, r), tv);
      line(cond.empty() ? st : fmt::format("if ({}) {}", cond, st));
    }
  }

  /// acc + a·b with mma.sync: m16n8k16 for f16 / bf16, m16n8k8 for tf32 (f32
  /// operands), m16n8k32 for i8 (i32 accumulator) and, from sm_89, e4m3 / e5m2.
  /// a and b arrive in the mma operand layouts of their element width (loaded
  /// there when the plan anchors their families, converted otherwise), the
  /// accumulator is in the mma accumulator layout. For each k step (8·w deep,
  /// w = elements per 32-bit register: 1, 2 or 4), every A fragment (one per
  /// 16-row block the thread holds) and every B fragment (one per 8-column
  /// block) is packed once into .b32 registers, then each 16x8 accumulator
  /// tile issues one mma. Fragment registers are found by their coordinates in
  /// those layouts (PTX ISA "Matrix Fragments for mma.m16n8k8 / k16 / k32";
  /// layout/encodings/mma_sync.hpp), so the code follows whatever register
  /// order the layouts use. bf16 values are held as exact f32 (every bf16 node
  /// is rounded), so packing two is a bit splice (one PRMT) rather than a cvt;
  /// f16 needs the cvt; tf32 rounds each f32 with cvt.rna.tf32.f32; f8 values
  /// (exact in f32) and i8 are packed four to a register.
  void emit_dot(int id) {
    const Node& n = k_[id];
    if (t_.dialect != Dialect::cuda)
      throw Unsupported(fmt::format("dot %{}: the HIP backend lowers dot to MFMA on gfx90a and gfx94x only; target {} has none",
                                    id, t_.arch));
    const ir::Type& ta = k_[n.args[0]].type;
    const DType et = ta.dtype;
    const bool f8 = et == DType::f8e4nv || et == DType::f8e5;
    // The operand dtype and K were checked by the layout plan (check_mma_sync_k), before any layout was built.
    if (sm_number(t_.arch) < 80)
      throw Unsupported(fmt::format("dot %{}: mma.sync needs sm_80 or newer, target is {}", id, t_.arch));
    if (f8 && sm_number(t_.arch) < 89)
      throw Unsupported(fmt::format("dot %{}: {} products need sm_89 or newer (mma.sync ... .e4m3 / .e5m2 from Ada, wgmma on "
                                    "Hopper), target is {}", id, name(et), t_.arch));
    const int kw = layout::mma_sync_k_width(size_bytes(et));  // elements per 32-bit operand register
    const int kstep = 8 * kw;
    const ir::TileLayout& lc = TL(id);
    const auto& la = plan_.dot_operands[static_cast<std::size_t>(id)][0];
    const auto& lb = plan_.dot_operands[static_cast<std::size_t>(id)][1];
    auto table = [&](const ir::TileLayout& t) {
      std::map<std::pair<int, int>, int> m;  // register coordinate -> register index
      for (int r = 0; r < regs(t); ++r) m.emplace(std::pair{D(t).register_coord(r, 0), D(t).register_coord(r, 1)}, r);
      return m;
    };
    const auto ma = table(la), mb = table(lb), mc = table(lc);
    auto find = [&](const std::map<std::pair<int, int>, int>& m, int x, int y, const char* what) {
      auto it = m.find({x, y});
      if (it == m.end()) throw Unsupported(fmt::format("dot %{}: no {} register for ({}, {}) in its layout", id, what, x, y));
      return it->second;
    };
    // The thread's 16x8 accumulator tiles (origins in register coordinates) and their row / column blocks.
    struct TileRef {
      int row_block, col_block;
      std::array<int, 4> c;
    };
    std::vector<int> rows, cols;
    std::vector<TileRef> tiles;
    for (const auto& [rc, r0] : mc) {
      const int ro = rc.first, co = rc.second;
      if ((ro & 8) || (co & 1)) continue;  // not a tile origin
      TileRef t{};
      auto ri = std::find(rows.begin(), rows.end(), ro);
      if (ri == rows.end()) ri = rows.insert(rows.end(), ro);
      auto ci = std::find(cols.begin(), cols.end(), co);
      if (ci == cols.end()) ci = cols.insert(cols.end(), co);
      t.row_block = static_cast<int>(ri - rows.begin());
      t.col_block = static_cast<int>(ci - cols.begin());
      for (int j = 0; j < 4; ++j) t.c[static_cast<std::size_t>(j)] = find(mc, ro + 8 * (j / 2), co + j % 2, "accumulator");
      tiles.push_back(t);
    }
    // Row blocks in order, each row's column blocks alternating direction, so
    // consecutive mmas share a fragment.
    std::stable_sort(tiles.begin(), tiles.end(), [&](const TileRef& x, const TileRef& y) {
      if (rows[static_cast<std::size_t>(x.row_block)] != rows[static_cast<std::size_t>(y.row_block)])
        return rows[static_cast<std::size_t>(x.row_block)] < rows[static_cast<std::size_t>(y.row_block)];
      const bool back = x.row_block % 2 == 1;
      const int cx = cols[static_cast<std::size_t>(x.col_block)], cy = cols[static_cast<std::size_t>(y.col_block)];
      return back ? cx > cy : cx < cy;
    });
    const int K = ta.shape[1];
    line(fmt::format("{} v{}[{}];", et == DType::i8 ? "int" : "float", id, R(id)));
    for (int r = 0; r < R(id); ++r) line(fmt::format("v{}[{}] = {};", id, r, opnd(id, 2, r)));
    // Operands that are cp.async blocks: their stage in shared memory, read in place.
    std::array<SmemOperand, 2> sm{smem_operand(n.args[0]), smem_operand(n.args[1])};
    // One .b32 operand register from the kw values at fragment coordinates (x, y0 + e) (A) or (y0 + e, x) (B).
    auto pack = [&](int operand, const std::vector<int>& regs) {
      if (sm[static_cast<std::size_t>(operand)].block >= 0)
        return smem_word(id, operand, sm[static_cast<std::size_t>(operand)], operand == 0 ? la : lb, regs, et);
      auto v = [&](int e) { return opnd(id, operand, regs[static_cast<std::size_t>(e)]); };
      if ((et == DType::bf16 || et == DType::f16) && regs.size() == 2 && regs[0] % 2 == 0 && regs[1] == regs[0] + 1)
        if (std::string w = packed_word(id, operand, regs[0] / 2, et); !w.empty()) return w;
      if (et == DType::f32) return fmt::format("tj_tf32({})", v(0));
      if (et == DType::bf16) return fmt::format("((__float_as_uint({}) & 0xffff0000u) | (__float_as_uint({}) >> 16))", v(1), v(0));
      if (et == DType::f16) return fmt::format("tj_pack_f16x2({}, {})", v(0), v(1));
      if (et == DType::i8)
        return fmt::format("tj_pack_b8x4((unsigned char)({}), (unsigned char)({}), (unsigned char)({}), (unsigned char)({}))", v(0),
                           v(1), v(2), v(3));
      return fmt::format("{}({}, {}, {}, {})", et == DType::f8e4nv ? "tj_pack_e4m3x4" : "tj_pack_e5m2x4", v(0), v(1), v(2), v(3));
    };
    const char* mma = et == DType::bf16 ? "tj_mma_bf16" : et == DType::f16 ? "tj_mma_f16" : et == DType::f32 ? "tj_mma_tf32"
                    : et == DType::i8   ? "tj_mma_s8"   : et == DType::f8e4nv ? "tj_mma_e4m3" : "tj_mma_e5m2";
    // The `count` .b32 registers of one fragment of `operand` (0: A, 1: B); register j packs the kw elements at(j, e).
    auto fragment = [&](int operand, const std::map<std::pair<int, int>, int>& table, int count, auto at) {
      std::string regs;
      for (int j = 0; j < count; ++j) {
        std::vector<int> r;
        for (int e = 0; e < kw; ++e) {
          const auto [x, y] = at(j, e);
          r.push_back(find(table, x, y, operand == 0 ? "A" : "B"));
        }
        regs += (j ? ", " : "") + pack(operand, r);
      }
      return regs;
    };
    line(fmt::format("// dot %{}: {} row x {} column blocks of m16n8k{} per thread, {} k steps", id, rows.size(), cols.size(), kstep,
                     K / kstep));
    // Blocks read along their rows (a, or b through trans) whose operand layout gives lane (g, t) the fragment
    // origin (g, kw·t) — mma.sync's own — are read with ldmatrix: each k step is 32 bytes of a row, two 16-byte
    // matrix columns; lane l addresses row l % 8 of matrix l / 8, and what thread (g, t) receives of matrix m is
    // exactly its fragment register m (for 8-bit types four elements, for tf32 one f32: ldmatrix moves bits).
    const int es = size_bytes(et);
    // B read MN-major (a [K, N] block, 16-bit) takes ldmatrix .trans: matrix m holds 8 K rows of 8 N columns,
    // delivered transposed, so thread (g, t) receives (k = 2t, 2t + 1; n = g) — its B register.
    std::array<bool, 2> ldsm{};
    bool ldsm_t = false;
    for (int j = 0; j < 2; ++j) {
      const SmemOperand& o = sm[static_cast<std::size_t>(j)];
      if (o.block < 0 || !mma_lane_origin(j == 0 ? la : lb, j, kw)) continue;
      ldsm_t = j == 1 && !o.trans && es == 2;
      ldsm[static_cast<std::size_t>(j)] = (j == 0 ? !o.trans : o.trans) || ldsm_t;
      if (!ldsm[static_cast<std::size_t>(j)]) continue;
      const ir::TileLayout& l = j == 0 ? la : lb;
      const int mn = j == 0 ? 0 : 1, kd = 1 - mn;  // the operand's M (N) dim and its K dim
      line(fmt::format("const unsigned tj_sa{}_{} = {};  // ldmatrix{} rows of block %{}", id, j, cp_block_addr(o.block, id),
                       ldsm_t ? " .trans" : "", o.block));
      if (ldsm_t) {
        // Row: the warp's K plus the K row this lane addresses (matrices 1, 3: 8 rows on); byte: the warp's N.
        line(fmt::format("const int tj_lr{0}_{1} = tj_c{2}_{3} - {4} * (tj_lane & 3) + (tj_lane & 15);", id, j, l.layout, l.dim_of[kd], kw));
        line(fmt::format("const int tj_lb{0}_{1} = (tj_c{2}_{3} - ((tj_lane >> 2) & 7)) * {4};", id, j, l.layout, l.dim_of[mn], es));
        continue;
      }
      // Row: the warp's part of the M (N) coordinate, plus the row this lane addresses; byte: the warp's K, plus
      // the matrix column (a: matrices 2, 3; b: matrices 1, 3 of a pair of column blocks).
      line(fmt::format("const int tj_lr{0}_{1} = tj_c{2}_{3} - ((tj_lane >> 2) & 7) + (tj_lane & {4});", id, j, l.layout, l.dim_of[mn],
                       j == 0 ? 15 : 7));
      line(fmt::format("const int tj_lb{0}_{1} = (tj_c{2}_{3} - {4} * (tj_lane & 3)) * {5} + 16 * ((tj_lane >> {6}) & 1);", id, j, l.layout,
                       l.dim_of[kd], kw, es, j == 0 ? 4 : 3));
    }
    for (int j = 0; j < 2; ++j)
      if (sm[static_cast<std::size_t>(j)].block >= 0 && !ldsm[static_cast<std::size_t>(j)])
        line(fmt::format("const unsigned char* const tj_op{}_{} = {};  // operand {} is block %{}{} in place", id, j,
                         block_ptr(sm[static_cast<std::size_t>(j)].block, id), j ? "b" : "a", sm[static_cast<std::size_t>(j)].block,
                         sm[static_cast<std::size_t>(j)].trans ? " (transposed)" : ""));
    // The lane's ldmatrix address at the k step ko for the row block / column block(s) `mn` (an M or N
    // register coordinate, or a select between two).
    auto ldsm_addr = [&](int j, const std::string& mn, int ko) {
      const int rows_of_block = k_[sm[static_cast<std::size_t>(j)].block].type.shape[0];
      if (j == 1 && ldsm_t)
        return fmt::format("tj_sa{0}_{1} + tj_swz128(tj_lr{0}_{1} + {2}, tj_lb{0}_{1} + ({3}) * {4}, {5})", id, j, ko, mn, es, rows_of_block);
      return fmt::format("tj_sa{0}_{1} + tj_swz128(tj_lr{0}_{1} + {2}, tj_lb{0}_{1} + {3}, {4})", id, j, mn, ko * es, rows_of_block);
    };
    const char* ldsm_b = ldsm_t ? "tj_ldsm_x4_t" : "tj_ldsm_x4";
    const char* ldsm_b2 = ldsm_t ? "tj_ldsm_x2_t" : "tj_ldsm_x2";
    auto tf32_round = [&](const std::string& r) {
      if (et == DType::f32) line(fmt::format("  {0} = tj_tf32(__uint_as_float({0}));", r));
    };
    for (int ko = 0; ko < K; ko += kstep) {
      line("{");
      // a[j·kw + e] sits at (g + 8·(j%2), kw·t + e + 4kw·(j/2)), b[j·kw + e] at (kw·t + e + 4kw·j, g); register
      // coordinates leave out the lane's part (g, kw·t).
      for (std::size_t i = 0; i < rows.size(); ++i) {
        if (ldsm[0]) {
          line(fmt::format("  unsigned ta{0}_{1}[4]; tj_ldsm_x4({2}, ta{0}_{1}[0], ta{0}_{1}[1], ta{0}_{1}[2], ta{0}_{1}[3]);", id, i,
                           ldsm_addr(0, std::to_string(rows[i]), ko)));
          for (int r = 0; r < 4; ++r) tf32_round(fmt::format("ta{}_{}[{}]", id, i, r));
          continue;
        }
        line(fmt::format("  const unsigned ta{}_{}[4] = {{{}}};", id, i, fragment(0, ma, 4, [&](int j, int e) {
                           return std::pair{rows[i] + 8 * (j % 2), ko + e + 4 * kw * (j / 2)};
                         })));
      }
      for (std::size_t i = 0; i < cols.size(); ++i) {
        if (ldsm[1]) {  // column blocks in pairs (x4), the last alone (x2)
          if (i % 2 == 1) continue;
          if (i + 1 < cols.size()) {
            line(fmt::format("  unsigned tb{0}_{1}[2], tb{0}_{2}[2]; {4}({3}, tb{0}_{1}[0], tb{0}_{1}[1], tb{0}_{2}[0], tb{0}_{2}[1]);",
                             id, i, i + 1, ldsm_addr(1, fmt::format("((tj_lane >> 4) ? {} : {})", cols[i + 1], cols[i]), ko), ldsm_b));
            for (int r = 0; r < 4; ++r) tf32_round(fmt::format("tb{}_{}[{}]", id, i + r / 2, r % 2));
          } else {
            line(fmt::format("  unsigned tb{0}_{1}[2]; {3}({2}, tb{0}_{1}[0], tb{0}_{1}[1]);", id, i,
                             ldsm_addr(1, std::to_string(cols[i]), ko), ldsm_b2));
            for (int r = 0; r < 2; ++r) tf32_round(fmt::format("tb{}_{}[{}]", id, i, r));
          }
          continue;
        }
        line(fmt::format("  const unsigned tb{}_{}[2] = {{{}}};", id, i, fragment(1, mb, 2, [&](int j, int e) {
                           return std::pair{ko + e + 4 * kw * j, cols[i]};
                         })));
      }
      for (const TileRef& t : tiles)
        line(fmt::format("  {}(v{}[{}], v{}[{}], v{}[{}], v{}[{}], ta{}_{}[0], ta{}_{}[1], ta{}_{}[2], ta{}_{}[3], tb{}_{}[0], tb{}_{}[1]);",
                         mma, id, t.c[0], id, t.c[1], id, t.c[2], id, t.c[3], id, t.row_block, id, t.row_block, id,
                         t.row_block, id, t.row_block, id, t.col_block, id, t.col_block));
      line("}");
    }
  }

  /// An mma.sync operand read in place from a cp.async block: the block (-1: registers) and whether the operand
  /// is its transpose (b = trans(block [N, K])).
  struct SmemOperand {
    int block = -1;
    bool trans = false;
  };
  SmemOperand smem_operand(int a) const {
    if (!cp_ || !plan_.in_smem[static_cast<std::size_t>(a)]) return {};
    if (k_[a].op == Op::trans) return {k_[a].args[0], true};
    return {a, false};
  }
  /// Whether mma.sync operand layout `l` (which: 0 = A [M, K], 1 = B [K, N]) gives lane l the coordinates
  /// (l / 4, kw · (l % 4)) (A) or (kw · (l % 4), l / 4) (B) beside its warp's and registers' parts: the fragment
  /// origins ldmatrix delivers.
  bool mma_lane_origin(const ir::TileLayout& l, int which, int kw) const {
    const ir::Distributed& d = D(l);
    if (!d.additive || l.dim_of[0] < 0 || l.dim_of[1] < 0) return false;
    for (int lane = 0; lane < 32; ++lane) {
      std::array<int, 2> c{0, 0};
      for (const auto& g : d.lane)
        for (int t = 0; t < 2; ++t) c[static_cast<std::size_t>(t)] += (lane / g.stride) % g.radix * g.image[static_cast<std::size_t>(l.dim_of[static_cast<std::size_t>(t)])];
      const std::array<int, 2> want = which == 0 ? std::array<int, 2>{lane / 4, kw * (lane % 4)} : std::array<int, 2>{kw * (lane % 4), lane / 4};
      if (c != want) return false;
    }
    return true;
  }
  /// The ring of cp.async block `x`, read by dot `dot` (Unsupported when `x` is in none).
  const Pipe& pipe_of_block(int x, int dot) const {
    const Pipe* p = pipe_of_load(x);
    if (!p) throw Unsupported(fmt::format("dot %{}: operand %{} is not a cp.async block", dot, x));
    return *p;
  }
  /// Block `x`'s byte offset from its ring's start in the current stage (the dot must sit in the ring's loop).
  std::string stage_offset(int x, int dot) const {
    const Pipe& p = pipe_of_block(x, dot);
    return fmt::format("tj_st{} * {}u + {}u", p.loop, p.stage_bytes, load_offset(p, x));
  }
  /// A generic pointer to cp.async block `x`: its resident region, or the current stage of its loop's ring.
  std::string block_ptr(int x, int dot) const {
    if (const Resident* r = resident_of(x)) return fmt::format("(tj_smem_raw + {}u)", r->off);
    return fmt::format("tj_smem_raw + {}u + {}", pipe_of_block(x, dot).ring_off, stage_offset(x, dot));
  }
  /// The shared address (32-bit) of cp.async block `x`: its resident region, or the current stage of its ring.
  std::string cp_block_addr(int x, int dot) const {
    if (resident_of(x)) return fmt::format("tj_res{}", x);
    return fmt::format("tj_ring{} + {}", pipe_of_block(x, dot).loop, stage_offset(x, dot));
  }
  /// One .b32 mma.sync operand register of dot `dot` read from its block in shared memory: the kw elements at the
  /// operand-layout registers `regs` (consecutive along K). Their coordinates are those registers' in layout `l`;
  /// the block holds element (row, col) at tj_swz128(row, col · size) (trans: the operand's (k, n) is the
  /// block's (n, k)). Along the block's rows (operand a, or b through trans) the kw elements are one aligned
  /// 32-bit word; down its columns (b read directly, MN-major) they are kw loads. tf32 rounds the f32 it reads.
  std::string smem_word(int dot, int operand, const SmemOperand& s, const ir::TileLayout& l, const std::vector<int>& regs,
                        DType et) const {
    const int es = size_bytes(et), rows = k_[s.block].type.shape[0];
    auto at = [&](int r) {
      std::string d0 = coord(l, r, 0), d1 = coord(l, r, 1);
      if (s.trans) std::swap(d0, d1);
      return fmt::format("tj_op{}_{} + tj_swz128({}, {} * {}, {})", dot, operand, d0, d1, es, rows);
    };
    if (et == DType::f32) return fmt::format("tj_tf32(*(const float*)({}))", at(regs[0]));
    if (operand == 0 || s.trans) return fmt::format("*(const unsigned*)({})", at(regs[0]));
    const char* ty = es == 2 ? "unsigned short" : "unsigned char";
    std::string w;
    for (std::size_t e = 0; e < regs.size(); ++e)
      w += fmt::format("{}((unsigned)*(const {}*)({}) << {})", e ? " | " : "", ty, at(regs[e]), 8 * es * static_cast<int>(e));
    return "(" + w + ")";
  }

  /// acc + a·b with wgmma.mma_async m64nNk16 (sm_90a), operands from shared
  /// memory. Both operands are staged K-major with the 128-byte swizzle (A as
  /// [M,K], B transposed to [N,K]): rows of 64 16-bit elements, 8-row atoms of
  /// 1024 bytes, 16-byte chunk c of row r stored at chunk c ^ (r % 8) (PTX ISA,
  /// "Shared memory matrix layout", 128B swizzle). Descriptors: start address,
  /// leading offset unused for swizzled K-major (1), stride 1024 bytes between
  /// 8-row groups, swizzle mode 1 (128B); a 16-deep k step inside a row
  /// advances the start address by 32 bytes. One warp group per 64 rows of
  /// the tile, one instruction across all N columns (N <= 256, NPOT allowed:
  /// N = 96 gives 48 accumulator registers).
  void emit_wgmma(int id) {
    const Node& n = k_[id];
    const int a = n.args[0], b = n.args[1];
    const ir::Type& ta = k_[a].type;
    const int M = ta.shape[0], K = ta.shape[1], N = n.type.shape[1];
    const bool bf = ta.dtype == DType::bf16;
    const int a_bytes = M * K * 2, b_off = align_1k(a_bytes), b_bytes = N * K * 2;
    smem_bytes_ = std::max(smem_bytes_, b_off + b_bytes);
    smem_align_ = 1024;
    const char* to16 = bf ? "tj_f32_to_bf16" : "tj_f32_to_f16";
    // 1. stage the operands (owners of each element write it once)
    auto stage = [&](int val, bool transpose, int rows, int base) {
      const ir::TileLayout& tl = TL(val);
      const std::string own = owner_predicate(tl);
      // Runs of 8 registers holding consecutive k (A: k is the minor dim) go out
      // as one 16-byte store: the swizzle permutes whole 16-byte chunks.
      const int kdim = transpose ? 0 : 1, pd = tl.dim_of[static_cast<std::size_t>(kdim)];
      int run = 1;
      for (const auto& g : D(tl).reg) {
        if (g.radix != 2 || g.stride != run || pd < 0 || g.image[static_cast<std::size_t>(pd)] != run) break;
        run *= 2;
      }
      const bool vec = run >= 8;
      for (int r = 0; r < R(val); ++r) {
        if (canonical(r, val) != r) continue;
        if (vec) {
          if (r % 8 != 0) continue;
          const std::string row = coord(tl, r, 0), kk = coord(tl, r, 1);
          const std::string off = fmt::format("{} + (({}) >> 6) * {} + ({}) * 128 + (((({}) & 63) >> 3) ^ (({}) & 7)) * 16", base, kk,
                                              rows * 128, row, kk, row);
          std::string words;
          for (int w = 0; w < 4; ++w)
            words += fmt::format("{}(unsigned){}({}) | ((unsigned){}({}) << 16)", w ? ", " : "", to16, v(val, r + 2 * w), to16, v(val, r + 2 * w + 1));
          const std::string st = fmt::format("*(tj_v16*)(tj_smem + {}) = tj_v16{{{{{}}}}};", off, words);
          line(own.empty() ? st : fmt::format("if ({}) {}", own, st));
          continue;
        }
        const std::string row = coord(tl, r, transpose ? 1 : 0), kk = coord(tl, r, transpose ? 0 : 1);
        const std::string off = fmt::format("{} + (({}) >> 6) * {} + ({}) * 128 + (((((({}) & 63) * 2) >> 4) ^ (({}) & 7)) << 4) + ((({}) & 7) * 2)",
                                            base, kk, rows * 128, row, kk, row, kk);
        const std::string st = fmt::format("*(unsigned short*)(tj_smem + {}) = {}({});", off, to16, v(val, r));
        line(own.empty() ? st : fmt::format("if ({}) {}", own, st));
      }
    };
    line(fmt::format("// dot %{}: wgmma m64n{}k16, operands staged in shared memory (128B swizzle)", id, N));
    plan_diag_.push_back(fmt::format("dot %{}: wgmma m64n{}k16, operands staged from registers through {} bytes of shared memory "
                                     "(descriptor blocks would be read in place)", id, N, b_off + b_bytes));
    stage(a, false, M, 0);
    stage(b, true, N, b_off);
    line("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
    line(sync());
    // 2. the accumulator and the instructions
    line(fmt::format("float v{}[{}];", id, R(id)));
    for (int r = 0; r < R(id); ++r) line(fmt::format("v{}[{}] = {};", id, r, opnd(id, 2, r)));
    line(fmt::format("const unsigned tj_sa{} = tj_smem_addr(tj_smem) + tj_wgu * {}u;", id, 64 * 128));
    line(fmt::format("const unsigned tj_sb{} = tj_smem_addr(tj_smem) + {};", id, b_off));
    WgmmaOperand A{fmt::format("tj_sa{}", id), M}, B{fmt::format("tj_sb{}", id), N};
    emit_wgmma_instructions(id, id, A, B, N, K, ta.dtype);
    wgmma_wait(0);
    line(sync() + "  // the staging buffer may be written again (a later iteration)");
  }

  /// Where a wgmma operand comes from. K-major blocks (A as [M, K], B as the
  /// trans of an [N, K] block) are held in 128-byte slabs of `rows` rows each
  /// (slab s: K bytes 128·s .. 128·s + 127); a 32-byte k step inside a slab
  /// advances the start address. An MN-major B block [K, N] (no trans, 16-bit
  /// only: the transpose immediate) holds N in 64-element slabs of K rows:
  /// descriptor LBO = the slab stride (K·128 bytes, between 64-wide N blocks),
  /// SBO = 1024 (between 8-row K groups) — CUTLASS's canonical MN-major SW128
  /// layout ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)). Register A (`regs`): the
  /// A fragment registers of each k16 step, found by coordinate in `layout_of`.
  struct WgmmaOperand {
    std::string addr;  // shared address (this warp group's rows for A)
    int rows = 0;      // rows of the block (slab stride = rows · w bytes)
    int w = 128;       // slab width in bytes = the swizzle span (128, 64 or 32)
    bool mn_major = false;
    int regs_of = -1;  // register A: the dot whose operand 0 supplies it
  };

  /// fence; one wgmma per 32-byte k step; commit. The accumulator registers
  /// are those of node `acc` (the instruction's d_i are found by coordinate
  /// in the layout of `id`).
  /// zero_acc: the accumulator is a zero tile, not initialised — the first instruction has scale-d = 0 (D = A·B)
  /// and only writes the registers.
  void emit_wgmma_instructions(int id, int acc, const WgmmaOperand& A, const WgmmaOperand& B, int N, int K, DType et,
                               bool zero_acc = false) {
    const ir::TileLayout& lc = TL(id);
    std::map<std::pair<int, int>, int> table;
    for (int r = 0; r < R(id); ++r) table.emplace(std::pair{D(lc).register_coord(r, 0), D(lc).register_coord(r, 1)}, r);
    std::string regs, cons, cons_first;
    for (int i = 0; i < N / 2; ++i) {
      auto it = table.find({8 * ((i % 4) / 2), i % 2 + 8 * (i / 4)});
      if (it == table.end()) throw Unsupported(fmt::format("dot %{}: wgmma register d{} has no register in the accumulator layout", id, i));
      regs += fmt::format("{}%{}", i ? ", " : "", i);
      cons += fmt::format("{}\"+{}\"(v{}[{}])", i ? ", " : "", et == DType::i8 ? 'r' : 'f', acc, it->second);
      cons_first += fmt::format("{}\"{}{}\"(v{}[{}])", i ? ", " : "", zero_acc ? '=' : '+', et == DType::i8 ? 'r' : 'f', acc, it->second);
    }
    // Register A: per k16 step four .b32 registers, {(g, 2t..2t+1), (g+8, ..), (g, 2t+8..), (g+8, 2t+8..)} of
    // the warp's 16 rows (g = lane / 4, t = lane % 4) — found by register coordinate in the operand's layout.
    std::map<std::pair<int, int>, int> atab;
    if (A.regs_of >= 0) {
      const ir::TileLayout la = plan_.operand_layout(k_, A.regs_of, 0);
      for (int r = 0; r < this->regs(la); ++r) atab.emplace(std::pair{D(la).register_coord(r, 0), D(la).register_coord(r, 1)}, r);
    }
    // A register operand that is a cast of f32 values in the same registers (P = cast<bf16>(p) in attention)
    // is packed from the f32 values by one cvt.rn.{bf16,f16}x2 per pair: the same round-to-nearest-even,
    // without first rounding each element in an f32 register.
    int precast = -1;
    if (A.regs_of >= 0) {
      const int a = k_[A.regs_of].args[0];
      if (TL(a) == plan_.operand_layout(k_, A.regs_of, 0)) precast = f32_cast_source(a);
    }
    auto a_index = [&](int row, int col) {
      auto it = atab.find({row, col});
      if (it == atab.end()) throw Unsupported(fmt::format("dot %{}: no A register for ({}, {}) in the wgmma operand layout", id, row, col));
      return it->second;
    };
    auto a_reg = [&](int row, int col) {
      const int r = a_index(row, col);
      return precast >= 0 ? v(precast, r) : opnd(A.regs_of, 0, r);
    };
    auto pack_regs = [&](const std::string& lo, const std::string& hi) {
      if (precast >= 0) return fmt::format("{}({}, {})", et == DType::bf16 ? "tj_pack_bf16x2" : "tj_pack_f16x2", lo, hi);
      if (et == DType::bf16) return fmt::format("((__float_as_uint({}) & 0xffff0000u) | (__float_as_uint({}) >> 16))", hi, lo);
      return fmt::format("tj_pack_f16x2({}, {})", lo, hi);
    };
    // The A fragment's .b32 holding (row, col) and (row, col + 1): a word of a packed operand (plan_packed) when
    // the two are its registers 2i and 2i + 1, else the two registers packed.
    const int a_val = A.regs_of >= 0 ? k_[A.regs_of].args[0] : -1;
    const bool a_packed = a_val >= 0 && packed(a_val) && TL(a_val) == plan_.operand_layout(k_, A.regs_of, 0);
    auto pack = [&](int row, int col) {
      const int r = a_index(row, col);
      if (a_packed && r % 2 == 0 && a_index(row, col + 1) == r + 1) return fmt::format("v{}[{}]", a_val, r / 2);
      return pack_regs(a_reg(row, col), a_reg(row, col + 1));
    };
    // Register A is packed for every k step before the fence: registers an in-flight wgmma reads must not be
    // written between wgmma.fence and the instruction (ptxas would inject a warpgroup.arrive per step).
    if (A.regs_of >= 0) {
      line(fmt::format("unsigned tj_pa{}[{}][4];", id, K / 16));
      for (int k0 = 0; k0 < K; k0 += 16) {
        const int s = k0 / 16;
        line(fmt::format("tj_pa{0}[{1}][0] = {2}; tj_pa{0}[{1}][1] = {3}; tj_pa{0}[{1}][2] = {4}; tj_pa{0}[{1}][3] = {5};", id, s,
                         pack(0, k0), pack(8, k0), pack(0, k0 + 8), pack(8, k0 + 8)));
      }
    }
    if (pingpong_ && id == pp_first_) {
      line("asm volatile(\"bar.sync %0, 256;\" :: \"r\"(2 + tj_warp / 4) : \"memory\");  // this warp group's turn");
      in_turn_ = true;
    }
    line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
    // One instruction covers 32 bytes of K: k16 for 16-bit types, k32 for f8 (whose wgmma has no transpose immediates).
    const int es = size_bytes(et), kstep = 32 / es;
    const char* ty = et == DType::bf16 ? "bf16" : et == DType::f16 ? "f16" : et == DType::f8e4nv ? "e4m3"
                   : et == DType::f8e5 ? "e5m2" : et == DType::f32 ? "tf32" : "s8";
    const char* dty = et == DType::i8 ? "s32" : "f32";
    if (B.mn_major && es != 2) throw Unsupported(fmt::format("dot %{}: an MN-major B block needs a 16-bit type (wgmma transposes only those)", id));
    // 128-byte slabs keep the original helpers (the text of kernels with 128-byte slabs is unchanged); narrower
    // slabs name their swizzle span.
    auto kdesc = [](int w, const std::string& at) {
      return w == 128 ? fmt::format("tj_wgmma_desc({})", at) : fmt::format("tj_wgmma_desc_sw({}, {})", at, w);
    };
    // One descriptor per operand at its block's start; each k step adds its byte offset / 16 to the low word
    // (tj_wgmma_desc_at). Every offset is a multiple of 16: k steps are 32 bytes, slabs and rows whole.
    if (A.regs_of < 0) line(fmt::format("const unsigned long long tj_da{} = {};", id, kdesc(A.w, A.addr)));
    if (B.mn_major)  // LBO = the slab stride between w-byte MN blocks
      line(fmt::format("const unsigned long long tj_db{} = {};", id,
                       B.w == 128 ? fmt::format("tj_wgmma_desc_mn({}, {}u)", B.addr, B.rows * 128)
                                  : fmt::format("tj_wgmma_desc_mn_sw({}, {}u, {})", B.addr, B.rows * B.w, B.w)));
    else
      line(fmt::format("const unsigned long long tj_db{} = {};", id, kdesc(B.w, B.addr)));
    auto desc_at = [&](const char* base, int bytes) {
      if (bytes % 16 != 0) throw Unsupported(fmt::format("dot %{}: a wgmma operand offset of {} bytes is not a multiple of 16", id, bytes));
      return bytes == 0 ? fmt::format("{}{}", base, id) : fmt::format("tj_wgmma_desc_at({}{}, {}u)", base, id, bytes / 16);
    };
    for (int k0 = 0; k0 < K; k0 += kstep) {
      const int aslab = k0 * es / A.w, akin = (k0 * es) % A.w;
      const int bslab = k0 * es / B.w, bkin = (k0 * es) % B.w;
      // MN-major B: k0 rows of w bytes each; K-major: slab bslab, bkin bytes into its rows.
      const std::string bd = desc_at("tj_db", B.mn_major ? k0 * B.w : bslab * B.rows * B.w + bkin);
      const bool first = k0 == 0;
      const int scale_d = zero_acc && first ? 0 : 1;
      const std::string& cn = first ? cons_first : cons;
      if (A.regs_of >= 0) {
        // scale-d, imm-scale-a, imm-scale-b, imm-trans-b
        const std::string pa = fmt::format("tj_pa{}[{}]", id, k0 / 16);
        line(fmt::format("asm volatile(\"{{ wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{} {{{}}}, {{%{}, %{}, %{}, %{}}}, %{}, {}, 1, 1, {}; }}\" : {} : "
                         "\"r\"({}[0]), \"r\"({}[1]), \"r\"({}[2]), \"r\"({}[3]), \"l\"({}));",
                         N, kstep, dty, ty, ty, regs, N / 2, N / 2 + 1, N / 2 + 2, N / 2 + 3, N / 2 + 4, scale_d, B.mn_major ? 1 : 0, cn, pa, pa, pa, pa, bd));
        continue;
      }
      // Transpose immediates exist for 16-bit types only; integer wgmma has no scale immediates either.
      const std::string imm = es == 2 ? fmt::format("{}, 1, 1, 0, {}", scale_d, B.mn_major ? 1 : 0) : et == DType::i8 ? fmt::format("{}", scale_d)
                                                                                                     : fmt::format("{}, 1, 1", scale_d);
      line(fmt::format("asm volatile(\"{{ wgmma.mma_async.sync.aligned.m64n{}k{}.{}.{}.{} {{{}}}, %{}, %{}, {}; }}\" : {} : \"l\"({}), \"l\"({}));",
                       N, kstep, dty, ty, ty, regs, N / 2, N / 2 + 1, imm, cn, desc_at("tj_da", aslab * A.rows * A.w + akin), bd));
    }
    line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
    if (ev_wgmma_ >= 0) {  // the group is issued: its sequence number in this warp group, the warp group above bit 24
      line(fmt::format("if (tj_tid % 128 == 0) {}", event_call(ev_wgmma_, 0, "((unsigned)(tj_tid / 128) << 24) | tj_wgi")));
      line("++tj_wgi;");
    }
    if (pingpong_ && id == pp_last_) {
      line("asm volatile(\"bar.arrive %0, 256;\" :: \"r\"(3 - tj_warp / 4) : \"memory\");  // the other group's turn");
      in_turn_ = false;
    }
  }

  /// Before top-level loop `L`: wait once for every resident block (copied once per program, e.g. attention's Q)
  /// that a dot in its body reads, instead of an mbarrier try_wait per iteration; later reads skip the wait.
  void wait_resident_before(int L) {
    if (cp_) return;  // a cp.async resident block is waited for where it is loaded
    if (parent_.empty() || parent_[static_cast<std::size_t>(L)] >= 0) return;  // a loop in a loop may run zero times: its wait would not hold after
    for (int id = L + 1; id < loop_end_[static_cast<std::size_t>(L)]; ++id) {
      if (k_[id].op != Op::dot) continue;
      for (int j = 0; j < 2; ++j) {
        int x = k_[id].args[static_cast<std::size_t>(j)];
        if (x >= 0 && k_[x].op == Op::trans) x = k_[x].args[0];
        if (x < 0 || !resident_of(x) || resident_landed_.count(x)) continue;
        line(fmt::format("tj_mbar_wait(tj_rbar{}, 0u);  // block %{} has landed (once, before loop %{})", x, x, L));
        resident_landed_.insert(x);
      }
    }
  }

  /// The shared address of TMA block `x` now: its resident region, or the
  /// current stage of its loop's ring (the dot must sit in that loop).
  std::string block_addr(int x, int dot) {
    if (resident_of(x)) {
      if (!resident_landed_.count(x))
        line(fmt::format("tj_mbar_wait(tj_rbar{}, 0u);  // block %{} has landed (returns at once after the first time)", x, x));
      return fmt::format("tj_res{}", x);
    }
    if (const ItemBlock* b = item_of(x)) {
      line(fmt::format("tj_mbar_wait(tj_ibar{}, tj_oit{} & 1u);  // block %{} of this iteration of loop %{} has landed", x, b->loop, x, b->loop));
      return fmt::format("tj_item{}", x);
    }
    const Pipe* p = pipe_of_load(x);
    if (!p) throw Unsupported(fmt::format("dot %{}: operand %{} is not a TMA block", dot, x));
    return fmt::format("(tj_ring{} + tj_st{} * {}u + {}u)", p->loop, p->loop, p->stage_bytes, load_offset(*p, x));
  }

  /// acc + a·b with wgmma reading TMA blocks in place: b is the trans of a
  /// block (K-major) or a block (MN-major, 16-bit); a is a block (K-major) or
  /// registers (register-A form). No staging. An async dot (plan_pipes)
  /// accumulates in place into its loop-carried accumulator and is retired by
  /// the loop's tail; any other waits for itself.
  void emit_wgmma_smem(int id) {
    const Node& n = k_[id];
    const int a = n.args[0], b = n.args[1];
    const bool b_trans = k_[b].op == Op::trans;
    const int bl = b_trans ? k_[b].args[0] : b;
    const bool a_smem = plan_.in_smem[static_cast<std::size_t>(a)];
    if (k_[bl].op != Op::desc_load || (a_smem && k_[a].op != Op::desc_load))
      throw Unsupported(fmt::format("dot %{}: shared-memory operands must be descriptor blocks (a: a block or registers; b: a block "
                                    "or the trans of one)", id));
    const ir::Type& ta = k_[a].type;
    const int M = ta.shape[0], K = ta.shape[1];
    // Warp groups side by side along N (plan: 64 rows, several groups) each issue m64n(N/wn) on their own columns.
    const int wn = std::max(1, plan_.dot_split[static_cast<std::size_t>(id)][1]), N = n.type.shape[1] / wn;
    const bool async = alias_[static_cast<std::size_t>(id)] >= 0;
    const int acc = async ? alias_[static_cast<std::size_t>(id)] : id;
    line(fmt::format("// dot %{}: wgmma m64n{} straight from TMA blocks (a {}, b {}; {}){}", id, N, a_smem ? "K-major block" : "registers",
                     b_trans ? "K-major" : "MN-major", async ? "left in flight" : "waited for",
                     wn > 1 ? fmt::format("; {} warp groups side by side along N", wn) : ""));
    WgmmaOperand A, B;
    if (a_smem) {
      A.w = slab_w(a);
      A.addr = wn > 1 ? block_addr(a, id) : fmt::format("({} + tj_wgu * {}u)", block_addr(a, id), 64 * A.w);
      A.rows = M;
    } else {
      A.regs_of = id;
    }
    B.addr = block_addr(bl, id);
    B.rows = k_[bl].type.shape[0];
    B.w = slab_w(bl);
    B.mn_major = !b_trans;
    if (wn > 1) {
      // This group's N columns: K-major, N rows of w bytes further into every slab; MN-major, whole slabs of N
      // further (the plan splits N at slab boundaries only).
      const int es = size_bytes(ta.dtype);
      if (B.mn_major && N * es % B.w != 0)
        throw Unsupported(fmt::format("dot %{}: {} warp groups split N = {} at {} bytes, inside a {}-byte slab of its MN-major B", id, wn,
                                      N * wn, N * es, B.w));
      const int step = B.mn_major ? N * es / B.w * B.rows * B.w : N * B.w;
      B.addr = fmt::format("({} + tj_wgu * {}u)", B.addr, step);
    }
    // A zero accumulator (S = Q·Kᵀ each iteration) is not written register by register: the first wgmma
    // ignores it (scale-d = 0).
    const bool zero_acc = !async && is_zero_tile(n.args[2]);
    if (!async) {
      line(fmt::format("{} v{}[{}];{}", reg_type(n.type), id, R(id), zero_acc ? "  // = A·B: the first wgmma has scale-d = 0" : ""));
      if (!zero_acc)
        for (int r = 0; r < R(id); ++r) line(fmt::format("v{}[{}] = {};", id, r, opnd(id, 2, r)));
    }
    emit_wgmma_instructions(id, acc, A, B, N, K, ta.dtype, zero_acc);
    if (async) return;
    // The wait is deferred to the first node that reads the result (or a loop boundary, or the end of the
    // iteration), so independent work overlaps the tensor cores — e.g. the softmax of S_j while O += P_{j-1}·V_{j-1}
    // runs (FlashAttention-3's intra-warp-group overlap, arXiv 2407.08608 §3.2). A register-A wgmma may be left
    // in flight too (Options::overlap_register_wgmma): its A registers (tj_pa<id>) are packed for it alone and
    // never written again.
    if (a_smem || o_.overlap_register_wgmma) {
      deferred_.push_back(id);
      return;
    }
    wgmma_wait(0);
  }

  /// How many of the oldest deferred wgmma must complete before node `id` runs: up to the newest one it reads;
  /// all at a loop boundary of a loop that issues wgmma (the count of groups in flight must not depend on the
  /// trip count); for a loop without wgmma (e.g. the zero-or-one-trip mask of attention's edge blocks), up to
  /// the newest one its body reads.
  std::size_t deferred_needed_by(int id) const {
    const Node& n = k_[id];
    std::size_t need = 0;
    auto reads = [&](int a) {
      const auto it = std::find(deferred_.begin(), deferred_.end(), a);
      if (it != deferred_.end()) need = std::max(need, static_cast<std::size_t>(it - deferred_.begin()) + 1);
    };
    if (n.op == Op::loop_begin || n.op == Op::loop_end) {
      const int b = n.op == Op::loop_begin ? id : n.args[0];
      const int e = loop_end_[static_cast<std::size_t>(b)];
      bool has_dot = false;
      for (int x = b; x <= e; ++x) has_dot |= k_[x].op == Op::dot;
      if (has_dot) return deferred_.size();
      if (n.op == Op::loop_begin)
        for (int x = b; x <= e; ++x)
          for (int a : k_[x].args)
            if (a >= 0) reads(a);
      return need;
    }
    for (int a : n.args)
      if (a >= 0) reads(a);
    return need;
  }

  /// Wait for the `count` oldest deferred wgmma (every one: count = all), leaving the newer ones in flight
  /// (wgmma groups complete in order: wait_group N waits for all but the N most recent), then pin their
  /// accumulator registers (an empty asm that "writes" them), so no read of a result is scheduled before the
  /// wait (CUTLASS's warpgroup_fence_operand).
  /// `trigger`: the node whose emission needs the results (-1: none, e.g. a ring refill or the kernel's end).
  void retire_deferred(std::size_t count, int trigger = -1) {
    if (count == 0) return;
    anchor_wait(count, trigger);
    wgmma_wait(deferred_.size() - count, "  // deferred wgmma complete");
    for (std::size_t i = 0; i < count; ++i) {
      const int d = deferred_[i];
      std::string cons;
      for (int r = 0; r < R(d); ++r) cons += fmt::format("{}\"+{}\"(v{}[{}])", r ? ", " : "", k_[d].type.dtype == DType::i32 ? 'r' : 'f', d, r);
      line(fmt::format("asm volatile(\"\" : {});", cons));
    }
    for (std::size_t i = 0; i < count; ++i)
      for (const ItemBlock& b : items_)
        if (b.anchor == deferred_[i]) {
          const auto it = std::find(pending_release_.begin(), pending_release_.end(), b.node);
          if (it == pending_release_.end()) continue;
          pending_release_.erase(it);
          emit_item_release(b);
        }
    deferred_.erase(deferred_.begin(), deferred_.begin() + static_cast<std::ptrdiff_t>(count));
  }
  void retire_deferred() { retire_deferred(deferred_.size()); }

  /// Options::anchor_deferred_waits: before the wait that retires the `count` oldest deferred wgmma for node
  /// `trigger` (none: no anchor), the same wait
  /// in a branch on the row reductions computed since the newest of them (a vote on `r == r`, true unless NaN:
  /// warp-uniform, and ptxas cannot evaluate it). ptxas otherwise schedules a wgmma.wait_group as early as it may —
  /// e.g. attention's wait for P·V right after the wait for S, before the softmax it was meant to overlap
  /// (docs/perf.md v0.11, v0.17) — but it does not hoist a wait out of a branch above the branch's condition, and
  /// the unconditional wait that follows (which keeps every path correct) stays behind it.
  void anchor_wait(std::size_t count, int trigger) {
    if (!o_.anchor_deferred_waits || t_.dialect != Dialect::cuda || trigger < 0) return;
    const Op op = k_[trigger].op;
    if (op == Op::loop_begin || op == Op::loop_end) return;
    const int scope = parent_[static_cast<std::size_t>(trigger)];
    std::vector<std::string> conds;
    for (int x = deferred_[count - 1] + 1; x < trigger; ++x) {
      const Node& n = k_[x];
      if (!ir::is_reduce(n.op) || !tile(x) || n.type.dtype != DType::f32 || parent_[static_cast<std::size_t>(x)] != scope) continue;
      std::set<int> regs;
      for (int r = 0; r < R(x); ++r) regs.insert(canonical(r, x));
      for (int r : regs) conds.push_back(fmt::format("{0} == {0}", v(x, r)));
    }
    if (conds.empty()) return;
    line(fmt::format("if (__all_sync(0xffffffffu, {})) asm volatile(\"wgmma.wait_group.sync.aligned {};\" ::: \"memory\");  "
                     "// anchors the wait below after the reductions above (ptxas would hoist it)",
                     fmt::join(conds, " && "), deferred_.size() - count));
  }

  /// One MFMA instruction family for an operand type on an arch (R x R output tile per wavefront).
  struct MfmaKind {
    const char* fn32;   // the builtin for R = 32 and for R = 16
    const char* fn16;
    int kw;             // consecutive K elements each lane holds (K per instruction = kw · 64 / R)
    int es;             // bytes per staged element
    const char* opnd;   // the builtin's operand type: a vector of kw elements, or kw bytes as one integer
    bool ints;          // i32 accumulator
    double scale;       // operands are staged as value · scale (f8 e4m3 on gfx94x: see emit_mfma)
  };
  /// The MFMA for operands of type `et` on `arch` (gfx90a, gfx94x), from the CDNA2 / CDNA3 ISA's MFMA tables:
  /// f16 / bf16 (_1k) 32x32x8 and 16x16x16; f32 32x32x2 and 16x16x4 (full f32 products; tf32 on NVIDIA);
  /// i8 32x32x16 / 16x16x32 on gfx94x (eight bytes a lane) and 32x32x8 / 16x16x16 on gfx90a (four);
  /// f8 e4m3 / e5m2 (fp8_fp8 / bf8_bf8) 32x32x16 / 16x16x32 from gfx940 on. Throws Unsupported naming the rule.
  MfmaKind mfma_kind(int id, DType et) const {
    const int kw = ir::mfma_k_width(et, t_.arch);  // the layout plan chose the instruction size by it
    switch (et) {
      case DType::f16: return {"__builtin_amdgcn_mfma_f32_32x32x8f16", "__builtin_amdgcn_mfma_f32_16x16x16f16", kw, 2, "tj_f16x4", false, 1};
      case DType::bf16:
        return {"__builtin_amdgcn_mfma_f32_32x32x8bf16_1k", "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k", kw, 2, "tj_i16x4", false, 1};
      case DType::f32: return {"__builtin_amdgcn_mfma_f32_32x32x2f32", "__builtin_amdgcn_mfma_f32_16x16x4f32", kw, 4, "float", false, 1};
      case DType::i8:
        if (kw == 8) return {"__builtin_amdgcn_mfma_i32_32x32x16_i8", "__builtin_amdgcn_mfma_i32_16x16x32_i8", kw, 1, "long", true, 1};
        return {"__builtin_amdgcn_mfma_i32_32x32x8i8", "__builtin_amdgcn_mfma_i32_16x16x16i8", kw, 1, "int", true, 1};
      case DType::f8e4nv:
      case DType::f8e5: {
        const char* user = et == DType::f8e4nv ? "f8e4m3 (f8e4nv)" : "f8e5m2 (f8e5)";
        if (kw == 0) throw Unsupported(fmt::format("dot %{}: {} MFMA needs gfx940 or newer (CDNA3's fp8 instructions); {} has none", id, user, t_.arch));
        if (et == DType::f8e4nv)
          return {"__builtin_amdgcn_mfma_f32_32x32x16_fp8_fp8", "__builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8", kw, 1, "long", false, 0.5};
        return {"__builtin_amdgcn_mfma_f32_32x32x16_bf8_bf8", "__builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8", kw, 1, "long", false, 1};
      }
      default:
        throw Unsupported(fmt::format("dot %{}: MFMA lowering takes f16, bf16, f32, i8, f8e4m3 or f8e5m2 operands, not {}", id, name(et)));
    }
  }

  /// acc + a·b with AMD MFMA (CDNA wave64; the instruction per type in mfma_kind), the accumulator (f32, i32 for
  /// i8) in the MFMA layout (layout/encodings/mfma.hpp). The operands are staged through shared memory from their
  /// own layouts (A as [M, K], B as [K, N], in their element size), then each wavefront reads its fragments: for
  /// an R x R instruction whose lanes hold kw consecutive K elements, lane l holds
  /// A[row0 + l % R][k + kw·(l / R) + 0..kw-1] and B[k + kw·(l / R) + 0..kw-1][col0 + l % R] (K = kw·64/R per
  /// instruction), and accumulator VGPR v holds D[row0 + 8·(v / 4)·(R == 32) + 4·(l / R) + v % 4][col0 + l % R]
  /// (AMD CDNA3 ISA, MFMA operand layouts; Triton's AMD MFMA lowering uses the same, with kWidth = kw).
  /// f8 on gfx94x: CDNA3's fp8 are the FNUZ formats (exponent bias one more than OCP's, NaN = 0x80, no
  /// infinity or -0). Every OCP e5m2 value is exactly an e5m2fnuz value, so e5m2 is converted as it is
  /// (v_cvt_pk_bf8_f32); OCP e4m3 reaches 448, past e4m3fnuz's 240, but v/2 is exact in e4m3fnuz for every OCP
  /// e4m3 v: the operands are staged as v/2 (v_cvt_pk_fp8_f32), the accumulator enters as acc/4 and leaves ×4
  /// (powers of two: exact). NaN inputs stay NaN; OCP e5m2 infinities become NaN.
  /// Compiled for gfx90a/gfx942 in CI; never run here (no AMD GPU).
  void emit_mfma(int id) {
    const Node& n = k_[id];
    const int a = n.args[0], b = n.args[1];
    const ir::Type& ta = k_[a].type;
    const DType et = ta.dtype;
    const MfmaKind mk = mfma_kind(id, et);
    const int M = ta.shape[0], K = ta.shape[1], N = n.type.shape[1];
    const int Rm = plan_.dot_mfma[static_cast<std::size_t>(id)], kstep = mk.kw * 64 / Rm, nacc = Rm * Rm / 64;
    if (K % kstep != 0)
      throw Unsupported(fmt::format("dot %{}: K = {} is not a multiple of the MFMA {}x{} instruction's K ({})", id, K, Rm, Rm, kstep));
    const auto [wM, wN] = plan_.dot_split[static_cast<std::size_t>(id)];
    const int a_bytes = M * K * mk.es, b_off = (a_bytes + 15) / 16 * 16;
    smem_bytes_ = std::max(smem_bytes_, b_off + K * N * mk.es);
    const char* st_t = mk.es == 4 ? "float" : mk.es == 2 ? "unsigned short" : "unsigned char";
    // Register value -> staged element.
    auto staged = [&](const std::string& x) -> std::string {
      switch (et) {
        case DType::f16: return fmt::format("tj_f32_to_f16({})", x);
        case DType::bf16: return fmt::format("tj_f32_to_bf16({})", x);
        case DType::f32: return x;
        case DType::i8: return fmt::format("(unsigned char)({})", x);
        case DType::f8e4nv: return fmt::format("(unsigned char)__builtin_amdgcn_cvt_pk_fp8_f32(({}) * 0.5f, 0.0f, 0, false)", x);
        default: return fmt::format("(unsigned char)__builtin_amdgcn_cvt_pk_bf8_f32({}, 0.0f, 0, false)", x);
      }
    };
    const std::string fn = Rm == 32 ? mk.fn32 : mk.fn16;
    line(fmt::format("// dot %{}: MFMA {}x{}x{} ({}) over wavefronts [{}, {}], operands staged in shared memory", id, Rm, Rm, kstep,
                     fn.substr(fn.find("mfma_")), wM, wN));
    plan_diag_.push_back(fmt::format("dot %{}: MFMA {}x{}x{}, operands [{},{}] and [{},{}] staged through {} bytes of shared memory",
                                     id, Rm, Rm, kstep, M, K, K, N, b_off + K * N * mk.es));
    auto stage = [&](int val, int cols, int base) {
      const ir::TileLayout& tl = TL(val);
      const std::string own = owner_predicate(tl);
      for (int r = 0; r < R(val); ++r) {
        if (canonical(r, val) != r) continue;
        const std::string st = fmt::format("(({}*)(tj_smem + {}))[({}) * {} + ({})] = {};", st_t, base, coord(tl, r, 0), cols,
                                           coord(tl, r, 1), staged(v(val, r)));
        line(own.empty() ? st : fmt::format("if ({}) {}", own, st));
      }
    };
    stage(a, K, 0);
    stage(b, N, b_off);
    line(sync());
    // Accumulator registers of instruction tile (rep_m, rep_n), VGPR v: found by register coordinate.
    const ir::TileLayout& lc = TL(id);
    std::map<std::pair<int, int>, int> table;
    for (int r = 0; r < R(id); ++r) table.emplace(std::pair{D(lc).register_coord(r, 0), D(lc).register_coord(r, 1)}, r);
    line(fmt::format("{} v{}[{}];", mk.ints ? "int" : "float", id, R(id)));
    for (int r = 0; r < R(id); ++r) line(fmt::format("v{}[{}] = {};", id, r, opnd(id, 2, r)));
    const std::string lr = fmt::format("(tj_lane % {})", Rm), lg = fmt::format("(tj_lane / {})", Rm);
    const std::string accv = fmt::format("tj_{}32x{}", mk.ints ? "i" : "f", Rm == 32 ? 16 : 4);
    const double acc_in = mk.scale * mk.scale;  // the products come out scaled by scale²
    // The kw elements of one lane's fragment as the builtin's operand: a vector of 16-bit values, one float, or kw
    // bytes packed little-endian into an int / long (the first K element in the lowest byte).
    auto fragment = [&](const std::string& p, int stride) {
      if (mk.kw == 1) return fmt::format("{}[0]", p);
      if (mk.es == 2)
        return fmt::format("__builtin_bit_cast({}, tj_i16x4{{(short){}[0], (short){}[{}], (short){}[{}], (short){}[{}]}})", mk.opnd, p, p, stride, p,
                           2 * stride, p, 3 * stride);
      std::string packed;
      const char* wide = mk.kw == 8 ? "(unsigned long long)" : "(unsigned)";
      for (int j = 0; j < mk.kw; ++j) packed += fmt::format("{}({}{}[{}] << {})", j ? " | " : "", wide, p, j * stride, 8 * j);
      return fmt::format("({})({})", mk.opnd, packed);
    };
    for (int rm = 0; rm < M / (Rm * wM); ++rm)
      for (int rn = 0; rn < N / (Rm * wN); ++rn) {
        const int om = Rm * wM * rm, on = Rm * wN * rn;
        std::vector<int> acc(static_cast<std::size_t>(nacc));
        for (int vg = 0; vg < nacc; ++vg) {
          auto it = table.find({om + (Rm == 32 ? 8 * (vg / 4) : 0) + vg % 4, on});
          if (it == table.end()) throw Unsupported(fmt::format("dot %{}: MFMA VGPR {} has no register in the accumulator layout", id, vg));
          acc[static_cast<std::size_t>(vg)] = it->second;
        }
        line("{");
        // Wavefronts from wM·wN on hold copies (an accumulator smaller than the program; layout_plan's mfma_plan).
        const std::string wf = wM * wN == o_.num_warps ? std::string("tj_warp") : fmt::format("(tj_warp % {})", wM * wN);
        line(fmt::format("  const int tj_r0 = {} + {} * ({} / {}), tj_c0 = {} + {} * ({} % {});", om, Rm, wf, wN, on, Rm, wf, wN));
        std::string init;
        for (int vg = 0; vg < nacc; ++vg)
          init += fmt::format("{}v{}[{}]{}", vg ? ", " : "", id, acc[static_cast<std::size_t>(vg)], acc_in != 1 ? fmt::format(" * {:.6g}f", acc_in) : "");
        line(fmt::format("  {} tj_d = {{{}}};", accv, init));
        line(fmt::format("  for (int tj_k = 0; tj_k < {}; tj_k += {}) {{", K, kstep));
        line(fmt::format("    const {0}* tj_pa = (const {0}*)tj_smem + (tj_r0 + {1}) * {2} + tj_k + {3} * {4};", st_t, lr, K, mk.kw, lg));
        line(fmt::format("    const {0}* tj_pb = (const {0}*)(tj_smem + {1}) + (tj_k + {2} * {3}) * {4} + tj_c0 + {5};", st_t, b_off, mk.kw, lg, N, lr));
        line(fmt::format("    tj_d = {}({}, {}, tj_d, 0, 0, 0);", fn, fragment("tj_pa", 1), fragment("tj_pb", N)));
        line("  }");
        for (int vg = 0; vg < nacc; ++vg)
          line(fmt::format("  v{}[{}] = tj_d[{}]{};", id, acc[static_cast<std::size_t>(vg)], vg, acc_in != 1 ? fmt::format(" * {:.1f}f", 1 / acc_in) : ""));
        line("}");
      }
    line(sync() + "  // the staging buffer may be written again (a later iteration)");
  }

  void emit_reduce(int id) {
    const Node& n = k_[id];
    const int src = n.args[0];
    const auto& sl = TL(src);
    if (tile(id) && TL(id).layout != sl.layout)
      throw Unsupported(fmt::format("reduction %{}: its result meets values of another layout family; converting "
                                    "reduction results is not supported yet", id));
    const ir::Distributed& d_ = D(sl);
    const int R_ = d_.registers;
    const int q = sl.dim_of[static_cast<std::size_t>(n.axis)];  // parent dim being reduced
    // A reduction of several operands together runs on their tuple (combine_type's struct), one per register.
    const int arity = arity_of(id);
    const std::string ty = arity > 1 ? combine_type(n.fn) : reg_type(n.type);
    auto element = [&](int r) { return combined_element(id, r); };  // (later operands in operand 0's layout)
    auto combine = [&](const std::string& a, const std::string& b) {
      if (n.op == Op::reduce_sum) return a + " + " + b;
      if (n.op == Op::reduce_custom) return fmt::format("tj_comb{}({}, {})", n.fn, a, b);
      return std::string(n.op == Op::reduce_max ? "tj_max(" : "tj_min(") + a + ", " + b + ")";
    };
    auto reduces = [&](const ir::InputDigit& g) { return q >= 0 && g.image[q] != 0; };
    // 1. registers: fold the digits whose image lies in the reduced dim.
    std::vector<int> canon;  // canonical output registers of the source view
    for (int r = 0; r < R_; ++r) {
      bool ok = canonical(r, src) == r;
      for (const auto& g : d_.reg)
        if (reduces(g) && (r / g.stride) % g.radix != 0) ok = false;
      if (ok) canon.push_back(r);
    }
    std::vector<int> red_offsets{0};
    for (const auto& g : d_.reg) {
      if (!reduces(g)) continue;
      std::vector<int> next;
      for (int o : red_offsets)
        for (int dgt = 0; dgt < g.radix; ++dgt) next.push_back(o + dgt * g.stride);
      red_offsets = next;
    }
    line(fmt::format("// reduce %{} along axis {} ({} registers x {} lanes-digits x {} warp-digits)", src, n.axis,
                     red_offsets.size(), std::count_if(d_.lane.begin(), d_.lane.end(), reduces),
                     std::count_if(d_.warp.begin(), d_.warp.end(), reduces)));
    for (std::size_t c = 0; c < canon.size(); ++c) {
      std::string acc = element(canon[c] + red_offsets[0]);
      line(fmt::format("{} r{}_{} = {};", ty, id, c, acc));
      for (std::size_t j = 1; j < red_offsets.size(); ++j)
        line(fmt::format("r{}_{} = {};", id, c, combine(fmt::format("r{}_{}", id, c), element(canon[c] + red_offsets[j]))));
    }
    // 2. lanes: butterfly over the lane digits that reduce.
    for (const auto& g : d_.lane) {
      if (!reduces(g)) continue;
      for (std::size_t c = 0; c < canon.size(); ++c) {
        std::string a = fmt::format("r{}_{}", id, c);
        // The shuffle of an 8- or 16-bit integer comes back as an int: cast it back, so tj_max / tj_min take the
        // register's own type (a mixed (short, int) call resolved to the f32 overload).
        const bool narrow = arity == 1 && is_int(n.type.dtype) && size_bytes(n.type.dtype) < 4;  // (a tuple's shuffle casts)
        line(fmt::format("{} = {};", a, combine(a, fmt::format("{}tj_shfl_xor({}, {})", narrow ? "(" + ty + ")" : "", a, g.stride))));
      }
    }
    // 3. warps: through shared memory, every thread folding the same warps in the same order. A warp digit of any
    // radix (12 warps: 2·2·3) reduces by reading all its p siblings: the base warp has the reduced digits zero.
    std::vector<ir::InputDigit> warp_red;
    for (const auto& g : d_.warp)
      if (reduces(g)) warp_red.push_back(g);
    if (!warp_red.empty()) {
      // The partials pass through shared memory in chunks of at most kScanScratchBytes of registers (a tuple's
      // element is several), every chunk between two barriers.
      const int bytes = element_bytes(id);
      const std::size_t chunk = static_cast<std::size_t>(std::max(1, kScanScratchBytes / (threads_ * bytes)));
      std::string base = "tj_warp";
      for (const auto& g : warp_red)
        base += g.radix == 2 && std::has_single_bit(static_cast<unsigned>(g.stride))
                    ? fmt::format(" - (tj_warp & {})", g.stride)
                    : fmt::format(" - ((tj_warp / {}) % {}) * {}", g.stride, g.radix, g.stride);
      line(fmt::format("{}* const tj_red{} = ({}*)tj_smem;", ty, id, ty));
      line(fmt::format("const int tj_w{} = {};  // the first warp of this warp's reduced group", id, base));
      int combos = 1;
      for (const auto& g : warp_red) combos *= g.radix;
      for (std::size_t c0 = 0; c0 < canon.size(); c0 += chunk) {
        const std::size_t c1 = std::min(canon.size(), c0 + chunk);
        smem_bytes_ = std::max(smem_bytes_, static_cast<int>(c1 - c0) * threads_ * bytes);
        for (std::size_t c = c0; c < c1; ++c)
          line(fmt::format("tj_red{}[{} + tj_tid] = r{}_{};", id, (c - c0) * static_cast<std::size_t>(threads_), id, c));
        line(sync());
        for (std::size_t c = c0; c < c1; ++c) {
          for (int m = 0; m < combos; ++m) {
            int w = 0, rest = m;
            for (const auto& g : warp_red) {
              w += (rest % g.radix) * g.stride;
              rest /= g.radix;
            }
            std::string elem = fmt::format("tj_red{}[{} + (tj_w{} + {}) * {} + tj_lane]", id, (c - c0) * static_cast<std::size_t>(threads_), id,
                                           w, t_.warp_size);
            line(m == 0 ? fmt::format("r{}_{} = {};", id, c, elem)
                        : fmt::format("r{}_{} = {};", id, c, combine(fmt::format("r{}_{}", id, c), elem)));
          }
        }
        line(sync() + "  // the scratch may be written again (a conversion, a later iteration)");
      }
    }
    // 4. the result: every register of the output takes its canonical partial.
    auto canon_index = [&](int r) {
      int c = r;
      for (const auto& g : d_.reg)
        if (digit_hidden(g, sl) || reduces(g)) c -= ((c / g.stride) % g.radix) * g.stride;
      for (std::size_t i = 0; i < canon.size(); ++i)
        if (canon[i] == c) return static_cast<int>(i);
      throw Unsupported("codegen: reduction register mapping failed");
    };
    if (arity == 1) {
      each_register(id, [&](int r) { return rounded(n.type, fmt::format("r{}_{}", id, canon_index(r))); });
      return;
    }
    // A tuple: every register's element stays in tj_rt<id> for the tuple_get nodes.
    const int R_out = tile(id) ? R(id) : 1;
    line(fmt::format("{} tj_rt{}[{}];", ty, id, R_out));
    for (int r = 0; r < R_out; ++r) line(fmt::format("tj_rt{}[{}] = r{}_{};", id, r, id, canon_index(r)));
    each_register(id, [&](int r) { return rounded(n.type, fmt::format("tj_rt{}[{}].v0", id, r)); });
  }

  /// An inclusive scan along one tile dim, computed in the value's own layout whatever its digits are. The digits
  /// along the scanned parent dim, least significant first, each join blocks of the scan into bigger ones: per
  /// register r the code keeps pre (the scan of r's element within its block) and tot (the block's total), and a
  /// digit of radix p joins p sibling blocks, pre taking the totals of the siblings before it (after it, reversed)
  /// and tot all p. Register digits join in the thread, lane digits (radix 2) by shfl.xor, warp digits (any radix)
  /// through shared memory: the mixed-radix form of a Kogge-Stone / Brent-Kung scan, one step per digit. tot is
  /// kept only in each block's first register (its other digits along the dim zero). Needs an additive layout whose
  /// digits along the dim map to that dim alone with weights 1, r0, r0·r1, ... (its positional system), which every
  /// distributed layout the plan makes is; anything else is refused with the layout named.
  void emit_scan(int id) {
    const Node& n = k_[id];
    const ir::TileLayout& tl = TL(id);
    const int q = tl.dim_of[static_cast<std::size_t>(n.axis)];
    if (q < 0) {  // a dim of size 1: the scan is the value itself (and each tuple_get its operand)
      each_register(id, [&](int r) { return opnd(id, 0, r); });
      return;
    }
    const ir::Distributed& d_ = D(tl);
    // A scan of several operands together runs on their tuple (combine_type's struct), one per register.
    const int arity = arity_of(id);
    const std::string ty = arity > 1 ? combine_type(n.fn) : reg_type(n.type);
    auto element = [&](int r) { return combined_element(id, r); };
    const bool rev = n.i == 1;
    auto combine = [&](const std::string& a, const std::string& b) {
      switch (n.op) {
        case Op::scan_sum: return a + " + " + b;
        case Op::scan_prod: return "(" + a + ") * (" + b + ")";
        case Op::scan_max: return "tj_max(" + a + ", " + b + ")";
        case Op::scan_custom: return fmt::format("tj_comb{}({}, {})", n.fn, a, b);
        default: return "tj_min(" + a + ", " + b + ")";
      }
    };
    struct Level {
      char where;  // 'r'egister, 'l'ane, 'w'arp
      ir::InputDigit g;
    };
    std::vector<Level> levels;
    auto refuse = [&](const std::string& why) {
      throw Unsupported(fmt::format("scan %{} along axis {}: {} (layout: {})", id, n.axis, why, layout_description(tl.layout)));
    };
    if (!d_.additive) refuse("its layout combines digits by XOR, so the elements along the axis have no digit order");
    auto collect = [&](char where, const std::vector<ir::InputDigit>& gs) {
      for (const auto& g : gs) {
        if (g.image[static_cast<std::size_t>(q)] == 0) continue;
        for (int x = 0; x < d_.rank; ++x)
          if (x != q && g.image[static_cast<std::size_t>(x)] != 0)
            refuse(fmt::format("a {} digit maps onto both parent dims", where == 'r' ? "register" : where == 'l' ? "lane" : "warp"));
        levels.push_back({where, g});
      }
    };
    collect('r', d_.reg);
    collect('l', d_.lane);
    collect('w', d_.warp);
    std::stable_sort(levels.begin(), levels.end(), [&](const Level& a, const Level& b) {
      return a.g.image[static_cast<std::size_t>(q)] < b.g.image[static_cast<std::size_t>(q)];
    });
    int weight = 1;
    for (const auto& l : levels) {
      if (l.g.image[static_cast<std::size_t>(q)] != weight)
        refuse(fmt::format("its digits along the axis are not positional (a digit of weight {} where {} was due)",
                           l.g.image[static_cast<std::size_t>(q)], weight));
      weight *= l.g.radix;
    }
    if (weight != d_.shape[static_cast<std::size_t>(q)])
      refuse(fmt::format("its digits along the axis span {} of its {} elements", weight, d_.shape[static_cast<std::size_t>(q)]));
    const int R_ = d_.registers;
    std::vector<int> regs_;  // the canonical registers (the others copy them)
    for (int r = 0; r < R_; ++r)
      if (canonical(r, tl) == r) regs_.push_back(r);
    std::vector<ir::InputDigit> joined;  // register digits along the axis joined so far
    auto rep = [&](int r) {  // the register holding r's block total
      for (const auto& g : joined) r -= ((r / g.stride) % g.radix) * g.stride;
      return r;
    };
    const std::string pre = fmt::format("tj_sp{}", id), tot = fmt::format("tj_st{}", id);
    auto P = [&](int r) { return fmt::format("{}[{}]", pre, r); };
    auto T = [&](int r) { return fmt::format("{}[{}]", tot, r); };
    line(fmt::format("// scan %{} along axis {}{}: {} digits (radix, place: {})", n.args[0], n.axis, rev ? ", reversed" : "",
                     levels.size(), [&] {
                       std::string out;
                       for (const auto& l : levels)
                         out += fmt::format("{}{}{}", out.empty() ? "" : " ", l.g.radix, l.where == 'r' ? "r" : l.where == 'l' ? "l" : "w");
                       return out;
                     }()));
    line(fmt::format("{} {}[{}], {}[{}];", ty, pre, R_, tot, R_));
    for (int r : regs_) line(fmt::format("{} = {} = {};", P(r), T(r), element(r)));
    const bool narrow = arity == 1 && is_int(n.type.dtype) && size_bytes(n.type.dtype) < 4;  // (a tuple's shuffle casts)
    for (const auto& l : levels) {
      const ir::InputDigit& g = l.g;
      if (l.where == 'r') {
        // Per group of p sibling blocks (base: the first), a running fold of their totals: sibling j's elements
        // take the fold of siblings 0..j-1 (j+1..p-1, reversed), one combine each, and the group's total is the
        // whole fold (a register line per element and digit, not one per element and sibling before it).
        const int p = g.radix, st = g.stride;
        for (int base : regs_) {
          if (rep(base) != base || (base / st) % p != 0) continue;
          auto of_sibling = [&](int j) {
            std::vector<int> xs;
            for (int x : regs_)
              if (rep(x) == base + j * st) xs.push_back(x);
            return xs;
          };
          line("{");
          if (!rev) {
            line(fmt::format("  {} tj_a = {};", ty, T(base)));
            for (int j = 1; j < p; ++j) {
              for (int x : of_sibling(j)) line(fmt::format("  {} = {};", P(x), combine("tj_a", P(x))));
              if (j < p - 1) line(fmt::format("  tj_a = {};", combine("tj_a", T(base + j * st))));
            }
            line(fmt::format("  {} = {};", T(base), combine("tj_a", T(base + (p - 1) * st))));
          } else {
            line(fmt::format("  {} tj_a = {};", ty, T(base + (p - 1) * st)));
            for (int j = p - 2; j >= 0; --j) {
              for (int x : of_sibling(j)) line(fmt::format("  {} = {};", P(x), combine(P(x), "tj_a")));
              line(fmt::format("  tj_a = {};", combine(T(base + j * st), "tj_a")));
            }
            line(fmt::format("  {} = tj_a;", T(base)));
          }
          line("}");
        }
        joined.push_back(g);
      } else if (l.where == 'l') {
        if (g.radix != 2) refuse(fmt::format("a lane digit of radix {}", g.radix));
        for (int r : regs_) {
          if (rep(r) != r) continue;
          line("{");
          line(fmt::format("  const {} tj_o = {}tj_shfl_xor({}, {});", ty, narrow ? "(" + ty + ")" : "", T(r), g.stride));
          line(fmt::format("  const bool tj_hi = (tj_lane & {}) != 0;", g.stride));
          for (int x : regs_)
            if (rep(x) == r)
              line(rev ? fmt::format("  if (!tj_hi) {} = {};", P(x), combine(P(x), "tj_o"))
                       : fmt::format("  if (tj_hi) {} = {};", P(x), combine("tj_o", P(x))));
          line(fmt::format("  {} = tj_hi ? {} : {};", T(r), combine("tj_o", T(r)), combine(T(r), "tj_o")));
          line("}");
        }
      } else {
        const int p = g.radix, st = g.stride;
        std::vector<int> reps;
        for (int r : regs_)
          if (rep(r) == r) reps.push_back(r);
        const int reg_bytes = element_bytes(id);
        // The block totals pass through shared memory in chunks of at most kScanScratchBytes: a scan along the dim
        // the warps split first (warp digits below register digits) has a total per register.
        const std::size_t chunk = static_cast<std::size_t>(std::max(1, kScanScratchBytes / (threads_ * reg_bytes)));
        for (std::size_t c0 = 0; c0 < reps.size(); c0 += chunk) {
          const std::size_t c1 = std::min(reps.size(), c0 + chunk);
          smem_bytes_ = std::max(smem_bytes_, static_cast<int>(c1 - c0) * threads_ * reg_bytes);
          line("{");
          line(fmt::format("  {0}* const tj_sc = ({0}*)tj_smem;", ty));
          for (std::size_t c = c0; c < c1; ++c)
            line(fmt::format("  tj_sc[{} + tj_tid] = {};", (c - c0) * static_cast<std::size_t>(threads_), T(reps[c])));
          line("  " + sync());
          line(fmt::format("  const int tj_d = (tj_warp / {}) % {};  // this warp's digit; sibling j is warp tj_warp + (j - tj_d) * {}", st, p, st));
          for (std::size_t c = c0; c < c1; ++c) {
            auto sib = [&](int j) {
              return fmt::format("tj_sc[{} + (tj_warp + ({} - tj_d) * {}) * {} + tj_lane]", (c - c0) * static_cast<std::size_t>(threads_), j, st,
                                 t_.warp_size);
            };
            line("  {");
            for (int j = 0; j < p; ++j) line(fmt::format("    const {} tj_e{} = {};", ty, j, sib(j)));
            std::string t_all = "tj_e0";
            for (int j = 1; j < p; ++j) t_all = combine(t_all, fmt::format("tj_e{}", j));
            line(fmt::format("    const {} tj_t = {};", ty, t_all));
            // The siblings before this warp's (after it, reversed), folded in index order.
            line(fmt::format("    {} tj_b = tj_e{};", ty, rev ? p - 1 : 0));
            if (!rev)
              for (int j = 1; j < p - 1; ++j) line(fmt::format("    if ({} < tj_d) tj_b = {};", j, combine("tj_b", fmt::format("tj_e{}", j))));
            else
              for (int j = p - 2; j >= 1; --j) line(fmt::format("    if ({} > tj_d) tj_b = {};", j, combine(fmt::format("tj_e{}", j), "tj_b")));
            for (int x : regs_)
              if (rep(x) == reps[c])
                line(rev ? fmt::format("    if (tj_d < {}) {} = {};", p - 1, P(x), combine(P(x), "tj_b"))
                         : fmt::format("    if (tj_d > 0) {} = {};", P(x), combine("tj_b", P(x))));
            line(fmt::format("    {} = tj_t;", T(reps[c])));
            line("  }");
          }
          line("  " + sync() + "  // the scratch may be written again");
          line("}");
        }
      }
    }
    each_register(id, [&](int r) { return rounded(n.type, arity == 1 ? P(r) : P(r) + ".v0"); });
  }

  /// Value i of a scan or reduction of several operands (args[0]): field i of the elements it left in
  /// tj_sp<scan> / tj_rt<reduction> — in scope, as the node follows it in the same block — or, for a scan along an
  /// axis of size 1, the operand itself.
  void emit_tuple_get(int id) {
    const Node& n = k_[id];
    const int s = n.args[0];
    const Node& of = k_[s];
    if (tile(id) && !(TL(id) == TL(s)))
      throw Unsupported(fmt::format("codegen: tuple_get %{} of %{} in another layout ({} against {})", id, s,
                                    layout_description(TL(id).layout), layout_description(TL(s).layout)));
    if (of.op == Op::reduce_custom) {
      each_register(id, [&](int r) { return rounded(n.type, fmt::format("tj_rt{}[{}].v{}", s, r, n.i)); });
    } else if (TL(s).dim_of[static_cast<std::size_t>(of.axis)] < 0) {
      each_register(id, [&](int r) { return opnd(s, static_cast<int>(n.i), r); });
    } else {
      each_register(id, [&](int r) { return rounded(n.type, fmt::format("tj_sp{}[{}].v{}", s, r, n.i)); });
    }
  }

  /// Register r of scan or reduction `id`'s operand in the layout it runs in; for several operands their tuple
  /// (combine_type's struct) built from each one's register r.
  std::string combined_element(int id, int r) const {
    const int arity = arity_of(id);
    if (arity == 1) return opnd(id, 0, r);
    std::string fields;
    for (int j = 0; j < arity; ++j) fields += fmt::format("{}{}", j ? ", " : "", opnd(id, j, r));
    return fmt::format("{}{{{}}}", combine_type(k_[id].fn), fields);
  }

  /// How many operands scan or reduction `id` combines together (its combine's arity; 1 for the built-in ones).
  int arity_of(int id) const {
    const Node& n = k_[id];
    return n.op == Op::scan_custom || n.op == Op::reduce_custom ? k_.combines[static_cast<std::size_t>(n.fn)].arity() : 1;
  }

  /// Bytes of shared memory a scan's or reduction's element takes: its register, or for several operands at most
  /// the widest register per operand (the struct's size, padding included, is no more).
  int element_bytes(int id) const {
    const Node& n = k_[id];
    if (arity_of(id) == 1) return register_bytes(n.type.dtype);
    int bytes = 0;
    for (int j = 0; j < arity_of(id); ++j) bytes = std::max(bytes, register_bytes(k_[n.args[static_cast<std::size_t>(j)]].type.dtype));
    return bytes * arity_of(id);
  }

  /// An atomic read-modify-write per element (the prelude's tj_atomic_*), done by one thread per element: the
  /// owner (copies of an element in other threads, and every thread but 0 for a scalar, skip it, as stores do).
  /// When the old values are used and the value has copies, the owners pass them on through shared memory.
  void emit_atomic(int id) {
    const Node& n = k_[id];
    const ir::Type& t = n.type;
    const bool cas = n.op == Op::atomic_cas;
    const bool masked = !cas && n.args[2] >= 0;
    const char* fn = n.op == Op::atomic_add ? "tj_atomic_add" : n.op == Op::atomic_max ? "tj_atomic_max"
                   : n.op == Op::atomic_min ? "tj_atomic_min" : n.op == Op::atomic_xchg ? "tj_atomic_xchg" : "tj_atomic_cas";
    const std::string ty = reg_type(t), own = owner_predicate(TL(id));
    bool used = false;
    for (const Node& u : k_.nodes)
      for (int a : u.args) used = used || a == id;
    if (n.op == Op::atomic_add && !used && t.dtype == DType::f32 && tile(id) && t_.dialect == Dialect::cuda &&
        sm_number(t_.arch) >= 90) {
      const int vw = vector_width(id, 0, masked ? 2 : -1);
      if (vw >= 2) return emit_vector_red(id, vw, masked, own);
    }
    const int R_ = tile(id) ? R(id) : 1;
    const std::string tmp = fmt::format("tj_at{}", id);
    line(fmt::format("{} {}[{}];  // {}: the old values", ty, tmp, R_, ir::name(n.op)));
    for (int r = 0; r < R_; ++r) {
      if (tile(id) && canonical(r, id) != r) continue;
      const std::string cond = store_guard(id, r, masked, own);
      const std::string call = cas ? fmt::format("{}({}, {}, {})", fn, opnd(id, 0, r), opnd(id, 1, r), opnd(id, 2, r))
                                   : fmt::format("{}({}, {})", fn, opnd(id, 0, r), opnd(id, 1, r));
      line(cond.empty() ? fmt::format("{}[{}] = {};", tmp, r, call)
                        : fmt::format("{}[{}] = ({}) ? {} : ({})0;", tmp, r, cond, call, ty));
    }
    if (!used || own.empty()) {
      each_register(id, [&](int r) { return fmt::format("{}[{}]", tmp, r); });
      return;
    }
    // The owners' old values to every copy: each element at its row-major place in shared memory.
    const int numel = t.numel();
    smem_bytes_ = std::max(smem_bytes_, numel * static_cast<int>(size_bytes(t.dtype)));
    auto index = [&](int r) {
      if (!tile(id)) return std::string("0");
      return t.rank == 2 ? fmt::format("{} * {} + {}", coord(id, r, 0), t.shape[1], coord(id, r, 1)) : coord(id, r, 0);
    };
    const std::string buf = fmt::format("(({}*)tj_smem)", ty);
    line(fmt::format("// the old values of %{} from their owners to the threads holding copies", id));
    for (int r = 0; r < R_; ++r)
      if (!tile(id) || canonical(r, id) == r) line(fmt::format("if ({}) {}[{}] = {}[{}];", own, buf, index(r), tmp, r));
    line(sync());
    each_register(id, [&](int r) { return fmt::format("{}[{}]", buf, index(r)); });
    line(sync() + "  // the scratch may be written again");
  }

  /// An f32 atomic add whose old values are unused, on sm_90+, as vector reductions (prelude's tj_red_add_v2 / _v4,
  /// PTX `red.global.add.v2/.v4.f32`): each run of `vw` registers that vector_width proved contiguous, aligned and
  /// under one mask value is one L2 reduction, as a vector store is one store. Done by the owners, as scalar atomics.
  void emit_vector_red(int id, int vw, bool masked, const std::string& own) {
    line(fmt::format("// %{}: atomic_add as {}-byte vector reductions (old values unused)", id, 4 * vw));
    for (int r = 0; r < R(id); r += vw) {
      if (canonical(r, id) != r) continue;
      std::string args = opnd(id, 0, r);
      for (int i = 0; i < vw; ++i) args += ", " + opnd(id, 1, r + i);
      const std::string cond = store_guard(id, r, masked, own);
      const std::string call = fmt::format("tj_red_add_v{}({});", vw, args);
      line(cond.empty() ? call : fmt::format("if ({}) {}", cond, call));
    }
  }

  /// The prelude function (or C operator) of unary node n at register r: exp2_split's registers r with
  /// r % k == k − 1 (k = n.i > 0) take the FMA pipe's tj_exp2_fma, every other exp2 the SFU's tj_exp2.
  static const char* unary_function(const Node& n, int r) {
    if (n.op == Op::exp2 && n.i > 0 && r % n.i == n.i - 1) return "tj_exp2_fma";
    return unary_function(n.op);
  }
  /// The prelude function (or C operator) of a unary op.
  static const char* unary_function(Op op) {
    switch (op) {
      case Op::neg: return "-";
      case Op::logical_not: return "!";
      case Op::exp: return "tj_exp";
      case Op::exp2: return "tj_exp2";
      case Op::log: return "tj_log";
      case Op::sqrt: return "tj_sqrt";
      case Op::rsqrt: return "tj_rsqrt";
      case Op::abs: return "tj_abs";
      case Op::log2: return "tj_log2";
      case Op::sin: return "tj_sin";
      case Op::cos: return "tj_cos";
      case Op::tanh: return "tj_tanh";
      case Op::erf: return "tj_erf";
      case Op::floor: return "tj_floor";
      case Op::ceil: return "tj_ceil";
      case Op::sigmoid: return "tj_sigmoid";
      default: throw Unsupported(fmt::format("codegen: {} is not a unary op", ir::name(op)));
    }
  }

  const ir::Kernel& k_;
  const ir::Specialization& spec_;
  Target t_;
  Options o_;
  ir::LayoutPlan plan_;
  int threads_;
  int smem_bytes_ = 0;
  /// The largest shared-memory round trip of a conversion or reshape and its bytes, named when the scratch is too big.
  std::pair<std::string, int> smem_largest_{"", 0};
  int smem_align_ = 16;
  // ---- the TMA pipeline (sm_90a) ----
  std::vector<Pipe> pipes_;
  std::vector<int> pipe_of_loop_, alias_;  // per node: index into pipes_ (-1), register alias (-1)
  std::vector<char> packed_;  // per node: 16-bit float tile held two elements per register (plan_packed)
  std::set<int> resident_landed_;  // resident blocks waited for at top level (wait_resident_before)
  std::vector<int> tma_param_;  // per parameter: rows of its TMA box (0: not TMA-fed)
  std::vector<int> slab_w_;     // per parameter: bytes per slab of its blocks in shared memory (plan_slab_widths)
  std::vector<char> mc_split_;  // per parameter: its multicast blocks are copied in num_ctas slices (decide_cluster)
  int ring_bytes_ = 0;
  std::vector<Resident> resident_;
  std::vector<ItemBlock> items_;
  std::vector<StoreBuf> stores_;  // TMA stores (desc_store left in the IR), one staging buffer each
  std::vector<int> pending_release_;  // item blocks whose last reader is a wgmma not yet retired
  std::vector<int> deferred_;  // wgmma dots issued, not yet waited for, oldest first (retire_deferred)
  std::vector<int> loop_end_;  // per loop_begin: its loop_end (ir::loop_ends)
  bool cp_ = false;                     // the pipelines are cp.async rings (a CUDA target without wgmma)
  bool ws_ = false, pingpong_ = false;  // warp specialisation and the ping-pong schedule (decide_warp_specialization)
  int pp_hand_ = -1;                    // the loop the first turn is handed over before and taken back after
  int cluster_ = 1;                     // programs per cluster (decide_cluster)
  std::vector<int> producer_deps_;      // scalars the producer warp recomputes, in program order
  std::vector<int> outer_deps_;         // ... inside a loop that encloses a pipelined loop, per outer iteration (program order)
  std::vector<int> outer_carries_;      // ... scalars that loop carries (init and next value producer scalars)
  std::vector<int> parent_;             // per node: its innermost enclosing loop_begin (-1: none)
  int pp_first_ = -1, pp_last_ = -1;    // the span of wgmma the warp groups take turns over
  bool in_turn_ = false;                // emitting between pp_first_'s turn barrier and pp_last_'s hand-over
  mutable bool turn_conflict_ = false;  // sync() was emitted in a turn (turn_conflict())
  std::string producer_;
  std::string pipe_preamble_;
  std::string body_;
  std::map<std::string, std::string> conversions_;  // (value, target layout) -> converted register array, in scope now
  std::set<std::string> packed_conversions_;          // those of them held as packed 16-bit pairs (convert)
  int conversions_made_ = 0;
  std::vector<std::vector<std::string>> conv_scopes_;  // per enclosing loop body being emitted: the conversions declared in it
  std::vector<std::string> plan_diag_;
  std::vector<ir::AxisInfo> axes_;
  std::vector<std::string> ev_sites_;  // device events: Generated::event_sites
  int ev_program_ = -1;                // ... the "program" span's site
  int ev_wgmma_ = -1;                  // ... wgmma groups, commit -> the wait that saw them complete
  std::map<int, int> ev_pipe_site_;    // ... each TMA pipeline's site, by its loop
};

/// The desc_loads TMA takes (1) on this target: sm_90a only. A block [rows,
/// cols] (rows a multiple of 8, a wgmma type, cols · size a multiple of 16
/// bytes; held in 128-byte swizzled slabs) qualifies when it is either
///  - inside a loop, at coordinates computed from the induction variable and
///    loop-invariant values only (so a later iteration's copy can be issued
///    early): it joins that loop's pipeline — or, when that loop encloses a
///    loop with blocks of its own (a loop over a persistent kernel's work
///    items), is copied once per iteration into a buffer of its own; or
///  - outside every loop: copied once (a resident block, e.g. attention's Q);
/// and every use of it is a wgmma dot that reads it in place — as operand a
/// (K-major), through `trans` as operand b (K-major), or directly as operand b
/// (MN-major, 16-bit types) — sitting in the block's own loop, or in a loop
/// nested in it, when it is loaded in a loop. Such a dot needs b from TMA and a from TMA or, for 16-bit types,
/// from registers (wgmma's register-A form). Everything else is lowered to
/// masked loads.
///
/// With Options::cp_async on the other CUDA targets from sm_80 (mma.sync, no
/// wgmma), the same analysis picks the blocks a cp.async ring copies: blocks
/// in a loop (never resident or once per iteration of an enclosing loop), at
/// coordinates from the induction variable and loop-invariant values, whose
/// every use is an mma.sync dot in reach reading it as operand a, as operand b
/// through `trans`, or directly as operand b (any dot type); [rows, cols] with
/// cols · size a multiple of 16 bytes (whole cp.async chunks).
std::vector<char> async_loads(const ir::Kernel& k, const Target& t, const Options& o) {
  const std::size_t N = k.nodes.size();
  std::vector<char> keep(N, 0);
  const bool cp = o.cp_async && t.dialect == Dialect::cuda && t.arch != "sm_90a" && sm_number(t.arch) >= 80;
  if (t.dialect != Dialect::cuda || (t.arch != "sm_90a" && !cp)) return keep;
  std::vector<int> parent(N, -1), stack;
  std::vector<std::vector<std::pair<int, int>>> uses(N);  // (user, operand slot)
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::loop_end) stack.pop_back();
    parent[id] = stack.empty() ? -1 : stack.back();
    if (n.op == Op::loop_begin) stack.push_back(static_cast<int>(id));
    for (int j = 0; j < static_cast<int>(n.args.size()); ++j)  // every slot: desc_store's value is args[3]
      if (n.args[static_cast<std::size_t>(j)] >= 0) uses[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])].push_back({static_cast<int>(id), j});
  }
  auto wgmma_shape = [&](int d) {
    const Node& n = k.nodes[static_cast<std::size_t>(d)];
    const int M = n.type.shape[0], Nn = n.type.shape[1];
    const DType et = k[n.args[0]].type.dtype;
    // Integer wgmma takes N = 8, 24 or a multiple of 16 only (PTX ISA, wgmma .s8 shapes).
    const bool n_ok = et != DType::i8 || Nn % 16 == 0 || Nn == 8 || Nn == 24;
    if (M == 16 * o.num_warps && M % 64 == 0 && layout::wgmma_legal_n(Nn) && layout::wgmma_padded_n(Nn) == Nn && n_ok) return true;
    return ir::wgmma_groups_along_n(k, d, o.num_warps) > 1;  // 64 rows over several warp groups, side by side along N
  };
  // A scalar the producer computes per iteration of loop L: values from before it, its induction variable, producer
  // scalars in its body, and scalars it carries whose initial and next values are such (a recurrence: a carry met
  // again while being checked counts as computable).
  // Carries only for a loop whose blocks are copied once per iteration at the point of the load (one that encloses a
  // loop with blocks of its own, plan_pipes' ItemBlock): a ring issues an iteration's copies ahead of time from the
  // induction variable alone, while a carry holds the current iteration's value (the prologue and every refill would
  // copy the wrong block).
  bool carries_ok = !cp;  // a cp.async ring has no per-iteration buffers
  std::vector<char> visiting(N, 0);
  std::function<bool(int, int)> invariant_or_iv = [&](int x, int L) {
    if (x <= L) return true;  // defined before the loop, or its induction variable
    const Node& n = k.nodes[static_cast<std::size_t>(x)];
    if (parent[static_cast<std::size_t>(x)] != L) return false;
    if (n.op == Op::loop_carry && n.type.rank == 0 && n.args[1] == L) {
      if (!carries_ok) return false;
      if (visiting[static_cast<std::size_t>(x)]) return true;
      visiting[static_cast<std::size_t>(x)] = 1;
      const int next = carry_next(k, x);
      const bool ok = n.args[0] <= L && next >= 0 && invariant_or_iv(next, L);
      visiting[static_cast<std::size_t>(x)] = 0;
      return ok;
    }
    if (!producer_scalar(k, x)) return false;
    for (int a : n.args)
      if (a >= 0 && !invariant_or_iv(a, L)) return false;
    return true;
  };
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op != Op::desc_load) continue;
    const int L = parent[id];
    const DType dt = n.type.dtype;
    const bool f8 = dt == DType::f8e4nv || dt == DType::f8e5;
    const bool shape_ok = (dt == DType::bf16 || dt == DType::f16 || dt == DType::f32 || dt == DType::i8 ||
                           (f8 && (!cp || sm_number(t.arch) >= 89))) &&
                          n.type.shape[1] * size_bytes(dt) % 16 == 0 && (cp || n.type.shape[0] % 8 == 0);
    // (args[0]: a desc_view's coordinates count as the block's)
    const bool where_ok = cp ? (L < 0 ? o.cp_async_resident
                                      : invariant_or_iv(n.args[0], L) && invariant_or_iv(n.args[1], L) && invariant_or_iv(n.args[2], L))
                             : L < 0 || (invariant_or_iv(n.args[0], L) && invariant_or_iv(n.args[1], L) && invariant_or_iv(n.args[2], L));
    if (shape_ok && where_ok && !uses[id].empty()) keep[id] = 1;
  }
  auto kept = [&](int x) { return k[x].op == Op::desc_load && keep[static_cast<std::size_t>(x)]; };
  auto in_reach = [&](int block, int dot) {  // a block loaded in a loop is read in that loop or in a loop it encloses
    const int L = parent[static_cast<std::size_t>(block)];
    if (L < 0) return true;
    for (int a = parent[static_cast<std::size_t>(dot)]; a >= 0; a = parent[static_cast<std::size_t>(a)])
      if (a == L) return true;
    return false;
  };
  // Whether dot d reads its operands in place, given the blocks kept so far.
  auto fed = [&](int d) {
    const Node& n = k.nodes[static_cast<std::size_t>(d)];
    if (cp) {  // mma.sync reads any operand slot from a block; a register operand is its own business
      const int a = n.args[0], b = n.args[1];
      const int bl = k[b].op == Op::trans ? k[b].args[0] : b;
      return (!kept(a) || in_reach(a, d)) && (!kept(bl) || in_reach(bl, d));
    }
    if (!wgmma_shape(d)) return false;
    const int a = n.args[0], b = n.args[1];
    const DType et = k[a].type.dtype;
    const int K = k[a].type.shape[1];
    const bool b_trans = k[b].op == Op::trans;
    const int bl = b_trans ? k[b].args[0] : b;
    if (!kept(bl) || !in_reach(bl, d)) return false;
    if (b_trans ? K * size_bytes(et) % 32 != 0 : (size_bytes(et) != 2 || K % 16 != 0)) return false;
    if (kept(a)) return in_reach(a, d) && K * size_bytes(et) % 32 == 0;
    return (et == DType::f16 || et == DType::bf16) && K % 16 == 0 && layout::wgmma_legal_n(K) && layout::wgmma_padded_n(K) == K;
  };
  for (bool changed = true; changed;) {
    changed = false;
    // A block whose coordinates need a scalar its loop carries stays only while that loop encloses a loop with kept
    // blocks (else plan_pipes makes it a ring of that loop).
    std::vector<char> encloses(N, 0);
    for (std::size_t x = 0; x < N; ++x)
      if (kept(static_cast<int>(x)) && parent[x] >= 0 && parent[static_cast<std::size_t>(parent[x])] >= 0)
        encloses[static_cast<std::size_t>(parent[static_cast<std::size_t>(parent[x])])] = 1;
    carries_ok = false;
    for (std::size_t x = 0; x < N; ++x) {
      const int L = parent[x];
      if (cp && keep[x] && L >= 0 && encloses[static_cast<std::size_t>(L)]) {  // a cp.async ring is innermost: no per-item buffers
        keep[x] = 0;
        changed = true;
        continue;
      }
      if (!keep[x] || L < 0 || encloses[static_cast<std::size_t>(L)]) continue;
      if (!invariant_or_iv(k.nodes[x].args[0], L) || !invariant_or_iv(k.nodes[x].args[1], L) || !invariant_or_iv(k.nodes[x].args[2], L)) {
        keep[x] = 0;
        changed = true;
      }
    }
    carries_ok = !cp;
    for (std::size_t x = 0; x < N; ++x) {
      if (!keep[x]) continue;
      bool ok = true;
      for (auto [u, j] : uses[x]) {
        const Node& un = k.nodes[static_cast<std::size_t>(u)];
        if (un.op == Op::dot && j < 2 && fed(u)) continue;
        if (un.op == Op::trans && !uses[static_cast<std::size_t>(u)].empty()) {
          for (auto [w, jw] : uses[static_cast<std::size_t>(u)])
            if (!(k.nodes[static_cast<std::size_t>(w)].op == Op::dot && jw == 1 && fed(w))) ok = false;
          continue;
        }
        ok = false;
      }
      if (!ok) {
        keep[x] = 0;
        changed = true;
      }
    }
  }
  return keep;
}

/// The desc_stores TMA takes (keep = 1) on this target: with Options::tma_store on sm_90a, a block [rows, cols] of
/// 2- or 4-byte elements whose rows are whole 128-byte slabs (cols · size a multiple of 128) and rows a multiple of 8
/// (each slab a whole number of 1024-byte swizzle atoms), into a descriptor the specialisation marks as whole 16-byte
/// chunks (kDiv16: shape[-1] × element size a multiple of 16 bytes), at a column coordinate provably a multiple of
/// 16 bytes (axis analysis). TMA stores write whole 16-byte chunks: into a tensor whose rows end mid-chunk they would
/// write past its last column (up to the next 16-byte boundary), and a box starting mid-chunk faults on the H200
/// (CUDA_ERROR_ILLEGAL_INSTRUCTION); such a store stays masked and a diagnostic says why. Everything else is lowered
/// to masked stores.
void tma_stores(const ir::Kernel& k, const ir::Specialization& spec, const Target& t, const Options& o, std::vector<char>& keep,
                std::vector<std::string>& diagnostics) {
  if (!o.tma_store || t.dialect != Dialect::cuda || t.arch != "sm_90a") return;
  std::vector<ir::AxisInfo> axes;  // computed at the first store that needs it
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    if (n.op != Op::desc_store) continue;
    const int es = size_bytes(n.type.dtype);
    if (!((es == 2 || es == 4) && n.type.shape[1] * es % 128 == 0 && n.type.shape[0] % 8 == 0)) {
      diagnostics.push_back(fmt::format("tma_store not applied to desc_store %{}: a [{}, {}] block of {}-byte elements is not "
                                        "whole 128-byte slabs of rows in multiples of 8 (2- or 4-byte elements): masked stores",
                                        id, n.type.shape[0], n.type.shape[1], es));
      continue;
    }
    const Node& d = k.nodes[static_cast<std::size_t>(ir::desc_ref(k, static_cast<int>(id)).param)];
    const auto p = static_cast<std::size_t>(d.i);
    if (!(d.op == Op::param && p < spec.flags.size() && (spec.flags[p] & ir::Specialization::kDiv16))) {
      diagnostics.push_back(fmt::format("tma_store not applied to desc_store %{}: descriptor {} is not known to hold whole "
                                        "16-byte chunks per row (shape[-1] x {} bytes a multiple of 16; TMA stores write "
                                        "whole chunks and would write past its last column): masked stores",
                                        id, d.op == Op::param ? fmt::format("arg{}", d.i) : fmt::format("%{}", n.args[0]), es));
      continue;
    }
    if (axes.empty()) axes = ir::analyze_axes(k, spec);
    const long long div = axes[static_cast<std::size_t>(n.args[2])].divisibility[0];  // a scalar: every entry alike
    if (div * es % 16 != 0) {
      diagnostics.push_back(fmt::format("tma_store not applied to desc_store %{}: its column coordinate %{} is known to be a "
                                        "multiple of {} elements only ({} bytes): a TMA store box must start on a 16-byte "
                                        "chunk: masked stores", id, n.args[2], div, div * es));
      continue;
    }
    keep[id] = 1;
  }
}

}  // namespace

namespace {
bool digits(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }
/// "sm_" two or three digits, then at most an "a" (sm_80, sm_90a).
bool is_sm_arch(std::string_view a) {
  if (a.substr(0, 3) != "sm_") return false;
  a.remove_prefix(3);
  if (!a.empty() && a.back() == 'a') a.remove_suffix(1);
  return digits(a) && (a.size() == 2 || a.size() == 3);
}
/// "gfx" three or four lowercase hex digits (gfx90a, gfx942, gfx1100), then any ":feature+" / ":feature-" (xnack-).
bool is_gfx_arch(std::string_view a) {
  if (a.substr(0, 3) != "gfx") return false;
  a.remove_prefix(3);
  const std::string_view chip = a.substr(0, a.find(':'));
  if (chip.size() < 3 || chip.size() > 4 || chip[0] < '0' || chip[0] > '9' ||
      !std::all_of(chip.begin(), chip.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }))
    return false;
  for (a.remove_prefix(chip.size()); !a.empty();) {  // ":name+" or ":name-"
    a.remove_prefix(1);
    const std::string_view f = a.substr(0, a.find(':'));
    if (f.size() < 2 || (f.back() != '+' && f.back() != '-') ||
        !std::all_of(f.begin(), f.end() - 1, [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; }))
      return false;
    a.remove_prefix(f.size());
  }
  return true;
}
}  // namespace

Target target_for(const std::string& arch) {
  Target t;
  t.arch = arch;
  if (is_sm_arch(arch)) {
    t.dialect = Dialect::cuda;
    t.warp_size = 32;
  } else if (is_gfx_arch(arch)) {
    t.dialect = Dialect::hip;
    // CDNA (gfx9xx) runs wave64; RDNA (gfx10+/11+) defaults to wave32.
    t.warp_size = arch[3] == '9' ? 64 : 32;
  } else {
    throw InvalidArgument(fmt::format("target arch '{}' is not a target: sm_NN or sm_NNa (NVIDIA, e.g. sm_80, sm_90a) or "
                                      "gfxNNN with optional :feature+/- (AMD, e.g. gfx90a, gfx942, gfx942:xnack-)", arch));
  }
  return t;
}

void require_valid_num_warps(int n) {
  if (!valid_num_warps(n))
    throw InvalidArgument(fmt::format("num_warps = {}: must be a power of two in [1, 32], or whole warp groups (a multiple of 4) "
                                      "of 12, 20, 24 or 28 warps", n));
}

namespace {
Generated generate_once(const ir::Kernel& k, const ir::Specialization& spec, const Target& t, const Options& o) {
  ir::verify(k);
  require_valid_num_warps(o.num_warps);
  if (o.num_warps * t.warp_size > 1024)
    throw InvalidArgument(fmt::format("num_warps = {} with {} lanes per warp gives {} threads: at most 1024 per program",
                                      o.num_warps, t.warp_size, o.num_warps * t.warp_size));
  if (o.num_stages < 1 || o.num_stages > 8)
    throw InvalidArgument(fmt::format("num_stages = {}: must be in [1, 8]", o.num_stages));
  if (o.num_ctas != 1 && o.num_ctas != 2 && o.num_ctas != 4)
    throw InvalidArgument(fmt::format("num_ctas = {}: a cluster is 1, 2 or 4 programs", o.num_ctas));
  if (o.device_events_wgmma && !o.device_events)
    throw InvalidArgument("device_events_wgmma = true needs device_events = true (the wgmma pairs are device events)");
  // bf16 values convert with cvt.rn.bf16.f32, which PTX has from sm_80 (ptxas failed inside the NVRTC compile).
  if (t.dialect == Dialect::cuda && sm_number(t.arch) < 80)
    for (std::size_t id = 0; id < k.nodes.size(); ++id)
      if (k.nodes[id].type.dtype == DType::bf16 && !k.nodes[id].type.is_desc && !k.nodes[id].type.is_ptr)
        throw Unsupported(fmt::format("node %{} ({}) holds bf16 values, which need sm_80 or newer (cvt.rn.bf16.f32); the target is "
                                      "{}: use f16 or f32 there", id, ir::to_string(k.nodes[id].type), t.arch));
  // Descriptor loads: TMA (sm_90a) or cp.async (sm_80+) where a pipeline takes them, masked loads elsewhere.
  std::vector<char> keep = async_loads(k, t, o);
  std::vector<std::string> store_diagnostics;
  tma_stores(k, spec, t, o, keep, store_diagnostics);
  const ir::Kernel lowered = ir::lower_descriptors(k, [&](int id) { return keep[static_cast<std::size_t>(id)] != 0; });
  // Ping-pong is refused after the fact when its turn would hold a barrier of every consumer thread (a cross-warp
  // reduction, a conversion or a staged wgmma between the first and last wgmma of the iteration): made again without.
  auto emit = [&](const ir::Kernel& ir) {
    Emitter e(ir, spec, t, o);
    Generated g = e.run();
    g.diagnostics.insert(g.diagnostics.end(), store_diagnostics.begin(), store_diagnostics.end());
    if (!e.turn_conflict()) return g;
    Options no_turns = o;
    no_turns.pingpong = false;
    g = Emitter(ir, spec, t, no_turns).run();
    g.diagnostics.insert(g.diagnostics.end(), store_diagnostics.begin(), store_diagnostics.end());
    g.diagnostics.push_back(fmt::format("pingpong not applied: between dot %{} and dot %{} every consumer thread meets a barrier "
                                        "(a cross-warp reduction, a conversion through shared memory or a staged wgmma), which "
                                        "would deadlock against the other warp group's turn",
                                        e.turn_span().first, e.turn_span().second));
    return g;
  };
  // Clone cheap index chains instead of converting them between layouts.
  if (!o.rematerialize) return emit(lowered);
  const ir::Rematerialized rm = ir::rematerialize(lowered, o.num_warps, t.warp_size, t.arch);
  Generated g = emit(rm.kernel);
  g.diagnostics.insert(g.diagnostics.end(), rm.diagnostics.begin(), rm.diagnostics.end());
  return g;
}
}  // namespace

Generated generate(const ir::Kernel& k, const ir::Specialization& spec, const Target& t, const Options& o) {
  try {
    return generate_once(k, spec, t, o);
  } catch (const RingTooLarge& r) {  // a cp.async ring past the target's shared memory: the masked loads, visibly
    Options masked = o;
    masked.cp_async = false;
    Generated g = generate_once(k, spec, t, masked);
    g.diagnostics.push_back(r.why);
    return g;
  }
}

}  // namespace tilejit::codegen
