// src/predict/summary.cpp — see tilejit/predict/summary.hpp.
#include "tilejit/predict/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilejit::predict {
namespace {

/// 32-bit registers per thread that a tile of `t` occupies when `threads` threads share it (pointers: 8 bytes).
double regs_per_thread(const ir::Type& t, int threads) {
  const double bytes = static_cast<double>(t.numel()) * (t.is_ptr ? 8 : size_bytes(t.dtype));
  return bytes / 4.0 / std::max(threads, 1);
}

}  // namespace

KernelSummary summarize_ir(const ir::Kernel& k, int num_warps, int num_stages, int warp_size) {
  KernelSummary s;
  s.num_warps = num_warps;
  s.num_stages = num_stages;
  const int threads = num_warps * warp_size;
  long long best_mnk = 0;
  for (const ir::Node& n : k.nodes) {
    switch (n.op) {
      case ir::Op::dot: {
        ++s.dots;
        const ir::Type& a = k.nodes[static_cast<std::size_t>(n.args[0])].type;
        const int m = n.type.shape[0], nn = n.type.shape[1], kk = a.shape[1];
        if (s.dot_bits == 0) s.dot_bits = 8 * size_bytes(a.dtype);
        if (const long long mnk = 1LL * m * nn * kk; mnk > best_mnk) best_mnk = mnk, s.dot_m = m, s.dot_n = nn, s.dot_k = kk;
        break;
      }
      case ir::Op::load:
      case ir::Op::desc_load: ++s.loads; break;
      case ir::Op::store:
      case ir::Op::desc_store: ++s.stores; break;
      case ir::Op::loop_begin: ++s.loops; break;
      case ir::Op::loop_carry:
        if (n.type.rank > 0) s.carried_regs += regs_per_thread(n.type, threads);
        break;
      default: break;
    }
    if (n.type.rank > 0 && !n.type.is_desc) s.tile_regs = std::max(s.tile_regs, regs_per_thread(n.type, threads));
  }
  return s;
}

KernelSummary summarize(const runtime::KernelCore& k) {
  const CompileOptions& o = k.options();
  KernelSummary s = summarize_ir(k.ir(), o.num_warps, o.num_stages, std::max(k.device().warp_size(), 1));
  try {
    const codegen::Generated g = k.source();
    s.threads = g.threads;
    s.shared_bytes = g.shared_bytes + g.dynamic_shared_bytes;
    s.num_ctas = g.num_ctas;
    s.tma = !g.tma_params.empty();
    s.wgmma = g.source.find("wgmma.mma_async") != std::string::npos;
    s.warp_specialized = g.source.find("setmaxnreg") != std::string::npos;
    s.codegen_ok = true;
  } catch (const std::exception& e) {
    s.codegen_error = e.what();
  }
  return s;
}

LaunchSummary summarize_launch(const runtime::KernelCore& k, const Grid& g, std::span<const runtime::ArgSlot> args) {
  const long long dims[3] = {g.x, g.y, g.z};
  for (int d = 0; d < 3; ++d)
    if (dims[d] < 1) throw InvalidArgument(fmt::format("predict: grid.{} = {}: every grid dimension must be >= 1", "xyz"[d], dims[d]));
  LaunchSummary l;
  l.programs = g.x * g.y * g.z;
  if (const auto c = k.launch_cost(g, args)) {
    l.flops = static_cast<double>(c->flops);
    l.bytes = static_cast<double>(c->bytes);
    l.flops_width = c->flops > 0 ? c->flops_width : 0;
  } else {
    l.flops = l.bytes = std::numeric_limits<double>::quiet_NaN();
  }
  return l;
}

}  // namespace tilejit::predict
