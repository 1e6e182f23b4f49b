// Axis analysis. See include/tilejit/ir/axis_info.hpp. The rules follow
// Triton's AxisInfo (lib/Analysis/AxisInfo.cpp): gcd-style combinations that
// stay sound for every element, never guesses. Divisibility is kept per dim, so
// a run's first element along one dim is judged by every index of the others.
// Integer `/` and `%` by a positive constant are analysed only where the
// dividend is known non-negative (C's `/` truncates toward zero: -1 / 2 == 0 / 2,
// and the groups below would not hold for negative values): aranges, program
// ids, non-negative constants, and sums, products, quotients and remainders of
// those.
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
long long gl(long long a, long long b) { return std::gcd(a, b); }

AxisInfo scalar_info(const Type& t, long long div) {
  AxisInfo a;
  a.divisibility.fill(div);
  for (int d = 0; d < t.rank; ++d) a.constancy[static_cast<std::size_t>(d)] = t.shape[static_cast<std::size_t>(d)];
  return a;
}

/// What every element of `a` whose index along d is a multiple of `c` is a multiple of: a run's first element is a
/// multiple of divisibility[d], and the others lie a multiple of gcd(c, contiguity[d]) elements past it (`unit`:
/// the element's size for pointers, whose divisibility is in bytes).
long long div_at(const AxisInfo& a, int d, long long c, long long unit = 1) {
  const auto u = static_cast<std::size_t>(d);
  return a.contiguity[u] > 1 ? gl(a.divisibility[u], gl(c, a.contiguity[u]) * unit) : a.divisibility[u];
}

/// The value of integer node `id` where it is one constant splat (through broadcasts and expand_dims), else 0.
long long splat_constant(const Kernel& k, int id) {
  while (id >= 0 && (k.nodes[static_cast<std::size_t>(id)].op == Op::broadcast || k.nodes[static_cast<std::size_t>(id)].op == Op::expand_dims))
    id = k.nodes[static_cast<std::size_t>(id)].args[0];
  if (id < 0) return 0;
  const Node& c = k.nodes[static_cast<std::size_t>(id)];
  return c.op == Op::constant && !is_float(c.type.dtype) && !c.type.is_ptr ? c.i : 0;
}

}  // namespace

std::vector<AxisInfo> analyze_axes(const Kernel& k, const Specialization& spec) {
  std::vector<AxisInfo> info(k.nodes.size());
  // nonneg[id]: every element of id is an integer >= 0. Sums and products of such values count as such: like
  // Triton's AxisInfo, this assumes i32 index arithmetic does not overflow (undefined behaviour in the generated C,
  // and an offset past 2^31 - 1 elements is outside any i32-indexed buffer anyway).
  std::vector<char> nonneg(k.nodes.size(), 0);
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    const Type& t = n.type;
    AxisInfo& out = info[id];
    auto in = [&](int j) -> const AxisInfo& { return info[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])]; };
    auto in_type = [&](int j) -> const Type& { return k.nodes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])].type; };
    auto nn = [&](int j) { return n.args[static_cast<std::size_t>(j)] >= 0 && nonneg[static_cast<std::size_t>(n.args[static_cast<std::size_t>(j)])] != 0; };
    const bool int_node = !t.is_ptr && !is_float(t.dtype) && t.dtype != DType::i1;
    const int dims = std::max(t.rank, 1);  // a scalar's rules run on dim 0 (contiguity and constancy 1), then fill
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
        nonneg[id] = int_node && n.i >= 0;
        break;
      case Op::arange:
        out.contiguity[0] = t.shape[0];
        out.divisibility[0] = kMaxDiv;  // one run, starting at 0
        nonneg[id] = 1;
        break;
      case Op::program_id:
        out = scalar_info(t, 1);
        nonneg[id] = 1;
        break;
      case Op::broadcast: {
        nonneg[id] = nn(0);
        const Type& ft = in_type(0);
        if (ft.rank == 0) {
          out = scalar_info(t, in(0).divisibility[0]);
        } else {
          out = in(0);  // a size-1 dim had contiguity 1: its divisibility already holds for every element
          for (int d = 0; d < t.rank; ++d)
            if (ft.shape[static_cast<std::size_t>(d)] == 1 && t.shape[static_cast<std::size_t>(d)] != 1) {
              out.contiguity[static_cast<std::size_t>(d)] = 1;
              out.constancy[static_cast<std::size_t>(d)] = t.shape[static_cast<std::size_t>(d)];
            }
        }
        break;
      }
      case Op::reshape: {
        // The elements in row-major order: read as runs of the source's minor dim (groups of gcd(contiguity, row
        // length) stay inside rows), then cut into the new shape's rows the same way. Sound, not exact: a dim that
        // is not minor keeps contiguity 1 and what every element is a multiple of.
        nonneg[id] = nn(0);
        const AxisInfo& a = in(0);
        const Type& ft = in_type(0);
        const long long unit = ft.is_ptr ? size_bytes(ft.dtype) : 1;
        const auto m = static_cast<std::size_t>(ft.rank == 2 && ft.shape[1] != 1 ? 1 : 0);  // the flat index's runs
        const int row = ft.shape[m];
        const int c = g(a.contiguity[m], row), kc = g(a.constancy[m], row);
        const long long dv = c == a.contiguity[m] ? a.divisibility[m] : div_at(a, static_cast<int>(m), c, unit);
        const long long every = c > 1 ? gl(dv, unit) : dv;  // what each element is a multiple of
        if (t.rank == 1 || t.shape[1] == 1) {
          out.contiguity[0] = c, out.constancy[0] = kc, out.divisibility[0] = dv;
          out.divisibility[1] = every;
        } else {
          const int c1 = g(c, t.shape[1]);
          out.contiguity[1] = c1, out.constancy[1] = g(kc, t.shape[1]);
          out.divisibility[1] = c1 == c ? dv : gl(dv, static_cast<long long>(c1) * unit);
          out.divisibility[0] = every;
        }
        break;
      }
      case Op::expand_dims: {
        nonneg[id] = nn(0);
        const AxisInfo& a = in(0);
        const int src_rank = in_type(0).rank;
        // The new unit dim: contiguity and constancy 1, so its divisibility must hold for every element — what a
        // source dim without runs says (Triton's rule, with the best such dim rather than their gcd).
        long long every = src_rank == 0 ? a.divisibility[0] : 1;
        for (int s = 0; s < src_rank; ++s) every = std::max(every, div_at(a, s, 1));
        for (int d = 0, s = 0; d < t.rank; ++d) {
          const auto u = static_cast<std::size_t>(d);
          if (d == n.axis) {
            out.divisibility[u] = every;
            continue;
          }
          out.contiguity[u] = a.contiguity[static_cast<std::size_t>(s)];
          out.constancy[u] = a.constancy[static_cast<std::size_t>(s)];
          out.divisibility[u] = a.divisibility[static_cast<std::size_t>(s)];
          ++s;
        }
        break;
      }
      case Op::add:
      case Op::sub:
      case Op::addptr: {
        nonneg[id] = n.op == Op::add && int_node && nn(0) && nn(1);
        const AxisInfo& a = in(0);
        const AxisInfo& b = in(1);
        const long long scale = n.op == Op::addptr ? size_bytes(t.dtype) : 1;
        for (int d = 0; d < dims; ++d) {
          const auto u = static_cast<std::size_t>(d);
          int c = g(a.contiguity[u], b.constancy[u]);
          if (n.op == Op::add || n.op == Op::addptr) c = std::max(c, g(a.constancy[u], b.contiguity[u]));
          out.contiguity[u] = c;
          out.constancy[u] = g(a.constancy[u], b.constancy[u]);
          // The sum's runs start every c elements along d: there both terms are multiples of what div_at says.
          out.divisibility[u] = gl(div_at(a, d, c, scale), std::min(kMaxDiv, div_at(b, d, c) * scale));
        }
        break;
      }
      case Op::mul: {
        nonneg[id] = int_node && nn(0) && nn(1);
        const AxisInfo& a = in(0);
        const AxisInfo& b = in(1);
        for (int d = 0; d < dims; ++d) {
          const auto u = static_cast<std::size_t>(d);
          out.constancy[u] = g(a.constancy[u], b.constancy[u]);
          out.divisibility[u] = std::min(kMaxDiv, div_at(a, d, 1) * div_at(b, d, 1));  // no runs: every element
        }
        break;
      }
      case Op::div:
      case Op::rem: {
        // x / q and x % q, x >= 0, q a positive constant. Runs of x along d start at multiples of divisibility[d];
        // split them into aligned groups of grp = gcd(contiguity, q, divisibility): grp divides both a group's
        // first value and q, so the group lies inside one multiple of q. x / q is constant over it; x % q is
        // contiguous over it (it does not wrap), its first value x's reduced mod q.
        const long long q = splat_constant(k, n.args[1]);
        if (!int_node || q <= 0 || !nn(0)) break;  // unknown: the conservative default
        nonneg[id] = 1;
        const AxisInfo& a = in(0);
        if (q == 1) {
          out = n.op == Op::div ? a : scalar_info(t, kMaxDiv);  // x / 1 = x, x % 1 = 0
          break;
        }
        for (int d = 0; d < dims; ++d) {
          const auto u = static_cast<std::size_t>(d);
          const int grp = a.contiguity[u] > 1 ? static_cast<int>(gl(a.contiguity[u], gl(q, a.divisibility[u]))) : 1;
          if (n.op == Op::div) {
            out.contiguity[u] = 1;
            out.constancy[u] = std::max(a.constancy[u], grp);
            const long long x = div_at(a, d, 1);  // every element is now a run of its own
            out.divisibility[u] = x % q == 0 ? x / q : 1;
          } else {
            out.contiguity[u] = grp;
            out.constancy[u] = a.constancy[u];
            out.divisibility[u] = gl(div_at(a, d, grp), q);
          }
        }
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
            const long long grp = gl(static_cast<long long>(a.contiguity[u]), gl(a.divisibility[u], div_at(b, d, 1)));
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
        out.divisibility.fill(gl(info[static_cast<std::size_t>(n.args[0])].divisibility[0], info[static_cast<std::size_t>(n.args[2])].divisibility[0]));
        break;
      case Op::loop_carry: case Op::loop_result:
        break;  // unknown across iterations: the conservative default
      default:
        break;
    }
    for (int d = t.rank; d < kMaxRank; ++d) out.contiguity[static_cast<std::size_t>(d)] = out.constancy[static_cast<std::size_t>(d)] = 1;
    if (t.rank == 0) out.divisibility.fill(out.divisibility[0]);
  }
  return info;
}

}  // namespace tilejit::ir
