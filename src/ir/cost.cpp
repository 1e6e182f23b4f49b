// tilejit/ir/cost.cpp — see cost.hpp.
#include "tilejit/ir/cost.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "loop_check.hpp"

namespace tilejit::ir {
namespace {

double tile_bytes(const Type& t) { return static_cast<double>(t.numel()) * size_bytes(t.dtype); }

int dot_width(DType a) {
  if (a == DType::f32) return 32;  // tf32 products: the width the tensor cores run them at
  return size_bytes(a) * 8;
}

/// Integer value of scalar node `id` at launch, memoised; nullopt when it depends on anything but arguments,
/// descriptor shapes, num_programs and constants.
class ScalarEval {
 public:
  ScalarEval(const Kernel& k, const CostInputs& in) : k_(k), in_(in) {}

  std::optional<long long> operator()(int id) {
    for (const auto& [node, value] : memo_)
      if (node == id) return value;
    const std::optional<long long> v = compute(id);
    memo_.emplace_back(id, v);
    return v;
  }

 private:
  std::optional<long long> compute(int id) {
    const Node& n = k_[id];
    if (n.type.rank != 0 || n.type.is_ptr || n.type.is_desc || !is_int(n.type.dtype)) return std::nullopt;
    auto arg = [&](int i) { return (*this)(n.args[static_cast<std::size_t>(i)]); };
    switch (n.op) {
      case Op::constant: return static_cast<long long>(n.i);
      case Op::param: return in_.scalar ? in_.scalar(static_cast<int>(n.i)) : std::nullopt;
      case Op::num_programs:
        if (n.axis < 0 || n.axis > 2) return std::nullopt;
        return in_.grid[static_cast<std::size_t>(n.axis)];
      case Op::desc_field: {
        // shape[0], shape[1] of a 2-D descriptor; shape[d] of any
        const int dim = n.i == 1 || n.i == 2 ? static_cast<int>(n.i) - 1
                        : n.i >= kDescShape && n.i < kDescShape + 5 ? static_cast<int>(n.i) - kDescShape : -1;
        const Node& d = k_[n.args[0]];
        if (dim < 0 || d.op != Op::param || !in_.desc_shape) return std::nullopt;
        return in_.desc_shape(static_cast<int>(d.i), dim);
      }
      case Op::cast: return arg(0);
      case Op::add: case Op::sub: case Op::mul: case Op::div: case Op::rem: case Op::maximum: case Op::minimum: {
        const auto a = arg(0), b = arg(1);
        if (!a || !b) return std::nullopt;
        long long r = 0;
        switch (n.op) {
          case Op::add: if (__builtin_add_overflow(*a, *b, &r)) return std::nullopt; return r;
          case Op::sub: if (__builtin_sub_overflow(*a, *b, &r)) return std::nullopt; return r;
          case Op::mul: if (__builtin_mul_overflow(*a, *b, &r)) return std::nullopt; return r;
          case Op::div: if (*b == 0 || (*b == -1 && *a == std::numeric_limits<long long>::min())) return std::nullopt; return *a / *b;
          case Op::rem: if (*b == 0) return std::nullopt; if (*b == -1) return 0; return *a % *b;  // (INT64_MIN % -1 traps)
          case Op::maximum: return std::max(*a, *b);
          default: return std::min(*a, *b);
        }
      }
      default: return std::nullopt;  // program_id, loads, loop values, compares...
    }
  }

  const Kernel& k_;
  const CostInputs& in_;
  std::vector<std::pair<int, std::optional<long long>>> memo_;  // few bounds per kernel: a list beats a map
};

std::int64_t saturate(double v) {
  if (!(v > 0)) return 0;
  if (v >= 9.2e18) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(std::llround(v));
}

}  // namespace

CostPlan plan_cost(const Kernel& k) {
  CostPlan p;
  p.flops.assign(1, 0.0);
  p.bytes.assign(1, 0.0);
  std::vector<int> open;  // loop indices, innermost last
  for (std::size_t id = 0; id < k.nodes.size(); ++id) {
    const Node& n = k.nodes[id];
    const std::size_t level = open.empty() ? 0 : static_cast<std::size_t>(open.back()) + 1;
    switch (n.op) {
      case Op::loop_begin: {
        CostPlan::Loop l{.lo = n.args[0], .hi = n.args[1], .step = n.args[2], .parent = open.empty() ? -1 : open.back()};
        const Node& lo = k[l.lo];
        const Node& st = k[l.step];
        if (lo.op == Op::program_id && st.op == Op::num_programs && lo.axis == st.axis) l.grid_axis = lo.axis;
        p.loops.push_back(l);
        p.flops.push_back(0.0);
        p.bytes.push_back(0.0);
        open.push_back(static_cast<int>(p.loops.size()) - 1);
        break;
      }
      case Op::loop_end:
        if (!open.empty()) open.pop_back();
        break;
      case Op::dot: {
        const Type& a = k[n.args[0]].type;
        const Type& b = k[n.args[1]].type;
        p.flops[level] += 2.0 * a.shape[0] * a.shape[1] * b.shape[1];
        if (p.flops_width == 0) p.flops_width = dot_width(a.dtype);
        break;
      }
      case Op::load: case Op::desc_load: p.bytes[level] += tile_bytes(n.type); break;
      case Op::store: p.bytes[level] += tile_bytes(k[n.args[1]].type); break;
      case Op::atomic_add: case Op::atomic_max: case Op::atomic_min: case Op::atomic_xchg: case Op::atomic_cas:
        p.bytes[level] += 2 * tile_bytes(n.type);  // read and written
        break;
      case Op::desc_store: p.bytes[level] += tile_bytes(k[n.args[3]].type); break;
      default: break;
    }
  }
  // A loop is counted when its body, or a loop inside it, holds work (children come after their parents).
  for (std::size_t i = p.loops.size(); i-- > 0;) {
    CostPlan::Loop& l = p.loops[i];
    l.counted = l.counted || p.flops[i + 1] > 0 || p.bytes[i + 1] > 0;
    if (l.counted && l.parent >= 0) p.loops[static_cast<std::size_t>(l.parent)].counted = true;
  }
  return p;
}

std::optional<std::string> loop_overflow(const CostPlan& p, const Kernel& k, const CostInputs& in) {
  ScalarEval eval(k, in);
  for (const CostPlan::Loop& l : p.loops) {
    const auto hi = eval(l.hi), step = eval(l.step);
    if (!hi || !step || *step <= 0) continue;  // (a step <= 0 is the step check's to report)
    const auto lo = eval(l.lo);                // a grid-stride loop's program_id: unknown, checked as if it ran
    if (lo && *lo >= *hi) continue;            // runs no iteration
    if (*hi + *step - 1 > std::numeric_limits<std::int32_t>::max())
      return fmt::format("a for_range loop with {}hi = {} and step = {}: hi + step - 1 = {} passes 2^31 - 1, so its i32 induction "
                         "variable could overflow (on a GPU, a loop that never ends); use a smaller bound or step",
                         lo ? fmt::format("lo = {}, ", *lo) : "", *hi, *step, *hi + *step - 1);
  }
  return std::nullopt;
}

std::optional<LaunchCost> evaluate_cost(const CostPlan& p, const Kernel& k, const CostInputs& in) {
  ScalarEval eval(k, in);
  const double programs = static_cast<double>(in.grid[0]) * static_cast<double>(in.grid[1]) * static_cast<double>(in.grid[2]);
  // How often each loop's body runs over the whole launch (loops precede the loops they enclose).
  std::vector<double> runs(p.loops.size(), 0.0);
  std::vector<unsigned> strided(p.loops.size(), 0);  // bit a: a grid-stride loop over axis a encloses (or is) this one
  double flops = p.flops[0] * programs, bytes = p.bytes[0] * programs;
  for (std::size_t i = 0; i < p.loops.size(); ++i) {
    const CostPlan::Loop& l = p.loops[i];
    if (!l.counted) continue;
    const double outer = l.parent < 0 ? programs : runs[static_cast<std::size_t>(l.parent)];
    const unsigned outer_strided = l.parent < 0 ? 0u : strided[static_cast<std::size_t>(l.parent)];
    const auto hi = eval(l.hi);
    if (!hi) return std::nullopt;
    if (l.grid_axis >= 0) {
      // Programs 0..P-1 along the axis start at their id and step by P: hi iterations among them (none if hi <= 0).
      const unsigned bit = 1u << l.grid_axis;
      if (outer_strided & bit) return std::nullopt;
      const double along = static_cast<double>(in.grid[static_cast<std::size_t>(l.grid_axis)]);
      runs[i] = outer / along * static_cast<double>(std::max(*hi, 0LL));
      strided[i] = outer_strided | bit;
    } else {
      const auto lo = eval(l.lo), step = eval(l.step);
      if (!lo || !step || *step <= 0) return std::nullopt;  // a step <= 0 traps at run time
      const double trip = *hi > *lo ? static_cast<double>((*hi - *lo - 1) / *step + 1) : 0.0;
      runs[i] = outer * trip;
      strided[i] = outer_strided;
    }
    flops += p.flops[i + 1] * runs[i];
    bytes += p.bytes[i + 1] * runs[i];
  }
  LaunchCost c;
  c.flops = saturate(flops);
  c.flops_width = p.flops_width == 0 ? 32 : p.flops_width;
  c.bytes = saturate(bytes);
  return c;
}

}  // namespace tilejit::ir
