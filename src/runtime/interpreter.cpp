#include "tilejit/runtime/interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "device_impl.hpp"
#include "tilejit/core/error.hpp"
#include "tilejit/ir/lower_descriptors.hpp"

namespace tilejit::runtime {
namespace {

using ir::Node;
using ir::Op;

/// A tile value: floats in `f`, integers / bools / addresses in `i`. `undef` (empty when every lane
/// is defined) marks lanes that hold the result of an integer division or remainder by zero, which
/// the GPU leaves unspecified; `undef_from` is the node that produced the first of them. Such lanes
/// flow through arithmetic like LLVM's poison and are an error only where they would matter: a
/// store, a load address or mask, or a loop bound (see Program::check_defined).
struct Value {
  std::vector<double> f;
  std::vector<std::int64_t> i;
  std::vector<std::uint8_t> undef;
  int undef_from = -1;
  /// Pointer tiles: per lane, the parameter its address derives from (one entry: every lane's; -1 or empty:
  /// unknown, e.g. an address loaded from memory). Loads and stores check such lanes against the bounds of the
  /// interpreter allocation that parameter's argument points into (Program::check_bounds).
  std::vector<std::int16_t> prov;
  [[nodiscard]] int prov_at(std::size_t e) const { return prov.empty() ? -1 : prov[prov.size() == 1 ? 0 : e]; }
  [[nodiscard]] bool undef_at(std::size_t e) const { return !undef.empty() && undef[undef.size() == 1 ? 0 : e] != 0; }
};

bool holds_float(const ir::Type& t) { return !t.is_ptr && is_float(t.dtype); }

std::int64_t wrap_int(DType t, std::int64_t v) {
  switch (t) {
    case DType::i1: return v != 0;
    case DType::i8: return static_cast<std::int8_t>(v);
    case DType::i16: return static_cast<std::int16_t>(v);
    case DType::i32: return static_cast<std::int32_t>(static_cast<std::uint32_t>(v));
    case DType::u8: return static_cast<std::uint8_t>(v);
    case DType::u16: return static_cast<std::uint16_t>(v);
    case DType::u32: return static_cast<std::uint32_t>(v);
    default: return v;
  }
}

double read_elem(DType t, std::uintptr_t a) {
  const void* p = reinterpret_cast<const void*>(a);
  switch (t) {
    case DType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::f16: { std::uint16_t b; std::memcpy(&b, p, 2); return f16::to_float(b); }
    case DType::bf16: { std::uint16_t b; std::memcpy(&b, p, 2); return bf16::to_float(b); }
    case DType::f8e4nv: { std::uint8_t b; std::memcpy(&b, p, 1); return f8e4m3::to_float(b); }
    case DType::f8e5: { std::uint8_t b; std::memcpy(&b, p, 1); return f8e5m2::to_float(b); }
    case DType::i1: case DType::u8: { std::uint8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::i8: { std::int8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::i16: { std::int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::u16: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::i32: { std::int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::u32: { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::i64: { std::int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::u64: { std::uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: throw Unsupported(fmt::format("interpreter: loads of {} are not supported", name(t)));
  }
}

std::int64_t read_int(DType t, std::uintptr_t a) {
  const void* p = reinterpret_cast<const void*>(a);
  if (t == DType::i64 || t == DType::u64) { std::int64_t v; std::memcpy(&v, p, 8); return v; }
  return static_cast<std::int64_t>(read_elem(t, a));
}

void write_elem(DType t, std::uintptr_t a, double v, std::int64_t iv) {
  void* p = reinterpret_cast<void*>(a);
  switch (t) {
    case DType::f32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); return; }
    case DType::f64: { std::memcpy(p, &v, 8); return; }
    case DType::f16: { std::uint16_t b = f16::from_float(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::bf16: { std::uint16_t b = bf16::from_float(static_cast<float>(v)); std::memcpy(p, &b, 2); return; }
    case DType::f8e4nv: { std::uint8_t b = f8e4m3::from_float(static_cast<float>(v)); std::memcpy(p, &b, 1); return; }
    case DType::f8e5: { std::uint8_t b = f8e5m2::from_float(static_cast<float>(v)); std::memcpy(p, &b, 1); return; }
    case DType::i1: case DType::u8: case DType::i8: { auto x = static_cast<std::uint8_t>(iv); std::memcpy(p, &x, 1); return; }
    case DType::i16: case DType::u16: { auto x = static_cast<std::uint16_t>(iv); std::memcpy(p, &x, 2); return; }
    case DType::i32: case DType::u32: { auto x = static_cast<std::uint32_t>(iv); std::memcpy(p, &x, 4); return; }
    case DType::i64: case DType::u64: { std::memcpy(p, &iv, 8); return; }
    default: throw Unsupported(fmt::format("interpreter: stores of {} are not supported", name(t)));
  }
}

// Integer arithmetic the way the generated CUDA / HIP code behaves on a GPU: two's complement,
// wrapping on overflow, never a signal. Every value is held in an int64 (narrower types are
// wrapped to their width by wrap_int afterwards), so only 64-bit operands can overflow here;
// these do the arithmetic in uint64 (defined modulo 2^64) and handle INT64_MIN / -1 explicitly
// (x86's idiv traps on it; the GPU gives INT64_MIN, and INT64_MIN % -1 = 0).
std::int64_t wrapping_add(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) + static_cast<std::uint64_t>(y));
}
std::int64_t wrapping_sub(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y));
}
std::int64_t wrapping_mul(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) * static_cast<std::uint64_t>(y));
}

/// x < y for integers as the interpreter holds them: u64 as its bit pattern (compared unsigned), the rest signed.
bool held_less(DType t, std::int64_t x, std::int64_t y) {
  return t == DType::u64 ? static_cast<std::uint64_t>(x) < static_cast<std::uint64_t>(y) : x < y;
}
std::int64_t wrapping_neg(std::int64_t x) { return static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x)); }
/// x / y and x % y for y != 0, of signed operands, or of u64 operands (held as their bit pattern).
std::int64_t int_div(std::int64_t x, std::int64_t y, bool u64) {
  if (u64) return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) / static_cast<std::uint64_t>(y));
  if (y == -1) return wrapping_neg(x);
  return x / y;
}
std::int64_t int_rem(std::int64_t x, std::int64_t y, bool u64) {
  if (u64) return static_cast<std::int64_t>(static_cast<std::uint64_t>(x) % static_cast<std::uint64_t>(y));
  if (y == -1) return 0;
  return x % y;
}
/// A float converted to an integer type as the GPU's cvt.rzi does: truncated, clamped to the
/// destination's range, NaN to 0 (a plain static_cast of an out-of-range double is undefined).
std::int64_t float_to_int(DType t, double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  auto clamp = [&](double lo, double hi) { return v <= lo ? lo : (v >= hi ? hi : v); };
  switch (t) {
    case DType::i8: return static_cast<std::int64_t>(clamp(-128.0, 127.0));
    case DType::i16: return static_cast<std::int64_t>(clamp(-32768.0, 32767.0));
    case DType::i32: return static_cast<std::int64_t>(clamp(-2147483648.0, 2147483647.0));
    case DType::u8: return static_cast<std::int64_t>(clamp(0.0, 255.0));
    case DType::u16: return static_cast<std::int64_t>(clamp(0.0, 65535.0));
    case DType::u32: return static_cast<std::int64_t>(clamp(0.0, 4294967295.0));
    case DType::u64:
      if (v <= 0) return 0;
      if (v >= 18446744073709551616.0) return -1;  // UINT64_MAX's bit pattern
      return static_cast<std::int64_t>(static_cast<std::uint64_t>(v));
    default:  // i64
      if (v <= -9223372036854775808.0) return std::numeric_limits<std::int64_t>::min();
      if (v >= 9223372036854775808.0) return std::numeric_limits<std::int64_t>::max();
      return static_cast<std::int64_t>(v);
  }
}

/// Row-major index of element `e` of `to` in a tile of shape `from` that broadcasts to it.
int broadcast_source(const ir::Type& from, const ir::Type& to, int e) {
  if (from.rank == 0) return 0;
  if (to.rank == 1) return from.shape[0] == 1 ? 0 : e;
  int r = e / to.shape[1], c = e % to.shape[1];
  if (from.shape[0] == 1) r = 0;
  if (from.shape[1] == 1) c = 0;
  return r * from.shape[1] + c;
}

/// The lock the interpreter's atomics take (its programs run on several threads).
std::mutex& atomic_mutex() {
  static std::mutex m;
  return m;
}

/// Row-major index in the [rows, cols] source of element `e` of its transpose `to` ([cols, rows]).
int trans_source(const ir::Type& to, int e) {
  const int rows = to.shape[0], cols = to.shape[1];
  return (e % cols) * rows + e / cols;
}

/// Row-major index of element j (along `axis`) of output element o of a reduction of a tile of type `from`.
int reduce_source(const ir::Type& from, int axis, int o, int j) {
  if (from.rank == 1) return j;
  return axis == 1 ? o * from.shape[1] + j : j * from.shape[1] + o;
}

class Program {
 public:
  Program(const ir::Kernel& k, std::span<const ArgValue> args, std::array<unsigned, 3> grid,
          std::span<const std::optional<std::pair<std::uintptr_t, std::size_t>>> regions)
      : k_(k), args_(args), grid_(grid), regions_(regions), vals_(k.nodes.size()), pending_(k.nodes.size()),
        ends_(ir::loop_ends(k)), carries_(k.nodes.size()), hi_(k.nodes.size()), step_(k.nodes.size()) {
    for (std::size_t id = 0; id < k.nodes.size(); ++id)
      if (k.nodes[id].op == Op::loop_carry) carries_[static_cast<std::size_t>(k.nodes[id].args[1])].push_back(static_cast<int>(id));
  }

  /// Record device events into `out` (the interpreter's stand-in for the SM: `worker`).
  void record_events(std::vector<profiler::DeviceEvent>* out, unsigned worker) {
    ev_ = out;
    worker_ = worker;
  }

  void run(std::array<unsigned, 3> pid) {
    event(static_cast<std::uint16_t>(k_.event_sites.size()), 0, 0, pid);  // the program's span ("program")
    run_nodes(pid);
    event(static_cast<std::uint16_t>(k_.event_sites.size()), 1, 0, pid);
  }

  /// For a Program over a Combine's nodes (ir::Combine::nodes as a kernel): with `in` as combine_arg 0 .. n-1 (the
  /// earlier element's operands, then the later's), the values of nodes `results`.
  std::vector<Value> apply(std::vector<Value>& in, std::span<const int> results) {
    for (std::size_t j = 0; j < in.size(); ++j) vals_[j] = std::move(in[j]);
    for (int pc = static_cast<int>(in.size()); pc < static_cast<int>(k_.nodes.size()); ++pc) eval(pc, {0, 0, 0});
    std::vector<Value> out;
    for (int r : results) out.push_back(vals_[static_cast<std::size_t>(r)]);
    return out;
  }

 private:
  void event(std::uint16_t site, std::uint8_t kind, std::uint32_t id, std::array<unsigned, 3> pid) {
    if (ev_ == nullptr) return;
    const auto t = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
    ev_->push_back({.time_ns = t, .clock = t, .program = pid[0] + grid_[0] * (pid[1] + grid_[1] * pid[2]), .id = id,
                    .site = site, .warp = 0, .kind = kind, .sm = worker_});
  }

  void run_nodes(std::array<unsigned, 3> pid) {
    const int n = static_cast<int>(k_.nodes.size());
    for (int pc = 0; pc < n;) {
      const Node& node = k_[pc];
      const auto u = static_cast<std::size_t>(pc);
      switch (node.op) {
        case Op::loop_begin: {
          for (int j = 0; j < 3; ++j) check_defined(pc, node.args[static_cast<std::size_t>(j)], 0, "a loop bound");
          const std::int64_t lo = at(node.args[0]).i[0];
          hi_[u] = at(node.args[1]).i[0];
          step_[u] = at(node.args[2]).i[0];
          if (step_[u] <= 0) fail(pc, fmt::format("for_range step is {}: it must be positive", step_[u]));
          // for_range's overflow rule; launch checks the bounds its arguments decide, this also those the kernel computes
          if (lo < hi_[u] && hi_[u] + step_[u] - 1 > std::numeric_limits<std::int32_t>::max())
            fail(pc, fmt::format("for_range({}, {}, {}): hi + step - 1 = {} passes 2^31 - 1, so the i32 induction variable could "
                                 "overflow (on a GPU, a loop that never ends); use a smaller bound or step", lo, hi_[u], step_[u],
                                 hi_[u] + step_[u] - 1));
          for (int c : carries_[u]) vals_[static_cast<std::size_t>(c)] = at(k_[c].args[0]);
          if (lo >= hi_[u]) { pc = ends_[u] + 1; continue; }
          vals_[u].i = {lo};
          ++pc;
          continue;
        }
        case Op::loop_carry: ++pc; continue;  // holds the current value, set by loop_begin / loop_end
        case Op::loop_yield: pending_[static_cast<std::size_t>(node.args[0])] = at(node.args[1]); ++pc; continue;
        case Op::loop_end: {
          const auto b = static_cast<std::size_t>(node.args[0]);
          for (int c : carries_[b]) vals_[static_cast<std::size_t>(c)] = std::move(pending_[static_cast<std::size_t>(c)]);
          const std::int64_t next = vals_[b].i[0] + step_[b];
          if (next < hi_[b]) {
            vals_[b].i = {next};
            pc = static_cast<int>(b) + 1;
          } else {
            ++pc;
          }
          continue;
        }
        case Op::loop_result: vals_[u] = at(node.args[0]); ++pc; continue;
        case Op::event:
          check_defined(pc, node.args[0], 0, "an event id");
          event(static_cast<std::uint16_t>(node.i), static_cast<std::uint8_t>(node.axis), static_cast<std::uint32_t>(at(node.args[0]).i[0]), pid);
          ++pc;
          continue;
        default:
          eval(pc, pid);
          track_undef(pc);
          track_prov(pc);
          ++pc;
      }
    }
  }

  const Value& at(int id) const { return vals_[static_cast<std::size_t>(id)]; }

  /// Element e of v as a one-element Value (a combine's operand).
  static Value element_of(const Value& v, bool fl, std::size_t e) {
    Value x;
    if (fl) x.f = {v.f[e]};
    else x.i = {v.i[e]};
    return x;
  }

  [[noreturn]] void fail(int id, const std::string& what) const {
    throw InvalidArgument(fmt::format("interpreter: node %{} ({}): {}", id, ir::name(k_[id].op), what));
  }

  /// Throws if element `e` of node `arg` (the `what` of node `id`) is undefined: the result of an
  /// integer division by zero reaching memory or control flow, where the GPU's unspecified value
  /// would change what the kernel does.
  void check_defined(int id, int arg, std::size_t e, const char* what) const {
    if (arg < 0) return;
    const Value& v = at(arg);
    if (!v.undef_at(e)) return;
    fail(id, fmt::format("element {} of {} is the result of an integer division or remainder by zero (node %{}), "
                         "which is unspecified on the GPU; mask it out or select it away with where()",
                         e, what, v.undef_from));
  }

  /// Throws if lane `e` of the addresses `ptrs` (node `arg`), accessing `bytes` bytes, leaves the interpreter
  /// allocation its parameter's argument points into (unchecked where either is unknown).
  void check_bounds(int id, int arg, std::size_t e, int bytes, const char* what) const {
    const Value& v = at(arg);
    const int p = v.prov_at(e);
    if (p < 0 || !regions_[static_cast<std::size_t>(p)]) return;
    const auto [begin, size] = *regions_[static_cast<std::size_t>(p)];
    const auto addr = static_cast<std::uintptr_t>(v.i[e]);
    if (addr >= begin && addr - begin <= size && size - (addr - begin) >= static_cast<std::size_t>(bytes)) return;
    const auto off = static_cast<std::int64_t>(addr - begin);  // two's complement: negative below the allocation
    fail(id, fmt::format("element {} of the {} is out of bounds: byte offset {} of argument {} ({}), an interpreter allocation "
                         "of {} bytes (a mask missing?)",
                         e, what, off, p, k_.params[static_cast<std::size_t>(p)].name, size));
  }

  /// Carries pointer provenance (Value::prov) from node `id`'s arguments to its value (after eval computed it).
  void track_prov(int id) {
    const Node& n = k_[id];
    if (!n.type.is_ptr) return;
    Value& out = vals_[static_cast<std::size_t>(id)];
    out.prov.clear();
    const int N = n.type.numel();
    auto copy = [&](const Value& src, auto&& lane) {
      if (src.prov.empty()) return;
      if (src.prov.size() == 1) { out.prov = src.prov; return; }
      out.prov.resize(static_cast<std::size_t>(N));
      for (int e = 0; e < N; ++e) out.prov[static_cast<std::size_t>(e)] = src.prov[static_cast<std::size_t>(lane(e))];
    };
    switch (n.op) {
      case Op::param: out.prov = {static_cast<std::int16_t>(n.i)}; return;
      case Op::desc_field: out.prov = {static_cast<std::int16_t>(k_[n.args[0]].i)}; return;  // the base of a descriptor
      case Op::addptr: case Op::expand_dims: case Op::reshape: case Op::broadcast: case Op::trans: break;
      case Op::where: {
        const Value &x = at(n.args[1]), &y = at(n.args[2]), &c = at(n.args[0]);
        if (x.prov.empty() && y.prov.empty()) return;
        out.prov.resize(static_cast<std::size_t>(N));
        for (int e = 0; e < N; ++e)
          out.prov[static_cast<std::size_t>(e)] = static_cast<std::int16_t>(c.i[static_cast<std::size_t>(c.i.size() == 1 ? 0 : e)] ? x.prov_at(static_cast<std::size_t>(e)) : y.prov_at(static_cast<std::size_t>(e)));
        return;
      }
      default: return;  // loaded, cast, ...: unknown
    }
    const Value& src = at(n.args[0]);
    switch (n.op) {
      case Op::broadcast: copy(src, [&](int e) { return broadcast_source(k_[n.args[0]].type, n.type, e); }); return;
      case Op::trans: copy(src, [&](int e) { return trans_source(n.type, e); }); return;
      default: copy(src, [](int e) { return e; }); return;
    }
  }

  /// Marks lane `e` of node `id`'s value undefined (an integer division or remainder by zero).
  void mark_undef(Value& out, int N, int e, int origin) {
    if (out.undef.empty()) out.undef.assign(static_cast<std::size_t>(N), 0);
    out.undef[static_cast<std::size_t>(e)] = 1;
    if (out.undef_from < 0) out.undef_from = origin;
  }

  /// Carries undefined lanes from node `id`'s arguments to its value (after eval computed it).
  void track_undef(int id) {
    const Node& n = k_[id];
    Value& out = vals_[static_cast<std::size_t>(id)];
    const int N = n.type.numel();
    auto arg = [&](int j) -> const Value* {
      const int a = n.args[static_cast<std::size_t>(j)];
      return a < 0 || at(a).undef.empty() ? nullptr : &at(a);
    };
    auto from = [&](const Value* v, int e, int src) { if (v && v->undef_at(static_cast<std::size_t>(src))) mark_undef(out, N, e, v->undef_from); };
    switch (n.op) {
      case Op::param: case Op::program_id: case Op::num_programs: case Op::constant: case Op::arange:
      case Op::desc_field: case Op::expand_dims: case Op::reshape: case Op::store: return;  // expand_dims and reshape copied their argument
      case Op::load:  // addresses and mask were checked by eval; masked-off lanes take `other`
        if (const Value* o = arg(2))
          for (int e = 0; e < N; ++e)
            if (!(n.args[1] < 0 || at(n.args[1]).i[static_cast<std::size_t>(e)])) from(o, e, 0);
        return;
      case Op::where: {
        const Value *c = arg(0), *x = arg(1), *y = arg(2);
        if (!c && !x && !y) return;
        for (int e = 0; e < N; ++e) {
          from(c, e, e);
          from(at(n.args[0]).i[static_cast<std::size_t>(e)] ? x : y, e, e);
        }
        return;
      }
      case Op::trans:
        if (const Value* v = arg(0))
          for (int e = 0; e < N; ++e) from(v, e, trans_source(n.type, e));
        return;
      case Op::broadcast:
        if (const Value* v = arg(0))
          for (int e = 0; e < N; ++e) from(v, e, broadcast_source(k_[n.args[0]].type, n.type, e));
        return;
      case Op::reduce_sum: case Op::reduce_max: case Op::reduce_min: case Op::reduce_custom: {
        const ir::Type& ft = k_[n.args[0]].type;
        const int len = ft.shape[n.axis];
        for (int k = 0; k < ir::kMaxCombineArity; ++k) {  // (several operands: each result depends on all)
          const Value* v = n.args[static_cast<std::size_t>(k)] >= 0 ? arg(k) : nullptr;
          if (!v) continue;
          for (int o = 0; o < N; ++o)
            for (int j = 0; j < len; ++j)
              from(v, o, reduce_source(ft, n.axis, o, j));
        }
        return;
      }
      case Op::scan_sum: case Op::scan_prod: case Op::scan_max: case Op::scan_min: case Op::scan_custom: {
        // Element j depends on the elements before it (after it, reversed) of every operand (a scan of several
        // operands: each of its values on all, so tuple_get copies this node's).
        const int len = n.type.shape[n.axis], lines = N / len;
        for (int k = 0; k < ir::kMaxCombineArity; ++k) {
          const Value* v = n.args[static_cast<std::size_t>(k)] >= 0 ? arg(k) : nullptr;
          if (!v) continue;
          for (int o = 0; o < lines; ++o)
            for (int j = 0; j < len; ++j)
              for (int s = 0; s < len; ++s)
                if (n.i == 1 ? s >= j : s <= j) from(v, reduce_source(n.type, n.axis, o, j), reduce_source(n.type, n.axis, o, s));
        }
        return;
      }
      case Op::dot: {
        const Value *va = arg(0), *vb = arg(1), *vc = arg(2);
        if (!va && !vb && !vc) return;
        const int M = n.type.shape[0], Nn = n.type.shape[1], K = k_[n.args[0]].type.shape[1];
        for (int m = 0; m < M; ++m)
          for (int j = 0; j < Nn; ++j) {
            const int e = m * Nn + j;
            from(vc, e, e);
            for (int kk = 0; kk < K; ++kk) {
              from(va, e, m * K + kk);
              from(vb, e, kk * Nn + j);
            }
          }
        return;
      }
      default:  // elementwise: unary, binary, compare, cast, addptr (operands have the result's shape)
        for (std::size_t j = 0; j < n.args.size(); ++j) {
          if (n.args[j] < 0) continue;
          const Value* v = arg(static_cast<int>(j));
          for (int e = 0; v && e < N; ++e) from(v, e, e);
        }
        return;
    }
  }

  void eval(int id, std::array<unsigned, 3> pid) {
    const Node& n = k_[id];
    Value& out = vals_[static_cast<std::size_t>(id)];
    const int N = n.type.numel();
    const bool fl = holds_float(n.type);
    auto a = [&](int j) -> const Value& { return at(n.args[static_cast<std::size_t>(j)]); };
    auto type_of_arg = [&](int j) -> const ir::Type& { return k_[n.args[static_cast<std::size_t>(j)]].type; };
    out.f.clear();
    out.i.clear();
    out.undef.clear();
    out.undef_from = -1;
    auto put_f = [&](auto&& g) { out.f.resize(static_cast<std::size_t>(N)); for (int e = 0; e < N; ++e) out.f[e] = round_to(n.type.dtype, g(e)); };
    auto put_i = [&](auto&& g) { out.i.resize(static_cast<std::size_t>(N)); for (int e = 0; e < N; ++e) out.i[e] = wrap_int(n.type.dtype, g(e)); };

    switch (n.op) {
      case Op::param: {
        const ArgValue& v = args_[static_cast<std::size_t>(n.i)];
        if (n.type.is_desc) {
          if (v.kind != ArgValue::Kind::descriptor) fail(id, "a descriptor parameter needs a TensorDescriptor argument");
          out.i = {static_cast<std::int64_t>(n.i)};  // fields are read from the argument by desc_field
        } else if (n.type.is_ptr) out.i = {static_cast<std::int64_t>(v.address)};
        else if (fl) out.f = {round_to(n.type.dtype, v.kind == ArgValue::Kind::floating ? v.f : static_cast<double>(v.i))};
        else out.i = {wrap_int(n.type.dtype, v.i)};
        return;
      }
      case Op::program_id: out.i = {static_cast<std::int64_t>(pid[static_cast<std::size_t>(n.axis)])}; return;
      case Op::num_programs: out.i = {static_cast<std::int64_t>(grid_[static_cast<std::size_t>(n.axis)])}; return;
      case Op::constant:
        if (fl) put_f([&](int) { return n.f; }); else put_i([&](int) { return n.i; });
        return;
      case Op::arange: put_i([](int e) { return e; }); return;
      case Op::desc_field: {
        const ArgValue& d = args_[static_cast<std::size_t>(a(0).i[0])];
        switch (n.i) {
          case 0: out.i = {static_cast<std::int64_t>(d.address)}; return;
          case 1: case 2: out.i = {d.shape[static_cast<std::size_t>(n.i - 1)]}; return;
          case 3: out.i = {d.strides[0]}; return;
          case 4: out.i = {d.oob_nan ? 1 : 0}; return;
          default:
            if (n.i >= ir::kDescShape && n.i < ir::kDescShape + d.rank) {
              out.i = {d.shape[static_cast<std::size_t>(n.i - ir::kDescShape)]};
              return;
            }
            if (n.i >= ir::kDescStride && n.i < ir::kDescStride + d.rank) {
              out.i = {d.strides[static_cast<std::size_t>(n.i - ir::kDescStride)]};
              return;
            }
            fail(id, fmt::format("descriptor field {} does not exist (rank {})", n.i, d.rank));
        }
      }
      case Op::trans: {
        auto src = [&](int e) { return trans_source(n.type, e); };
        if (holds_float(n.type)) { out.f.resize(N); for (int e = 0; e < N; ++e) out.f[e] = a(0).f[src(e)]; }
        else { out.i.resize(N); for (int e = 0; e < N; ++e) out.i[e] = a(0).i[src(e)]; }
        return;
      }
      case Op::broadcast: {
        const ir::Type& ft = type_of_arg(0);
        if (holds_float(ft)) { out.f.resize(N); for (int e = 0; e < N; ++e) out.f[e] = a(0).f[broadcast_source(ft, n.type, e)]; }
        else { out.i.resize(N); for (int e = 0; e < N; ++e) out.i[e] = a(0).i[broadcast_source(ft, n.type, e)]; }
        return;
      }
      case Op::expand_dims: out = a(0); return;
      case Op::reshape: out = a(0); return;  // the same elements in the same (row-major) order
      case Op::cast: {
        const ir::Type& ft = type_of_arg(0);
        if (fl) {
          // One rounding, as the generated code does (codegen cast_expr): from f64 to the 16- and 8-bit formats
          // by round-to-odd to float first; integers straight to f32 / f64 (an i64 through double rounded twice).
          const DType to = n.type.dtype;
          if (ft.dtype == DType::f64) put_f([&](int e) { return narrow_float(to, a(0).f[e]); });
          else if (holds_float(ft)) put_f([&](int e) { return a(0).f[e]; });
          else put_f([&](int e) { return int_to_float(to, a(0).i[e], ft.dtype == DType::u64); });
        } else {
          if (holds_float(ft)) put_i([&](int e) {
            double v = a(0).f[e];
            if (n.type.dtype == DType::i1) return static_cast<std::int64_t>(v != 0);
            return float_to_int(n.type.dtype, v);
          });
          else put_i([&](int e) { return a(0).i[e]; });
        }
        return;
      }
      case Op::addptr: {
        const int es = size_bytes(n.type.dtype);
        out.i.resize(N);
        for (int e = 0; e < N; ++e) out.i[e] = wrapping_add(a(0).i[e], wrapping_mul(a(1).i[e], es));
        return;
      }
      case Op::where:
        if (fl) put_f([&](int e) { return a(0).i[e] ? a(1).f[e] : a(2).f[e]; });
        else put_i([&](int e) { return a(0).i[e] ? a(1).i[e] : a(2).i[e]; });
        return;
      case Op::load: {
        const bool has_mask = n.args[1] >= 0, has_other = n.args[2] >= 0;
        const DType t = n.type.dtype;
        for (int e = 0; e < N; ++e) {
          check_defined(id, n.args[1], static_cast<std::size_t>(e), "the load's mask");
          bool on = !has_mask || a(1).i[e];
          if (on) check_defined(id, n.args[0], static_cast<std::size_t>(e), "the load's addresses");
          std::uintptr_t addr = static_cast<std::uintptr_t>(a(0).i[e]);
          if (on && addr == 0) fail(id, fmt::format("load through a null pointer (element {})", e));
          if (on) check_bounds(id, n.args[0], static_cast<std::size_t>(e), size_bytes(t), "load's addresses");
          if (fl) {
            double v = on ? read_elem(t, addr) : (has_other ? a(2).f[0] : 0.0);
            out.f.push_back(v);
          } else {
            std::int64_t v = on ? read_int(t, addr) : (has_other ? a(2).i[0] : 0);
            out.i.push_back(v);
          }
        }
        return;
      }
      case Op::store: {
        const bool has_mask = n.args[2] >= 0;
        const DType t = n.type.dtype;
        const bool vf = holds_float(type_of_arg(1));
        for (int e = 0; e < N; ++e) {
          check_defined(id, n.args[2], static_cast<std::size_t>(e), "the store's mask");
          if (has_mask && !a(2).i[e]) continue;
          check_defined(id, n.args[0], static_cast<std::size_t>(e), "the store's addresses");
          check_defined(id, n.args[1], static_cast<std::size_t>(e), "the stored value");
          std::uintptr_t addr = static_cast<std::uintptr_t>(a(0).i[e]);
          if (addr == 0) fail(id, fmt::format("store through a null pointer (element {})", e));
          check_bounds(id, n.args[0], static_cast<std::size_t>(e), size_bytes(t), "store's addresses");
          write_elem(t, addr, vf ? a(1).f[e] : 0.0, vf ? 0 : a(1).i[e]);
        }
        return;
      }
      case Op::atomic_add: case Op::atomic_max: case Op::atomic_min: case Op::atomic_xchg: case Op::atomic_cas: {
        // A read-modify-write per element, in row-major order; programs run on several threads (interpret), so one
        // mutex makes every atomic of every program indivisible.
        std::lock_guard atomic_lock(atomic_mutex());
        const bool cas = n.op == Op::atomic_cas;
        const bool has_mask = !cas && n.args[2] >= 0;
        const DType t = n.type.dtype;
        auto less = [t](std::int64_t x, std::int64_t y) { return held_less(t, x, y); };
        // f32 max / min as the generated code does them, on the bits: max is a signed max where the operand's sign
        // bit is clear and an unsigned min where it is set; min a signed min / unsigned max (right for every non-NaN
        // pair; +0 > -0).
        auto f32_minmax = [&](double old, double v) {
          const auto ob = std::bit_cast<std::uint32_t>(static_cast<float>(old)), vb = std::bit_cast<std::uint32_t>(static_cast<float>(v));
          const bool neg = (vb >> 31) != 0;
          const auto si = [](std::uint32_t x) { return static_cast<std::int32_t>(x); };
          std::uint32_t r;
          if (n.op == Op::atomic_max) r = neg ? std::min(ob, vb) : (si(ob) < si(vb) ? vb : ob);
          else r = neg ? std::max(ob, vb) : (si(vb) < si(ob) ? vb : ob);
          return static_cast<double>(std::bit_cast<float>(r));
        };
        for (int e = 0; e < N; ++e) {
          if (has_mask) check_defined(id, n.args[2], static_cast<std::size_t>(e), "the atomic's mask");
          if (has_mask && !a(2).i[e]) {
            if (fl) out.f.push_back(0.0);
            else out.i.push_back(0);
            continue;
          }
          check_defined(id, n.args[0], static_cast<std::size_t>(e), "the atomic's addresses");
          check_defined(id, n.args[1], static_cast<std::size_t>(e), "the atomic's operand");
          if (cas) check_defined(id, n.args[2], static_cast<std::size_t>(e), "the atomic's value");
          const std::uintptr_t addr = static_cast<std::uintptr_t>(a(0).i[e]);
          if (addr == 0) fail(id, fmt::format("atomic through a null pointer (element {})", e));
          check_bounds(id, n.args[0], static_cast<std::size_t>(e), size_bytes(t), "atomic's addresses");
          if (fl) {
            const double old = read_elem(t, addr), v = a(1).f[e];
            const double nv = n.op == Op::atomic_add ? round_to(t, old + v) : n.op == Op::atomic_xchg ? v : f32_minmax(old, v);
            write_elem(t, addr, nv, 0);
            out.f.push_back(old);
          } else {
            const std::int64_t old = read_int(t, addr), v = a(1).i[e];
            std::int64_t nv = old;
            switch (n.op) {
              case Op::atomic_add: nv = wrap_int(t, wrapping_add(old, v)); break;
              case Op::atomic_max: nv = less(old, v) ? v : old; break;
              case Op::atomic_min: nv = less(v, old) ? v : old; break;
              case Op::atomic_xchg: nv = v; break;
              default: nv = old == v ? a(2).i[e] : old; break;  // cas: compare v, value args[2]
            }
            write_elem(t, addr, 0.0, nv);
            out.i.push_back(old);
          }
        }
        return;
      }
      case Op::dot: {
        const ir::Type& ta = type_of_arg(0);
        const int M = ta.shape[0], K = ta.shape[1], Nn = n.type.shape[1];
        if (!fl) {  // i8 x i8 -> i32: exact, wrapping at 32 bits
          out.i.resize(static_cast<std::size_t>(N));
          for (int m = 0; m < M; ++m)
            for (int j = 0; j < Nn; ++j) {
              std::int64_t acc = a(2).i[static_cast<std::size_t>(m * Nn + j)];
              for (int kk = 0; kk < K; ++kk)
                acc += a(0).i[static_cast<std::size_t>(m * K + kk)] * a(1).i[static_cast<std::size_t>(kk * Nn + j)];
              out.i[static_cast<std::size_t>(m * Nn + j)] = wrap_int(DType::i32, acc);
            }
          return;
        }
        out.f.resize(static_cast<std::size_t>(N));
        for (int m = 0; m < M; ++m)
          for (int j = 0; j < Nn; ++j) {
            double acc = 0;  // tensor cores add exact products of 16-bit inputs
            for (int kk = 0; kk < K; ++kk) acc += a(0).f[static_cast<std::size_t>(m * K + kk)] * a(1).f[static_cast<std::size_t>(kk * Nn + j)];
            out.f[static_cast<std::size_t>(m * Nn + j)] = round_to(DType::f32, a(2).f[static_cast<std::size_t>(m * Nn + j)] + acc);
          }
        return;
      }
      case Op::reduce_sum: case Op::reduce_max: case Op::reduce_min: {
        const ir::Type& ft = type_of_arg(0);
        const int rows = ft.rank == 2 ? (n.axis == 1 ? ft.shape[0] : ft.shape[1]) : 1;
        const int len = ft.shape[n.axis];
        auto src = [&](int o, int j) { return reduce_source(ft, n.axis, o, j); };
        auto combine = [&](double x, double y) {
          if (n.op == Op::reduce_sum) return x + y;
          if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
          return n.op == Op::reduce_max ? std::max(x, y) : std::min(x, y);
        };
        if (fl) {
          // Accumulate in the node's own precision, as the generated code does for f32
          // (f16/bf16 tiles are accumulated in f32 and rounded at the end).
          const DType acc_t = n.type.dtype == DType::f64 ? DType::f64 : DType::f32;
          out.f.resize(rows);
          for (int o = 0; o < rows; ++o) {
            double acc = a(0).f[src(o, 0)];
            for (int j = 1; j < len; ++j) acc = round_to(acc_t, combine(acc, a(0).f[src(o, j)]));
            out.f[o] = round_to(n.type.dtype, acc);
          }
        } else {
          out.i.resize(rows);
          auto less = [&](std::int64_t x, std::int64_t y) { return held_less(n.type.dtype, x, y); };
          for (int o = 0; o < rows; ++o) {
            std::int64_t acc = a(0).i[src(o, 0)];
            for (int j = 1; j < len; ++j) {
              std::int64_t y = a(0).i[src(o, j)];
              if (n.op == Op::reduce_sum) acc = wrap_int(n.type.dtype, wrapping_add(acc, y));
              else if (n.op == Op::reduce_max) acc = less(acc, y) ? y : acc;
              else acc = less(y, acc) ? y : acc;
            }
            out.i[o] = acc;
          }
        }
        return;
      }
      case Op::reduce_custom: {
        // The combine folds each row in index order, an element being a Value per operand: operand 0's result is
        // this node's value, the others' wait in parts_ for the tuple_get nodes.
        const ir::Type& ft = type_of_arg(0);
        const int len = ft.shape[n.axis];
        Combiner& comb = combiner(n.fn);
        Tuples t = tuples(n, static_cast<int>(comb.results.size()), N);
        auto element = [&](int o, int j) { return t.element(static_cast<std::size_t>(reduce_source(ft, n.axis, o, j))); };
        for (int o = 0; o < N; ++o) {
          std::vector<Value> acc = element(o, 0);
          for (int j = 1; j < len; ++j) acc = comb(acc, element(o, j));
          t.put(acc, static_cast<std::size_t>(o));
        }
        keep_parts(id, out, t.outs);
        return;
      }
      case Op::scan_custom: {
        // The combine runs on one element (a Value per operand) at a time, in index order. Operand 0's scan is
        // this node's value, the others' wait in parts_ for the tuple_get nodes.
        Combiner& comb = combiner(n.fn);
        const int len = n.type.shape[n.axis], lines = N / len;
        const bool rev = n.i == 1;
        auto at_line = [&](int o, int j) { return static_cast<std::size_t>(reduce_source(n.type, n.axis, o, rev ? len - 1 - j : j)); };
        Tuples t = tuples(n, static_cast<int>(comb.results.size()), N);
        for (int o = 0; o < lines; ++o) {
          std::vector<Value> acc;
          for (int j = 0; j < len; ++j) {
            const std::size_t e = at_line(o, j);
            acc = j == 0 ? t.element(e) : rev ? comb(t.element(e), acc) : comb(acc, t.element(e));
            t.put(acc, e);
          }
        }
        keep_parts(id, out, t.outs);
        return;
      }
      case Op::tuple_get: {
        const Value& v = parts_.at(static_cast<std::size_t>(n.args[0])).at(static_cast<std::size_t>(n.i - 1));
        out.f = v.f;
        out.i = v.i;
        return;
      }
      case Op::scan_sum: case Op::scan_prod: case Op::scan_max: case Op::scan_min: {
        const int len = n.type.shape[n.axis], lines = N / len;
        const bool rev = n.i == 1;
        auto at_line = [&](int o, int j) { return static_cast<std::size_t>(reduce_source(n.type, n.axis, o, rev ? len - 1 - j : j)); };
        if (fl) {
          // Accumulated in f32 (f64 for f64), each result rounded to the element type once, as the generated code does.
          const DType acc_t = n.type.dtype == DType::f64 ? DType::f64 : DType::f32;
          auto combine = [&](double x, double y) {
            if (n.op == Op::scan_sum) return x + y;
            if (n.op == Op::scan_prod) return x * y;
            if (std::isnan(x) || std::isnan(y)) return std::numeric_limits<double>::quiet_NaN();
            return n.op == Op::scan_max ? std::max(x, y) : std::min(x, y);
          };
          out.f.resize(static_cast<std::size_t>(N));
          for (int o = 0; o < lines; ++o) {
            double acc = 0;
            for (int j = 0; j < len; ++j) {
              const double x = a(0).f[at_line(o, j)];
              acc = j == 0 ? round_to(acc_t, x) : round_to(acc_t, combine(acc, x));
              out.f[at_line(o, j)] = round_to(n.type.dtype, acc);
            }
          }
        } else {
          auto less = [&](std::int64_t x, std::int64_t y) { return held_less(n.type.dtype, x, y); };
          out.i.resize(static_cast<std::size_t>(N));
          for (int o = 0; o < lines; ++o) {
            std::int64_t acc = 0;
            for (int j = 0; j < len; ++j) {
              const std::int64_t y = a(0).i[at_line(o, j)];
              if (j == 0) acc = y;
              else if (n.op == Op::scan_sum) acc = wrap_int(n.type.dtype, wrapping_add(acc, y));
              else if (n.op == Op::scan_prod) acc = wrap_int(n.type.dtype, wrapping_mul(acc, y));
              else if (n.op == Op::scan_max) acc = less(acc, y) ? y : acc;
              else acc = less(y, acc) ? y : acc;
              out.i[at_line(o, j)] = acc;
            }
          }
        }
        return;
      }
      default: break;
    }
    if (ir::is_unary(n.op)) {
      if (fl) {
        put_f([&](int e) {
          double x = a(0).f[e];
          switch (n.op) {
            case Op::neg: return -x;
            case Op::exp: return std::exp(x);
            case Op::exp2: return std::exp2(x);
            case Op::log: return std::log(x);
            case Op::sqrt: return std::sqrt(x);
            case Op::rsqrt: return 1.0 / std::sqrt(x);
            case Op::abs: return std::fabs(x);
            case Op::log2: return std::log2(x);
            case Op::sin: return std::sin(x);
            case Op::cos: return std::cos(x);
            case Op::tanh: return std::tanh(x);
            case Op::erf: return std::erf(x);
            case Op::floor: return std::floor(x);
            case Op::ceil: return std::ceil(x);
            case Op::sigmoid: return 1.0 / (1.0 + std::exp(-x));
            default: fail(id, "not a float operation");
          }
        });
      } else {
        put_i([&](int e) {
          std::int64_t x = a(0).i[e];
          switch (n.op) {
            case Op::neg: return wrapping_neg(x);
            case Op::logical_not: return std::int64_t{!x};
            // abs(INT64_MIN) = INT64_MIN, as on the GPU; an unsigned value is its own (u64 is held as its bit pattern)
            case Op::abs: return x < 0 && is_signed_int(n.type.dtype) ? wrapping_neg(x) : x;
            default: fail(id, "not an integer operation");
          }
        });
      }
      return;
    }
    if (ir::is_binary(n.op)) {
      const bool of = holds_float(type_of_arg(0));
      const bool u64 = !type_of_arg(0).is_ptr && type_of_arg(0).dtype == DType::u64;  // held as its bit pattern
      if (ir::is_compare(n.op)) {
        put_i([&](int e) -> std::int64_t {
          auto cmp = [&](auto x, auto y) {
            switch (n.op) {
              case Op::lt: return x < y;
              case Op::le: return x <= y;
              case Op::gt: return x > y;
              case Op::ge: return x >= y;
              case Op::eq: return x == y;
              default: return x != y;
            }
          };
          if (of) return cmp(a(0).f[e], a(1).f[e]);
          if (u64) return cmp(static_cast<std::uint64_t>(a(0).i[e]), static_cast<std::uint64_t>(a(1).i[e]));
          return cmp(a(0).i[e], a(1).i[e]);
        });
      } else if (fl) {
        put_f([&](int e) {
          double x = a(0).f[e], y = a(1).f[e];
          switch (n.op) {
            case Op::add: return x + y;
            case Op::sub: return x - y;
            case Op::mul: return x * y;
            case Op::div: return x / y;
            case Op::rem: return std::fmod(x, y);
            case Op::maximum: return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN() : std::max(x, y);
            case Op::minimum: return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN() : std::min(x, y);
            default: fail(id, "not a float operation");
          }
        });
      } else {
        put_i([&](int e) {
          std::int64_t x = a(0).i[e], y = a(1).i[e];
          switch (n.op) {
            case Op::add: return wrapping_add(x, y);
            case Op::sub: return wrapping_sub(x, y);
            case Op::mul: return wrapping_mul(x, y);
            case Op::div: if (y == 0) { mark_undef(out, N, e, id); return std::int64_t{0}; } return int_div(x, y, u64);
            case Op::rem: if (y == 0) { mark_undef(out, N, e, id); return std::int64_t{0}; } return int_rem(x, y, u64);
            case Op::maximum: return u64 ? (static_cast<std::uint64_t>(x) < static_cast<std::uint64_t>(y) ? y : x) : std::max(x, y);
            case Op::minimum: return u64 ? (static_cast<std::uint64_t>(y) < static_cast<std::uint64_t>(x) ? y : x) : std::min(x, y);
            case Op::bit_and: return x & y;
            case Op::bit_or: return x | y;
            case Op::bit_xor: return x ^ y;
            default: fail(id, "not an integer operation");
          }
        });
      }
      return;
    }
    fail(id, "unknown operation");
  }

  /// A custom scan's or reduction's operands and results while it runs: element e of each operand (a combine's
  /// input), and one result Value of N elements per operand, float or integer as the operand is.
  struct Tuples {
    std::vector<const Value*> ins;
    std::vector<bool> fl;
    std::vector<Value> outs;
    std::vector<Value> element(std::size_t e) const {
      std::vector<Value> x;
      for (std::size_t k = 0; k < ins.size(); ++k) x.push_back(element_of(*ins[k], fl[k], e));
      return x;
    }
    void put(const std::vector<Value>& acc, std::size_t e) {
      for (std::size_t k = 0; k < outs.size(); ++k) {
        if (fl[k]) outs[k].f[e] = acc[k].f[0];
        else outs[k].i[e] = acc[k].i[0];
      }
    }
  };
  Tuples tuples(const Node& n, int arity, int N) const {
    Tuples t;
    t.outs.resize(static_cast<std::size_t>(arity));
    for (int k = 0; k < arity; ++k) {
      const int a = n.args[static_cast<std::size_t>(k)];
      t.ins.push_back(&at(a));
      t.fl.push_back(holds_float(k_[a].type));
      if (t.fl.back()) t.outs[static_cast<std::size_t>(k)].f.resize(static_cast<std::size_t>(N));
      else t.outs[static_cast<std::size_t>(k)].i.resize(static_cast<std::size_t>(N));
    }
    return t;
  }

  /// The results of a scan or reduction of node `id`, one per operand: the first is its value (`out`), the
  /// others are kept in parts_ for its tuple_get nodes.
  void keep_parts(int id, Value& out, std::vector<Value>& outs) {
    out.f = std::move(outs[0].f);
    out.i = std::move(outs[0].i);
    if (outs.size() == 1) return;
    if (parts_.empty()) parts_.resize(k_.nodes.size());
    parts_[static_cast<std::size_t>(id)].assign(std::make_move_iterator(outs.begin() + 1), std::make_move_iterator(outs.end()));
  }

  /// Combine `fn` of the kernel (the operator of a scan_custom / reduce_custom) as a small Program of its own
  /// nodes, made on first use and kept: each result is rounded to its node's type by the same rules as here.
  struct Combiner {
    ir::Kernel nodes;
    std::unique_ptr<Program> program;
    std::vector<int> results;
    std::vector<Value> in;
    /// One operand: combine(x, y).
    Value operator()(Value x, Value y) {
      in.assign(2, Value{});
      in[0] = std::move(x);
      in[1] = std::move(y);
      return std::move(program->apply(in, results)[0]);
    }
    /// Several: combine of the earlier element x (one Value per operand) and the later y.
    std::vector<Value> operator()(const std::vector<Value>& x, const std::vector<Value>& y) {
      in = x;
      in.insert(in.end(), y.begin(), y.end());
      return program->apply(in, results);
    }
  };
  Combiner& combiner(int fn) {
    if (combiners_.empty()) combiners_.resize(k_.combines.size());
    auto& c = combiners_.at(static_cast<std::size_t>(fn));
    if (!c) {
      c = std::make_unique<Combiner>();
      c->nodes.nodes = k_.combines[static_cast<std::size_t>(fn)].nodes;
      c->program = std::make_unique<Program>(c->nodes, std::span<const ArgValue>{}, grid_,
                                             std::span<const std::optional<std::pair<std::uintptr_t, std::size_t>>>{});
      c->results = k_.combines[static_cast<std::size_t>(fn)].results;
    }
    return *c;
  }

  const ir::Kernel& k_;
  std::span<const ArgValue> args_;
  std::array<unsigned, 3> grid_;
  std::span<const std::optional<std::pair<std::uintptr_t, std::size_t>>> regions_;  // per parameter (interpret)
  std::vector<Value> vals_, pending_;
  std::vector<int> ends_;
  std::vector<std::vector<int>> carries_;  // per loop_begin: its loop_carry nodes
  std::vector<std::int64_t> hi_, step_;
  std::vector<profiler::DeviceEvent>* ev_ = nullptr;  // record_events
  unsigned worker_ = 0;
  std::vector<std::unique_ptr<Combiner>> combiners_;  // per Kernel::combines entry, made by combiner()
  std::vector<std::vector<Value>> parts_;  // per scan_custom of several operands: the scans of operands 1 .. arity-1
};

}  // namespace

void interpret(const ir::Kernel& k0, std::array<unsigned, 3> grid, std::span<const ArgValue> args, unsigned threads,
               std::vector<profiler::DeviceEvent>* events) {
  const ir::Kernel k = ir::lower_descriptors(k0);  // descriptor loads as masked loads (TMA's semantics)
  if (args.size() != k.params.size())
    throw InvalidArgument(fmt::format("kernel {} takes {} arguments, got {}", k.name, k.params.size(), args.size()));
  for (int d = 0; d < 3; ++d)
    if (grid[static_cast<std::size_t>(d)] == 0)
      throw InvalidArgument(fmt::format("grid dimension {} is 0: every grid dimension must be >= 1", d));
  const std::uint64_t total = std::uint64_t{grid[0]} * grid[1] * grid[2];
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::uint64_t>(threads, total));
  std::atomic<std::uint64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  std::atomic<unsigned> workers{0};
  std::mutex events_mu;
  // The interpreter allocation each pointer / descriptor argument points into (none for other host memory):
  // the bounds its loads and stores are checked against.
  std::vector<std::optional<std::pair<std::uintptr_t, std::size_t>>> regions(args.size());
  for (std::size_t i = 0; i < args.size(); ++i)
    if (args[i].kind == ArgValue::Kind::pointer || args[i].kind == ArgValue::Kind::descriptor)
      regions[i] = detail::interpreter_allocation(args[i].address);
  auto worker = [&] {
    Program prog(k, args, grid, regions);
    std::vector<profiler::DeviceEvent> mine;
    if (events) prog.record_events(&mine, workers.fetch_add(1));
    try {
      for (std::uint64_t p; (p = next.fetch_add(1)) < total;) {
        std::array<unsigned, 3> pid{static_cast<unsigned>(p % grid[0]), static_cast<unsigned>((p / grid[0]) % grid[1]),
                                    static_cast<unsigned>(p / (std::uint64_t{grid[0]} * grid[1]))};
        prog.run(pid);
      }
    } catch (...) {
      std::lock_guard lock(error_mu);
      if (!error) error = std::current_exception();
      next = total;
    }
    if (events) {
      std::lock_guard lock(events_mu);
      events->insert(events->end(), mine.begin(), mine.end());
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace tilejit::runtime
