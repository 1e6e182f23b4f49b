// Axis analysis. See include/tilejit/ir/axis_info.hpp. The rules follow
// Triton's AxisInfo (lib/Analysis/AxisInfo.cpp): gcd-style combinations that
// stay sound for every element, never guesses.
#include "tilejit/ir/axis_info.hpp"

#include <algorithm>
#include <numeric>

namespace tilejit::ir {
namespace {

constexpr long long kMaxDiv = 1LL << 30;

long long pow2_dividing(long long v) {
  if (v == 0) return kMaxDiv;
  long long p = 1;
  while (p < kMaxDiv && v % (p * 2) == 0) p *= 2;
  return p;
}
int g(int a, int b) { return std::gcd(a, b); }

AxisInfo scalar_info(const Type& t, long long div) {
  AxisInfo a;
  a.divisibility = div;
  for (int d = 0; d < t.rank; ++d) a.constancy[static_cast<std::size_t>(d)] = t.shape[static_cast<std::size_t>(d)];
  return a;
}

}  // namespace

std::vector<AxisInfo> analyze_axes(const Kernel& k, const Specialization& spec) {
  std::vector<AxisInfo> info(k.nodes.size());
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    const Type& t = n.type;
    AxisInfo& out = info[id];
    auto in = [&](int j) -> const AxisInfo& { return info[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])]; };
    auto in_type = [&](int j) -> const Type& { return k.nodes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])].type; };
    switch (n.op) {
      case Op::param: {
        const std::uint8_t f = n.i < static_cast<std::int64_t>(spec.flags.size()) ? spec.flags[static_cast<std::size_t>(n.i)] : 0;
        if (t.is_ptr)
          out = scalar_info(t, (f & Specialization::kDiv16) ? 16 : size_bytes(t.dtype));
        else
          out = scalar_info(t, (f & Specialization::kEqual1) ? 1 : (f & Specialization::kDiv16) ? 16 : 1);
        break;
      }
      case Op::desc_field: {
        // A descriptor's base is 16-byte aligned and every stride but the last a multiple of 16 bytes (validated
        // on the host).
        const Node& d = k.nodes[static_cast<std::size_t>(n.args[0])];
        const int es = size_bytes(d.type.dtype);
        const int rank = d.op == Op::param && static_cast<std::size_t>(d.i) < k.params.size() ? k.params[static_cast<std::size_t>(d.i)].rank : 2;
        const bool outer_stride = n.i == 3 || (n.i >= kDescStride && n.i < kDescStride + rank - 1);
        out = scalar_info(t, n.i == 0 ? 16 : outer_stride ? std::max(1, 16 / es) : 1);
        break;
      }
      case Op::constant:
        out = scalar_info(t, is_float(t.dtype) ? 1 : pow2_dividing(n.i));
        break;
      case Op::arange:
        out.contiguity[0] = t.shape[0];
        out.divisibility = kMaxDiv;
        break;
      case Op::broadcast: {
        const Type& ft = in_type(0);
        if (ft.rank == 0) {
          out = scalar_info(t, in(0).divisibility);
        } else {
          out = in(0);
          for (int d = 0; d < t.rank; ++d)
            if (ft.shape[static_cast<std::size_t>(d)] == 1 && t.shape[static_cast<std::size_t>(d)] != 1) {
              out.contiguity[static_cast<std::size_t>(d)] = 1;
              out.constancy[static_cast<std::size_t>(d)] = t.shape[static_cast<std::size_t>(d)];
            }
        }
        break;
      }
      case Op::expand_dims: {
        const AxisInfo& a = in(0);
        out.divisibility = a.divisibility;
        for (int d = 0, s = 0; d < t.rank; ++d) {
          if (d == n.axis) continue;  // the new unit dim: 1 and 1
          out.contiguity[static_cast<std::size_t>(d)] = a.contiguity[static_cast<std::size_t>(s)];
          out.constancy[static_cast<std::size_t>(d)] = a.constancy[static_cast<std::size_t>(s)];
          ++s;
        }
        break;
      }
      case Op::add:
      case Op::sub:
      case Op::addptr: {
        const AxisInfo& a = in(0);
        const AxisInfo& b = in(1);
        const long long scale = n.op == Op::addptr ? size_bytes(t.dtype) : 1;
        for (int d = 0; d < t.rank; ++d) {
          const auto u = static_cast<std::size_t>(d);
          int c = g(a.contiguity[u], b.constancy[u]);
          if (n.op == Op::add) c = std::max(c, g(a.constancy[u], b.contiguity[u]));
          if (n.op == Op::addptr) c = std::max(c, g(a.constancy[u], b.contiguity[u]));
          out.contiguity[u] = c;
          out.constancy[u] = g(a.constancy[u], b.constancy[u]);
        }
        out.divisibility = std::gcd(a.divisibility, std::min(kMaxDiv, b.divisibility * scale));
        break;
      }
      case Op::mul: {
        const AxisInfo& a = in(0);
        const AxisInfo& b = in(1);
        for (int d = 0; d < t.rank; ++d) out.constancy[static_cast<std::size_t>(d)] = g(a.constancy[static_cast<std::size_t>(d)], b.constancy[static_cast<std::size_t>(d)]);
        out.divisibility = std::min(kMaxDiv, a.divisibility * b.divisibility);
        break;
      }
      case Op::lt: case Op::le: case Op::gt: case Op::ge: case Op::eq: case Op::ne: {
        // A contiguous run compared with a constant flips at most once, and only
        // at a multiple of the constant's divisibility: aligned groups of
        // gcd(run, div(a), div(b)) share one result.
        const AxisInfo& a = in(0);
        const AxisInfo& b = in(1);
        for (int d = 0; d < t.rank; ++d) {
          const auto u = static_cast<std::size_t>(d);
          int cst = g(a.constancy[u], b.constancy[u]);
          if (b.constancy[u] >= a.contiguity[u] && a.contiguity[u] > 1 && (n.op == Op::lt || n.op == Op::ge)) {
            const long long grp = std::gcd(static_cast<long long>(a.contiguity[u]), std::gcd(a.divisibility, b.divisibility));
            cst = std::max(cst, static_cast<int>(std::min<long long>(grp, a.contiguity[u])));
          }
          out.constancy[u] = cst;
        }
        break;
      }
      case Op::bit_and: case Op::bit_or: case Op::where: case Op::logical_not: case Op::cast: {
        for (int d = 0; d < t.rank; ++d) {
          int c = t.shape[static_cast<std::size_t>(d)];
          for (int j = 0; j < 3; ++j)
            if (n.args[static_cast<std::size_t>(j)] >= 0) c = g(c, in(j).constancy[static_cast<std::size_t>(d)]);
          out.constancy[static_cast<std::size_t>(d)] = c;
        }
        if (n.op == Op::cast && !is_float(t.dtype)) out.contiguity = in(0).contiguity, out.divisibility = in(0).divisibility;
        break;
      }
      case Op::loop_begin:  // the induction variable: lo + i*step
        out.divisibility = std::gcd(info[static_cast<std::size_t>(n.args[0])].divisibility, info[static_cast<std::size_t>(n.args[2])].divisibility);
        break;
      case Op::loop_carry: case Op::loop_result:
        break;  // unknown across iterations: the conservative default
      default:
        break;
    }
    for (int d = t.rank; d < kMaxRank; ++d) out.contiguity[static_cast<std::size_t>(d)] = out.constancy[static_cast<std::size_t>(d)] = 1;
  }
  return info;
}

}  // namespace tilejit::ir
