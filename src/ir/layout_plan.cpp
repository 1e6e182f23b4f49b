// The layout-assignment pass. See include/tilejit/ir/layout_plan.hpp.
#include "tilejit/ir/layout_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "tilejit/core/error.hpp"
#include "tilejit/ir/axis_info.hpp"
#include "tilejit/layout/encodings/mma_sync.hpp"
#include "tilejit/layout/encodings/mfma.hpp"
#include "tilejit/layout/encodings/wgmma.hpp"

namespace tilejit::ir {

int wgmma_groups_along_n(const Kernel& k, int dot, int num_warps) {
  const Node& n = k.nodes[static_cast<std::size_t>(dot)];
  const int M = n.type.shape[0], N = n.type.shape[1], g = num_warps / 4;
  if (M != 64 || num_warps % 4 != 0 || (g != 2 && g != 4) || N % g != 0) return 1;
  const DType et = k.nodes[static_cast<std::size_t>(n.args[0])].type.dtype;
  const int ng = N / g, es = size_bytes(et);
  if (!layout::wgmma_legal_n(ng) || layout::wgmma_padded_n(ng) != ng) return 1;
  if (et == DType::i8 && !(ng % 16 == 0 || ng == 8 || ng == 24)) return 1;
  // An MN-major B splits at whole 128-byte slabs (with g >= 2, N/g columns filling 64- or 32-byte slabs would make
  // the row a multiple of 128 bytes, held in 128-byte slabs).
  if (k.nodes[static_cast<std::size_t>(n.args[1])].op != Op::trans && ng * es % 128 != 0) return 1;
  // The only dot of its extent: dots that meet (a shared accumulator, O and S of attention's softmax) must lower
  // alike, and another [64, N] dot may not split (its B in registers, or half a slab) — then none does.
  for (std::size_t x = 0; x < k.nodes.size(); ++x)
    if (static_cast<int>(x) != dot && k.nodes[x].op == Op::dot && k.nodes[x].type.shape[0] == M && k.nodes[x].type.shape[1] == N)
      return 1;
  return g;
}

namespace {

int largest_pow2_dividing(int n, int cap) {
  int p = 1;
  while (p * 2 <= cap && n % (p * 2) == 0) p *= 2;
  return p;
}

/// The largest divisor of `room` that also divides n (room a 7-smooth warp count: 12 warps over an extent of 96
/// take all 12, over 64 take 4).
int largest_common_divisor(int n, int room) { return std::gcd(n, room); }

/// Union-find over node ids (rank-1 values that must share a dim).
struct Classes {
  std::vector<int> parent;
  explicit Classes(std::size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int find(int x) { return parent[static_cast<std::size_t>(x)] == x ? x : parent[static_cast<std::size_t>(x)] = find(parent[static_cast<std::size_t>(x)]); }
  void unite(int a, int b) { parent[static_cast<std::size_t>(find(a))] = find(b); }
};

}  // namespace

int Distributed::register_coord(int r, int d) const {
  int c = 0;
  for (const auto& g : reg) {
    int digit = (r / g.stride) % g.radix;
    if (additive)
      c += digit * g.image[static_cast<std::size_t>(d)];
    else if (digit)
      c ^= g.image[static_cast<std::size_t>(d)];
  }
  return c;
}

Distributed distributed_from(const layout::LinearLayout& l, int warp_size) {
  Distributed d;
  d.rank = l.num_out_dims();
  for (int j = 0; j < d.rank; ++j) d.shape[static_cast<std::size_t>(j)] = l.out_digits(j).size();
  d.warp_size = warp_size;
  bool all_binary = true;
  // Which output digit positions each input digit touches (for the additivity test).
  std::vector<std::vector<int>> used(static_cast<std::size_t>(d.rank));
  for (int j = 0; j < d.rank; ++j) used[static_cast<std::size_t>(j)].assign(static_cast<std::size_t>(l.out_digits(j).num_digits()), 0);
  bool additive = true;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    const std::string_view name = l.in_name(i).view();
    std::vector<InputDigit>* dst = name == "register" ? &d.reg : name == "lane" ? &d.lane : name == "warp" ? &d.warp : nullptr;
    if (!dst) throw Unsupported(fmt::format("codegen: layout input dim '{}' is not register/lane/warp", name));
    const auto& ds = l.in_digits(i);
    for (int k = 0; k < ds.num_digits(); ++k) {
      InputDigit g;
      g.radix = ds.radix(k);
      g.stride = ds.stride(k);
      if (g.radix != 2) all_binary = false;
      auto img = l.image(i, k);
      for (int j = 0; j < d.rank; ++j) {
        g.image[static_cast<std::size_t>(j)] = img[static_cast<std::size_t>(j)];
        const auto& os = l.out_digits(j);
        for (int m = 0; m < os.num_digits(); ++m) {
          int od = os.digit(img[static_cast<std::size_t>(j)], m);
          if (od == 0) continue;
          if (od != 1 || used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)]) additive = false;
          used[static_cast<std::size_t>(j)][static_cast<std::size_t>(m)] = 1;
        }
      }
      dst->push_back(g);
    }
    if (dst == &d.reg) d.registers = ds.size();
    if (dst == &d.warp) d.num_warps = ds.size();
  }
  d.additive = additive;
  if (!additive && !all_binary)
    throw Unsupported("codegen: layout mixes digits of radix > 2 non-additively; lowering such layouts is not supported yet");
  // A compact description: per input digit, its image.
  std::string desc = fmt::format("shape [{}", d.shape[0]);
  if (d.rank == 2) desc += fmt::format(",{}", d.shape[1]);
  desc += "]";
  auto list = [&](const char* nm, const std::vector<InputDigit>& v) {
    desc += fmt::format("; {}:", nm);
    for (const auto& g : v)
      desc += d.rank == 2 ? fmt::format(" r{}({},{})", g.radix, g.image[0], g.image[1]) : fmt::format(" r{}({})", g.radix, g.image[0]);
  };
  list("register", d.reg);
  list("lane", d.lane);
  list("warp", d.warp);
  d.description = desc;
  return d;
}

namespace {

/// A blocked parent (Triton's BlockedEncoding, built as a product of
/// identities): lanes first along the `minor` dim (the tile's last dim unless
/// the plan found its loads contiguous along another one) so a warp's accesses
/// are contiguous, then warps, then registers; the NPOT part of each extent
/// lands in the register digits (96 = 32 lanes x 3 registers). Lanes or warps
/// beyond the tile's extent map to zero: they hold copies.
/// Why a blocked layout leaves threads holding copies, for its description: the tile has fewer elements than the
/// program has threads, or its dims have too few factors of 2 (lanes and warps split only those: [210, 210] over
/// 128 threads is 2 x 2 distinct threads of 11025 registers each).
std::string copies_note(const std::array<int, kMaxRank>& shape, int rank, int lane_room, int warp_room, int warp_size, int num_warps,
                        int registers) {
  if (lane_room * warp_room == 1) return "";
  const long elements = static_cast<long>(shape[0]) * (rank == 2 ? shape[1] : 1);
  const int threads = warp_size * num_warps;
  if (elements < threads) return fmt::format(" ({} lane and {} warp copies: the tile is smaller than the program)", lane_room, warp_room);
  return fmt::format(" ({} lane and {} warp copies: only {} of {} threads hold distinct elements, {} registers each, because lanes "
                     "and warps split only the dims' factors of 2; dims of a power of two times 3, 5 or 7, such as 224 = 32 x 7, "
                     "spread over every thread)", lane_room, warp_room, threads / (lane_room * warp_room), threads, registers);
}

layout::LinearLayout blocked_parent(int rank, std::array<int, kMaxRank> shape, int num_warps, int warp_size,
                                    std::string& desc, int vec = 1, int minor = -1) {
  using layout::LinearLayout;
  if (minor < 0) minor = rank - 1;
  // Dims from the fastest-varying (minor) to the slowest.
  const std::array<int, kMaxRank> order = rank == 2 ? std::array<int, kMaxRank>{minor, 1 - minor} : std::array<int, kMaxRank>{0, -1};
  // size_per_thread along the minor dim: up to `vec` consecutive elements per
  // thread (one 16-byte access), the largest that still gives every lane its
  // own elements (96 f32 over one warp stays 1: 32 lanes x 3; [32, 96] takes 4:
  // 8 lanes along a row, 4 rows).
  int spt = largest_pow2_dividing(shape[static_cast<std::size_t>(minor)], vec);
  std::array<int, kMaxRank> lanes{1, 1}, warps{1, 1}, regs{1, 1};
  int lane_room = warp_size;
  for (;; spt /= 2) {
    lane_room = warp_size;
    for (int i = 0; i < rank; ++i) {
      const int d = order[static_cast<std::size_t>(i)];
      const int e = shape[static_cast<std::size_t>(d)] / (d == minor ? spt : 1);
      lanes[static_cast<std::size_t>(d)] = largest_pow2_dividing(e, lane_room);
      lane_room /= lanes[static_cast<std::size_t>(d)];
    }
    if (lane_room == 1 || spt == 1) break;
  }
  int warp_room = num_warps;
  for (int i = 0; i < rank; ++i) {
    const int d = order[static_cast<std::size_t>(i)];
    const int e = shape[static_cast<std::size_t>(d)] / (d == minor ? spt : 1) / lanes[static_cast<std::size_t>(d)];
    warps[static_cast<std::size_t>(d)] = largest_common_divisor(e, warp_room);
    warp_room /= warps[static_cast<std::size_t>(d)];
    regs[static_cast<std::size_t>(d)] = e / warps[static_cast<std::size_t>(d)];
  }
  const char* dim_name[2] = {"dim0", "dim1"};
  LinearLayout p = LinearLayout::identity1D(1, "register", "dim0") * LinearLayout::identity1D(1, "lane", dim_name[rank - 1]) *
                   LinearLayout::identity1D(1, "warp", "dim0");
  // Each input's digits along the dims in `order` (minor first).
  auto along = [&](const std::array<int, kMaxRank>& n, const char* in) {
    for (int i = 0; i < rank; ++i) {
      const auto d = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
      p *= LinearLayout::identity1D(n[d], in, dim_name[d]);
    }
  };
  p *= LinearLayout::identity1D(spt, "register", dim_name[minor]);
  along(lanes, "lane");
  p *= LinearLayout::zeros1D(lane_room, "lane", dim_name[minor]);
  along(warps, "warp");
  p *= LinearLayout::zeros1D(warp_room, "warp", dim_name[minor]);
  along(regs, "register");
  auto list = [&](const std::array<int, kMaxRank>& v) { return rank == 2 ? fmt::format("[{},{}]", v[0], v[1]) : fmt::format("[{}]", v[0]); };
  desc = fmt::format("blocked {} size_per_thread {}{} lanes {} warps {} registers {}{}", list(shape), spt,
                     minor != rank - 1 ? fmt::format(" along dim{} (its loads are contiguous there)", minor) : "", list(lanes),
                     list(warps), list(regs),
                     copies_note(shape, rank, lane_room, warp_room, warp_size, num_warps, regs[0] * regs[1] * spt));
  return p;
}

/// Warps of an mma accumulator [M, N] as {wM, wN, copies}. Every legal split
/// (M a multiple of 16·wM, N of 8·wN) computes the same accumulator registers
/// per thread, but the operands differ: A is broadcast over the wN warps of a
/// warp row and B over the wM warps of a column, so a thread holds
/// K·M/(32·wM) A elements and K·N/(32·wN) B elements. Pick the split that
/// minimises M/wM + N/wN (the operand registers, and the operand bytes the
/// program loads), preferring more warps along M on a tie (128x128 over 8
/// warps: 4x2, a 32x64 accumulator tile per warp). An accumulator too small
/// for all the warps (16x16 over 4: one m16n8 tile pair) takes the most
/// warps that divide it, and the other warps compute copies (`copies` > 1:
/// Triton's replication; the layouts give the copies image 0, so stores and
/// reductions see one value).
std::array<int, 3> mma_warps(int m, int n, int num_warps, int node) {
  for (int used = num_warps; used >= 1; --used) {  // the divisors of num_warps, largest first (12: 12, 6, 4, 3, 2, 1)
    if (num_warps % used != 0) continue;
    std::array<int, 3> best{0, 0, num_warps / used};
    long best_cost = 0;
    for (int wm = used; wm >= 1; --wm) {
      if (used % wm != 0) continue;
      const int wn = used / wm;
      if (m % (16 * wm) != 0 || n % (8 * wn) != 0) continue;
      const long cost = m / wm + n / wn;
      if (best[0] == 0 || cost < best_cost) best[0] = wm, best[1] = wn, best_cost = cost;
    }
    if (best[0] != 0) return best;
  }
  throw Unsupported(fmt::format("dot %{}: an accumulator of [{},{}] does not fit mma.sync m16n8 tiles ({})", node, m, n,
                                m % 16 != 0 ? fmt::format("M = {} is not a multiple of 16", m)
                                            : fmt::format("N = {} is not a multiple of 8", n)));
}

/// Throws Unsupported naming the rule when an mma.sync dot cannot take operands of `et` with inner dimension `kdim`
/// (one m16n8k8 / k16 / k32 instruction covers 8 · the elements per 32-bit register along K).
void check_mma_sync_k(DType et, int kdim, int node) {
  const bool ok_type = et == DType::f16 || et == DType::bf16 || et == DType::f32 || et == DType::i8 || et == DType::f8e4nv ||
                       et == DType::f8e5;
  if (!ok_type)
    throw Unsupported(fmt::format("dot %{}: mma.sync takes f16, bf16, f32 (as tf32), i8, f8e4nv or f8e5 operands, not {}", node,
                                  name(et)));
  const int kstep = 8 * layout::mma_sync_k_width(size_bytes(et));
  if (kdim % kstep != 0)
    throw Unsupported(fmt::format("dot %{}: K = {} is not a multiple of {}, the K of one mma.sync m16n8k{} for {} operands", node,
                                  kdim, kstep, kstep, name(et)));
}

/// `l` with `copies` more warps (a power of two) holding the same elements: the warp digits above l's, image 0.
layout::LinearLayout with_warp_copies(const layout::LinearLayout& l, int copies) {
  if (copies == 1) return l;
  return l * layout::LinearLayout::zeros1D(copies, "warp", "dim0");
}

/// MFMA on AMD CDNA with f16/bf16 instructions of 4 elements per lane (the
/// `_1k` bf16 forms): gfx90a (MI200) and gfx94x (MI300).
bool mfma_arch(const std::string& arch) { return arch == "gfx90a" || arch.rfind("gfx94", 0) == 0; }
bool cdna3(const std::string& arch) { return arch.rfind("gfx94", 0) == 0; }

/// The MFMA size and wavefront split for an [m, n] accumulator with operands of K = kdim, kw elements per lane:
/// 32x32 tiles if some split of the wavefronts divides it and kdim is whole instructions (kw · 2), else 16x16
/// (kw · 4); among splits, the one minimising m/wM + n/wN (operand elements staged per wavefront). An accumulator
/// too small for all the wavefronts takes the most that divide it; the others compute copies (as mma_warps).
std::pair<int, std::array<int, 2>> mfma_plan(int m, int n, int kdim, int kw, int num_warps, int node) {
  for (int used = num_warps; used >= 1; --used) {  // the divisors of num_warps, largest first
    if (num_warps % used != 0) continue;
    for (int r : {32, 16}) {
      if (kw > 0 && kdim % (kw * 64 / r) != 0) continue;
      std::array<int, 2> best{0, 0};
      long best_cost = 0;
      for (int wm = used; wm >= 1; --wm) {
        if (used % wm != 0) continue;
        const int wn = used / wm;
        if (m % (r * wm) != 0 || n % (r * wn) != 0) continue;
        const long cost = m / wm + n / wn;
        if (best[0] == 0 || cost < best_cost) best = {wm, wn}, best_cost = cost;
      }
      if (best[0] != 0) return {r, best};
    }
  }
  std::string why;  // per instruction, the rules [m, n] x K breaks
  for (int r : {32, 16}) {
    std::string broken;
    auto add = [&](const std::string& x) { broken += (broken.empty() ? "" : ", ") + x; };
    if (m % r != 0) add(fmt::format("M = {} is not a multiple of {}", m, r));
    if (n % r != 0) add(fmt::format("N = {} is not a multiple of {}", n, r));
    if (kw > 0 && kdim % (kw * 64 / r) != 0) add(fmt::format("K = {} is not a multiple of {}", kdim, kw * 64 / r));
    why += fmt::format("{}{}x{}: {}", why.empty() ? "" : "; ", r, r, broken);
  }
  throw Unsupported(fmt::format("dot %{}: [{},{}] x K={} fits neither MFMA 32x32 nor 16x16 tiles ({})", node, m, n, kdim, why));
}

}  // namespace

int mfma_k_width(DType et, const std::string& arch) {
  switch (et) {
    case DType::f16: case DType::bf16: return 4;
    case DType::f32: return 1;
    case DType::i8: return cdna3(arch) ? 8 : 4;
    case DType::f8e4nv: case DType::f8e5: return cdna3(arch) ? 8 : 0;
    default: return 0;
  }
}

TileLayout LayoutPlan::operand_layout(const Kernel& k, int node, int which) const {
  const Node& n = k.nodes[static_cast<std::size_t>(node)];
  const int a = n.args[static_cast<std::size_t>(which)];
  const Type& at = k.nodes[static_cast<std::size_t>(a)].type;
  if (at.rank == 0) return {};  // scalars need no layout
  const TileLayout& mine = values[static_cast<std::size_t>(node)];
  switch (n.op) {
    case Op::dot:
      if (which == 0 && dot_rs[static_cast<std::size_t>(node)]) return dot_operands[static_cast<std::size_t>(node)][0];
      if (which < 2 && (dot_wgmma[static_cast<std::size_t>(node)] || dot_mfma[static_cast<std::size_t>(node)]))
        return values[static_cast<std::size_t>(a)];
      return which < 2 ? dot_operands[static_cast<std::size_t>(node)][static_cast<std::size_t>(which)] : mine;
    case Op::reduce_sum: case Op::reduce_max: case Op::reduce_min: case Op::reduce_custom:
      // A reduction runs in its operand's own layout; operands of one reduced together (a tuple, all of one shape)
      // are brought to operand 0's.
      return values[static_cast<std::size_t>(which == 0 ? a : n.args[0])];
    case Op::expand_dims: {
      TileLayout t = mine;
      t.dim_of = {-1, -1};
      for (int d = 0, o = 0; d < n.type.rank; ++d)
        if (d != n.axis) t.dim_of[static_cast<std::size_t>(o++)] = mine.dim_of[static_cast<std::size_t>(d)];
      return t;
    }
    case Op::broadcast: {
      TileLayout t = mine;
      for (int d = 0; d < at.rank; ++d)
        if (at.shape[static_cast<std::size_t>(d)] == 1) t.dim_of[static_cast<std::size_t>(d)] = -1;
      return t;
    }
    case Op::trans:
      return dot_operands[static_cast<std::size_t>(node)][0];  // assign_layouts: the transpose of this value's layout
    case Op::reshape:
      return values[static_cast<std::size_t>(a)];  // codegen moves the elements itself (each thread's, or via shared memory)
    case Op::loop_yield: case Op::loop_result:
      return values[static_cast<std::size_t>(n.args[0])];  // the carry's layout
    default:
      return mine;
  }
}

int vector_elements(const Distributed& d, const TileLayout& t, const Type& type, const AxisInfo& ptr, const AxisInfo* mask,
                    int tile_dim) {
  const int es = size_bytes(type.dtype);
  if (t.scalar || type.is_ptr || (es != 2 && es != 4) || tile_dim < 0 || tile_dim >= type.rank) return 1;
  const int pd = t.dim_of[static_cast<std::size_t>(tile_dim)];
  if (pd < 0) return 1;
  int run = 1;  // the thread's registers 0 .. run-1 hold coordinates 0 .. run-1 along pd, nothing else
  for (const auto& g : d.reg) {
    if (g.radix != 2 || g.stride != run || g.image[static_cast<std::size_t>(pd)] != run) break;
    bool only_pd = true;
    for (int x = 0; x < d.rank; ++x)
      if (x != pd && g.image[static_cast<std::size_t>(x)] != 0) only_pd = false;
    if (!only_pd) break;
    run *= 2;
  }
  const auto u = static_cast<std::size_t>(tile_dim);
  long long w = std::min<long long>({run, ptr.contiguity[u], ptr.divisibility[u] / es, 16 / es});
  if (mask) w = std::min<long long>(w, mask->constancy[u]);
  int v = 1;
  while (v * 2 <= w) v *= 2;
  return v * es >= 4 ? v : 1;
}

namespace {
/// The same map with output dims dim0 and dim1 swapped (a [M, N] layout read as [N, M]).
layout::LinearLayout transposed(const layout::LinearLayout& l) {
  return l.transpose_outs({"dim1", "dim0"}).rename_out_dim(0, "tmp").rename_out_dim(1, "dim1").rename_out_dim(0, "dim0");
}
}  // namespace

layout::Result<layout::LinearLayout> reshaped_layout(const LayoutPlan& plan, const TileLayout& t, const Type& from, const Type& to) {
  using layout::Failure;
  using layout::Reason;
  if (t.scalar || t.layout < 0 || from.rank < 1 || to.rank < 1)
    return Failure{Reason("a scalar has no layout to reshape")};
  const layout::LinearLayout& parent = plan.linear[static_cast<std::size_t>(t.layout)];
  // The value's own layout: the parent's dims it spans, in tile order, named dim0[, dim1].
  layout::NameList keep, order;
  for (int d = 0; d < from.rank; ++d) {
    const int pd = t.dim_of[static_cast<std::size_t>(d)];
    if (pd < 0 || parent.out_size(pd) != from.shape[static_cast<std::size_t>(d)])
      return Failure{Reason("tile dim ") << d << " of size " << from.shape[static_cast<std::size_t>(d)]
                                         << " is not a whole dim of its layout (a size-1 dim or a slice of a larger one)"};
  }
  for (int j = 0; j < parent.num_out_dims(); ++j)
    for (int d = 0; d < from.rank; ++d)
      if (t.dim_of[static_cast<std::size_t>(d)] == j) keep.push_back(parent.out_name(j));
  for (int d = 0; d < from.rank; ++d) order.push_back(parent.out_name(t.dim_of[static_cast<std::size_t>(d)]));
  layout::NameList ins;
  for (int i = 0; i < parent.num_in_dims(); ++i) ins.push_back(parent.in_name(i));
  layout::LinearLayout own = parent.sublayout(ins, keep).transpose_outs(order);
  for (int d = 0; d < from.rank; ++d) own = own.rename_out_dim(d, d == 0 ? "t0" : "t1");
  // Row-major: the last dim is minor, so the dims go minor first (the algebra's flattening order) before the
  // digits are regrouped.
  if (from.rank == 2) own = own.transpose_outs({"t1", "t0"});
  layout::SizeList sizes;
  if (to.rank == 2) {
    sizes.push_back({"dim1", to.shape[1]});
    sizes.push_back({"dim0", to.shape[0]});
  } else {
    sizes.push_back({"dim0", to.shape[0]});
  }
  auto r = own.reshape_outs(sizes);
  if (!r.ok() || to.rank == 1) return r;
  return r.value().transpose_outs({"dim0", "dim1"});
}

namespace {
/// assign_layouts with the whole-rows split (`whole_rows_ok`) allowed or not.
LayoutPlan assign(const Kernel& k, int num_warps, int warp_size, const std::string& arch, bool vector_any_dim, bool whole_rows_ok) {
  LayoutPlan plan;
  const std::size_t N = k.nodes.size();
  plan.values.resize(N);
  plan.dot_operands.resize(N);
  plan.dot_wgmma.assign(N, 0);
  plan.dot_rs.assign(N, 0);
  plan.in_smem.assign(N, 0);
  plan.dot_mfma.assign(N, 0);
  plan.dot_split.assign(N, {0, 0});
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::desc_load || (n.op == Op::trans && plan.in_smem[static_cast<std::size_t>(n.args[0])])) plan.in_smem[id] = 1;
  }
  auto add_layout = [&](const layout::LinearLayout& l, const std::string& what) {
    for (std::size_t i = 0; i < plan.linear.size(); ++i)
      if (plan.linear[i] == l) return static_cast<int>(i);
    plan.linear.push_back(l);
    plan.layouts.push_back(distributed_from(l, warp_size));
    plan.layouts.back().num_warps = num_warps;
    plan.diagnostics.push_back(fmt::format("layout L{}: {}", plan.linear.size() - 1, what));
    return static_cast<int>(plan.linear.size()) - 1;
  };
  auto rank = [&](int id) { return k.nodes[static_cast<std::size_t>(id)].type.rank; };

  // 1. Families: rank-2 values that meet elementwise (or through loops) share a parent.
  Classes fam(N);
  Classes cls(N);  // rank-1 classes (filled in step 3)
  // Elements per thread along the minor dim for a family (rank 2) or class
  // (rank 1) root: 16 bytes over the widest element its loads and stores move.
  auto access_vec = [&](int root, bool two_d) {
    int widest = 0;
    for (std::size_t id = 0; id < N; ++id) {
      const Node& n = k.nodes[id];
      if ((n.op != Op::load && n.op != Op::store) || n.type.rank != (two_d ? 2 : 1)) continue;
      if ((two_d ? fam.find(static_cast<int>(id)) : cls.find(static_cast<int>(id))) != root) continue;
      widest = std::max(widest, size_bytes(n.type.dtype));
    }
    // A 2-D family with no loads or stores of its own whose values a reshape reads or writes (tj::join's [N, 2]
    // before interleave's reshape to [2N]) is laid out as if it were loaded: its layout, flattened, is the 1-D side's,
    // and whole runs of the minor dim per thread become vector accesses there.
    if (two_d && widest == 0)
      for (std::size_t id = 0; id < N; ++id) {
        const Node& n = k.nodes[id];
        if (n.op != Op::reshape) continue;
        const int two = n.type.rank == 2 ? static_cast<int>(id) : n.args[0];
        if (k.nodes[static_cast<std::size_t>(two)].type.rank == 2 && fam.find(two) == root && !n.type.is_ptr)
          widest = std::max(widest, size_bytes(n.type.dtype));
      }
    return widest ? std::max(1, 16 / widest) : 1;
  };
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 2 || plan.in_smem[id]) continue;
    for (int j = 0; j < 3; ++j) {
      const int a = n.args[static_cast<std::size_t>(j)];
      if (a < 0 || rank(a) != 2) continue;
      if (n.op == Op::dot && j < 2) continue;  // operands live in their own (mma operand) layouts
      if (n.op == Op::trans) continue;         // a register transpose starts a family of the swapped extents
      if (n.op == Op::reshape) continue;       // so does a reshape (of its own extents)
      fam.unite(static_cast<int>(id), a);
    }
  }
  std::vector<std::array<int, kMaxRank>> extent(N, {1, 1});
  std::vector<int> has_dot(N, -1), fam_layout(N, -1);
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 2 || plan.in_smem[id]) continue;
    const int root = fam.find(static_cast<int>(id));
    auto& e = extent[static_cast<std::size_t>(root)];
    for (int d = 0; d < 2; ++d) {
      const int s = n.type.shape[static_cast<std::size_t>(d)];
      int& p = e[static_cast<std::size_t>(d)];
      if (s != 1 && p != 1 && s != p)
        throw Unsupported(fmt::format("node %{} has shape {} but the tiles it meets are [{},{}]: tiles of different extents "
                                      "cannot meet elementwise", id, to_string(n.type), e[0], e[1]));
      p = std::max(p, s);
    }
    if (n.op == Op::dot) has_dot[static_cast<std::size_t>(root)] = static_cast<int>(id);
  }
  // 2. A parent per family. A dot's accumulator family gets the mma.sync
  //    accumulator layout, over the warp split mma_warps picks. A family whose
  //    values leave it only as operand a (or only as operand b) of dots that
  //    want the same operand layout is *anchored*: it gets that operand layout
  //    itself, so its loads land in the fragment registers and the dot needs
  //    no conversion. Every other family is blocked (coalesced accesses).
  std::vector<std::array<int, 3>> dot_warps(N, {0, 0, 1});  // {wM, wN, copies} (mma_warps)
  // Families (roots) some of whose values are reduced along dim 1 (a row reduction: a softmax's max and sum).
  std::vector<char> row_reduce(N, 0);
  for (const Node& n : k.nodes)
    if (is_reduce(n.op) && n.axis == 1 && rank(n.args[0]) == 2 &&
        !plan.in_smem[static_cast<std::size_t>(n.args[0])])
      row_reduce[static_cast<std::size_t>(fam.find(n.args[0]))] = 1;
  auto row_reduced = [&](int root) { return row_reduce[static_cast<std::size_t>(root)] != 0; };
  std::vector<char> whole_rows(N, 0);  // families whose mma.sync dots split the warps along M only
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].op == Op::dot) {
      const auto e = extent[static_cast<std::size_t>(fam.find(static_cast<int>(id)))];
      const int kdim = k.nodes[static_cast<std::size_t>(k.nodes[id].args[0])].type.shape[1];
      const long smem = 2L * (static_cast<long>(e[0]) + e[1]) * kdim + 1024;
      const bool a_smem = plan.in_smem[static_cast<std::size_t>(k.nodes[id].args[0])];
      const bool b_smem = plan.in_smem[static_cast<std::size_t>(k.nodes[id].args[1])];
      const bool from_smem = a_smem && b_smem;
      const DType et = k.nodes[static_cast<std::size_t>(k.nodes[id].args[0])].type.dtype;
      // Register A, TMA block B: 16-bit types, A in the accumulator-shaped fragment layout (K a legal wgmma N).
      const bool rs = !a_smem && b_smem && (et == DType::f16 || et == DType::bf16) && kdim % 16 == 0 &&
                      layout::wgmma_legal_n(kdim) && layout::wgmma_padded_n(kdim) == kdim;
      // K per step: 64 elements staged from registers (16-bit); from TMA blocks whole 32-byte k steps
      // (one instruction each; blocks are held in 128-byte swizzled slabs).
      const bool k_ok = (from_smem ? kdim * size_bytes(et) % 32 == 0 : rs ? true : kdim % 64 == 0) &&
                        (et != DType::i8 || e[1] % 16 == 0 || e[1] == 8 || e[1] == 24);  // integer wgmma N
      const bool shape_ok = arch == "sm_90a" && e[0] == 16 * num_warps && e[0] % 64 == 0 && layout::wgmma_legal_n(e[1]) &&
                            layout::wgmma_padded_n(e[1]) == e[1] && k_ok;
      const bool staged_ok = (et == DType::f16 || et == DType::bf16) && smem <= 48 * 1024;  // register staging: 16-bit only
      // 64 rows and g > 1 warp groups (attention backward's dQ = dS·K with 8 warps): the groups split N instead of M,
      // each issuing m64n(N/g) on its own columns with the same A (FlashAttention-3's split of that product). B must
      // be a TMA block read in place (K-major: rows of N; MN-major: whole slabs of N per group), A a block or
      // registers (then copied to every group).
      const int groups = arch == "sm_90a" ? wgmma_groups_along_n(k, static_cast<int>(id), num_warps) : 1, ng = e[1] / groups;
      const bool wg_n = groups > 1 && b_smem && (rs || from_smem) && k_ok;
      if (mfma_arch(arch)) {
        const auto [r, w] = mfma_plan(e[0], e[1], kdim, mfma_k_width(et, arch), num_warps, static_cast<int>(id));
        plan.dot_mfma[id] = r;
        plan.dot_split[id] = w;
        dot_warps[id] = {w[0], w[1], num_warps / (w[0] * w[1])};
      } else if (shape_ok && (from_smem || rs || staged_ok)) {
        plan.dot_wgmma[id] = 1;
        plan.dot_rs[id] = rs ? 1 : 0;
        dot_warps[id] = {num_warps, 1, 1};
      } else if (wg_n) {
        plan.dot_wgmma[id] = 1;
        plan.dot_rs[id] = rs ? 1 : 0;
        plan.dot_split[id] = {4, groups};
        dot_warps[id] = {4, groups, 1};
        plan.diagnostics.push_back(fmt::format("dot %{}: [{},{}] x K={} with {} warp groups: each issues wgmma m64n{} on its own {} "
                                               "columns, A {}", id, e[0], e[1], kdim, groups, ng, ng,
                                               rs ? "in registers copied to every group" : "read in place by every group"));
      } else if (arch == "sm_90a" && !from_smem && !shape_ok) {
        check_mma_sync_k(et, kdim, static_cast<int>(id));
        dot_warps[id] = mma_warps(e[0], e[1], num_warps, static_cast<int>(id));
        // Name the rules this dot breaks, not all of them.
        std::string why;
        auto add = [&](const std::string& r) { why += (why.empty() ? "" : "; ") + r; };
        if (e[0] != 16 * num_warps) add(fmt::format("M = {} is not 16 x num_warps = {}", e[0], 16 * num_warps));
        if (e[0] % 64 != 0) add(fmt::format("M = {} is not a multiple of 64", e[0]));
        if (!layout::wgmma_legal_n(e[1]) || layout::wgmma_padded_n(e[1]) != e[1])
          add(fmt::format("N = {} is not a wgmma N (a multiple of 8 up to 256 with N/8 7-smooth)", e[1]));
        if (kdim % 64 != 0) add(fmt::format("K = {} is not a multiple of 64", kdim));
        if (et == DType::i8 && !(e[1] % 16 == 0 || e[1] == 8 || e[1] == 24)) add(fmt::format("i8 N = {} is not 8, 24 or a multiple of 16", e[1]));
        plan.diagnostics.push_back(fmt::format("dot %{}: [{},{}] x K={} with {} warps is not a wgmma shape ({}): lowered to mma.sync",
                                               id, e[0], e[1], kdim, num_warps, why));
      } else if ((from_smem || b_smem) && arch == "sm_90a") {
        throw Unsupported(fmt::format("dot %{}: its operands are TMA blocks in shared memory but [{},{}] x K={} with {} warps "
                                      "is not a wgmma shape", id, e[0], e[1], kdim, num_warps));
      } else {
        check_mma_sync_k(et, kdim, static_cast<int>(id));
        dot_warps[id] = mma_warps(e[0], e[1], num_warps, static_cast<int>(id));
        // B read in place from shared memory (a cp.async block), and rows reduced in the accumulator's family or in
        // operand a's (attention: the softmax of S = Q·Kᵀ, then P·V): every warp takes whole rows (FlashAttention-2's
        // split), so the row reductions stay inside a warp (shuffles, no shared-memory round trip and barriers)
        // and P's accumulator registers are already its A fragments. B costs no registers here (ldmatrix per k step).
        const int a = k.nodes[id].args[0];
        const bool rows = row_reduced(fam.find(static_cast<int>(id))) ||
                          (!plan.in_smem[static_cast<std::size_t>(a)] && rank(a) == 2 && row_reduced(fam.find(a)));
        if (whole_rows_ok && b_smem && rows && dot_warps[id][1] != 1 && e[0] % (16 * num_warps) == 0)
          whole_rows[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] = 1;
      }
    }
  // Every mma.sync dot of such a family takes the split: dots sharing an accumulator share its layout.
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].op == Op::dot && !plan.dot_wgmma[id] && !plan.dot_mfma[id] &&
        whole_rows[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] && dot_warps[id][1] != 1) {
      dot_warps[id] = {num_warps, 1, 1};
      plan.diagnostics.push_back(fmt::format("dot %{}: warps split [{}, 1] (whole rows per warp: rows of its accumulator or of its A are "
                                             "reduced, and B is read from shared memory)", id, num_warps));
    }
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].op == Op::dot && dot_warps[id][2] > 1) {
      const auto e = extent[static_cast<std::size_t>(fam.find(static_cast<int>(id)))];
      const int used = dot_warps[id][0] * dot_warps[id][1];
      plan.diagnostics.push_back(fmt::format("dot %{}: its [{},{}] result fills {} of {} warps with {} tiles: the other {} compute "
                                             "copies (a smaller num_warps wastes no threads)", id, e[0], e[1], used, num_warps,
                                             plan.dot_mfma[id] ? "MFMA" : "mma.sync", num_warps - used));
    }
  // One accumulator layout per family: dots that share an accumulator (a loop's wgmma, then one more product of
  // register operands too large to stage) must lower alike, or neither instruction finds its registers.
  {
    std::vector<int> first_wgmma(N, -1), first_other(N, -1);
    for (std::size_t id = 0; id < N; ++id) {
      if (k.nodes[id].op != Op::dot) continue;
      const auto root = static_cast<std::size_t>(fam.find(static_cast<int>(id)));
      int& slot = plan.dot_wgmma[id] ? first_wgmma[root] : first_other[root];
      if (slot < 0) slot = static_cast<int>(id);
      if (first_wgmma[root] >= 0 && first_other[root] >= 0) {
        const int w = first_wgmma[root], o = first_other[root];
        const auto& on = k.nodes[static_cast<std::size_t>(o)];
        throw Unsupported(fmt::format(
            "dot %{} and dot %{} share an accumulator, but dot %{} lowers to wgmma and dot %{} cannot ([{},{}] x K={} with "
            "operands in registers: staging them for wgmma needs {} bytes of shared memory, over 48 KiB; register A needs B "
            "as a TMA block): load dot %{}'s B operand (or both) through a descriptor, so wgmma reads it in place",
            w, o, w, o, on.type.shape[0], on.type.shape[1], k.nodes[static_cast<std::size_t>(on.args[0])].type.shape[1],
            2L * (on.type.shape[0] + on.type.shape[1]) * k.nodes[static_cast<std::size_t>(on.args[0])].type.shape[1] + 1024, o));
      }
    }
  }
  auto operand_layout_of = [&](int dot, int which) {
    const Node& n = k.nodes[static_cast<std::size_t>(dot)];
    const Type& ta = k.nodes[static_cast<std::size_t>(n.args[0])].type;
    const auto w = dot_warps[static_cast<std::size_t>(dot)];
    const int kw = layout::mma_sync_k_width(size_bytes(ta.dtype));  // elements per 32-bit register along K
    return with_warp_copies(which == 0 ? layout::mma_sync_operand_a({ta.shape[0], ta.shape[1]}, {w[0], w[1]}, kw)
                                       : layout::mma_sync_operand_b({ta.shape[1], n.type.shape[1]}, {w[0], w[1]}, kw),
                            w[2]);
  };
  auto operand_what = [&](int dot, int which) {
    const Node& n = k.nodes[static_cast<std::size_t>(dot)];
    const Type& ta = k.nodes[static_cast<std::size_t>(n.args[0])].type;
    const auto w = dot_warps[static_cast<std::size_t>(dot)];
    return which == 0 ? fmt::format("mma.sync operand A [{},{}] for warps [{},{}] (each A row block held by the {} warps of a warp row)",
                                    ta.shape[0], ta.shape[1], w[0], w[1], w[1])
                      : fmt::format("mma.sync operand B [{},{}] for warps [{},{}] (each B column block held by the {} warps of a warp column)",
                                    ta.shape[1], n.type.shape[1], w[0], w[1], w[0]);
  };
  // Where each family's values leave it: the dot operand slot they feed (anchor
  // candidates), or a use that rules anchoring out (a reduction, another slot).
  std::vector<int> anchor_dot(N, -1), anchor_which(N, -1), anchor_uses(N, 0);
  std::vector<char> anchorable(N, 1);
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    for (int j = 0; j < 3; ++j) {
      const int a = n.args[static_cast<std::size_t>(j)];
      if (a < 0 || rank(a) != 2 || plan.in_smem[static_cast<std::size_t>(a)]) continue;
      const auto root = static_cast<std::size_t>(fam.find(a));
      const bool operand = n.op == Op::dot && j < 2;
      if (!operand && n.type.rank == 2) continue;  // united with `a` in step 1: inside the family
      if (!operand || plan.dot_wgmma[id] || plan.dot_mfma[id]) {  // wgmma/MFMA stage operands from blocked (coalesced) loads
        anchorable[root] = 0;
        continue;
      }
      ++anchor_uses[root];
      if (anchor_dot[root] < 0) {
        anchor_dot[root] = static_cast<int>(id);
        anchor_which[root] = j;
      } else if (anchor_which[root] != j ||
                 !(operand_layout_of(anchor_dot[root], j) == operand_layout_of(static_cast<int>(id), j))) {
        anchorable[root] = 0;
      }
    }
  }
  // Contiguity-aware anchoring. The accesses a family's loads would make in a candidate parent, as codegen
  // vectorises them (vector_elements), under the specialisation launches usually get: every pointer 16-byte
  // aligned, every integer divisible by 16 (the plan does not depend on the specialisation).
  std::vector<AxisInfo> axes;
  auto ensure_axes = [&] {
    if (!axes.empty()) return;
    Specialization usual;
    usual.flags.assign(k.params.size(), Specialization::kDiv16);
    axes = analyze_axes(k, usual);
  };
  // Per node, the innermost loop_begin enclosing it (-1: none); a loop_begin's own entry is its enclosing loop.
  std::vector<int> loop_of(N, -1);
  {
    std::vector<int> open;
    for (std::size_t id = 0; id < N; ++id) {
      if (k.nodes[id].op == Op::loop_end && !open.empty()) open.pop_back();
      loop_of[id] = open.empty() ? -1 : open.back();
      if (k.nodes[id].op == Op::loop_begin) open.push_back(static_cast<int>(id));
    }
  }
  auto runs_with = [&](int dot, int node) {  // node is executed as often as dot: inside dot's innermost loop
    const int l = loop_of[static_cast<std::size_t>(dot)];
    if (l < 0) return true;
    for (int x = loop_of[static_cast<std::size_t>(node)]; x >= 0; x = loop_of[static_cast<std::size_t>(x)])
      if (x == l) return true;
    return false;
  };
  std::vector<std::vector<int>> mem_of(N);  // rank-2 loads and stores of each family, in program order
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if ((n.op == Op::load || n.op == Op::store) && n.type.rank == 2 && !plan.in_smem[id])
      mem_of[static_cast<std::size_t>(fam.find(static_cast<int>(id)))].push_back(static_cast<int>(id));
  }
  // Bytes per access of memory node `id` if its family's parent were `l` (the widest over the dims codegen vectorises).
  auto access_bytes = [&](int id, const layout::LinearLayout& l) {
    ensure_axes();
    const Node& n = k.nodes[static_cast<std::size_t>(id)];
    const Type& t = n.type;  // a store's type is its value's
    const auto& e = extent[static_cast<std::size_t>(fam.find(id))];
    TileLayout tl{0, {0, 1}, false};
    for (std::size_t d = 0; d < 2; ++d) tl.dim_of[d] = t.shape[d] == 1 && e[d] != 1 ? -1 : static_cast<int>(d);
    const Distributed dl = distributed_from(l, warp_size);
    const int mj = n.op == Op::store ? 2 : 1;
    const AxisInfo* mask = n.args[static_cast<std::size_t>(mj)] >= 0 ? &axes[static_cast<std::size_t>(n.args[static_cast<std::size_t>(mj)])] : nullptr;
    int v = 1;
    for (int d = vector_any_dim ? 0 : 1; d < 2; ++d)
      v = std::max(v, vector_elements(dl, tl, t, axes[static_cast<std::size_t>(n.args[0])], mask, d));
    return v * size_bytes(t.dtype);
  };
  // The dim a blocked parent should run its lanes along: dim 0 when every load and store of the family that is
  // contiguous at all is more contiguous along dim 0 than along dim 1 (Kᵀ read from a row-major K), else dim 1.
  auto family_minor = [&](std::size_t root) {
    ensure_axes();
    int votes = 0;
    for (int m : mem_of[root]) {
      const auto& c = axes[static_cast<std::size_t>(k.nodes[static_cast<std::size_t>(m)].args[0])].contiguity;
      if (c[0] <= 1 && c[1] <= 1) continue;
      if (c[0] <= c[1]) return 1;
      ++votes;
    }
    return votes > 0 ? 0 : 1;
  };
  // Why family `root`, an anchor candidate for `dot`, should rather be blocked (parent `blocked`) and converted:
  // one of its loads that runs as often as the dot moves fewer than 16 bytes per access in the operand layout
  // but 16 in the blocked one, and none moves fewer in the blocked one. "" = keep the anchor.
  auto coalesce_instead = [&](std::size_t root, int dot, const layout::LinearLayout& anchored, const layout::LinearLayout& blocked) {
    std::string why;
    for (int m : mem_of[root]) {
      if (k.nodes[static_cast<std::size_t>(m)].op != Op::load || !runs_with(dot, m)) continue;
      const int a = access_bytes(m, anchored), b = access_bytes(m, blocked);
      if (b < a) return std::string();
      if (why.empty() && a < 16 && b >= 16)
        why = fmt::format("its load %{} would move {} byte{} per access in the operand layout ({} in a blocked one)", m, a,
                          a == 1 ? "" : "s", b);
    }
    return why;
  };
  // The first register transpose of each family (its layout is derived from the transpose's operand).
  std::vector<int> trans_in(N, -1);
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].op == Op::trans && !plan.in_smem[id] && trans_in[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] < 0)
      trans_in[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] = static_cast<int>(id);
  // The first reshape of a 2-D tile into each family (its layout may be the operand's, regrouped).
  std::vector<int> reshape_in(N, -1);
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].op == Op::reshape && k.nodes[id].type.rank == 2 && rank(k.nodes[id].args[0]) == 2 &&
        reshape_in[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] < 0)
      reshape_in[static_cast<std::size_t>(fam.find(static_cast<int>(id)))] = static_cast<int>(id);
  // The tile layout of rank-2 node `x` in its family's parent (size-1 dims of a larger family broadcast).
  auto family_value = [&](int x) {
    const auto r = static_cast<std::size_t>(fam.find(x));
    TileLayout t{fam_layout[r], {0, 1}, false};
    for (int d = 0; d < 2; ++d)
      if (k.nodes[static_cast<std::size_t>(x)].type.shape[static_cast<std::size_t>(d)] == 1 && extent[r][static_cast<std::size_t>(d)] != 1)
        t.dim_of[static_cast<std::size_t>(d)] = -1;
    return t;
  };
  for (std::size_t id = 0; id < N; ++id) {
    if (k.nodes[id].type.rank != 2 || plan.in_smem[id]) continue;
    const auto root = static_cast<std::size_t>(fam.find(static_cast<int>(id)));
    if (fam_layout[root] >= 0) continue;
    const auto e = extent[root];
    const int tr = trans_in[root];
    if (const int rs = reshape_in[root]; rs >= 0 && tr < 0 && has_dot[root] < 0) {
      // A family holding a reshape of a 2-D tile (and no dot or transpose) takes the operand's layout with its
      // digits regrouped into the new shape when the digit order allows: every thread keeps its elements.
      const Node& r = k.nodes[static_cast<std::size_t>(rs)];
      const auto src_root = static_cast<std::size_t>(fam.find(r.args[0]));
      if (src_root != root && fam_layout[src_root] >= 0 && e[0] == r.type.shape[0] && e[1] == r.type.shape[1]) {
        const auto got = reshaped_layout(plan, family_value(r.args[0]), k.nodes[static_cast<std::size_t>(r.args[0])].type, r.type);
        if (got.ok()) {
          fam_layout[root] = add_layout(got.value(), fmt::format("L{} regrouped as [{},{}] (reshape %{})", fam_layout[src_root],
                                                                 r.type.shape[0], r.type.shape[1], rs));
          continue;
        }
        plan.diagnostics.push_back(fmt::format("reshape %{}: L{} cannot be regrouped as [{},{}] ({}); the result is laid out on "
                                               "its own", rs, fam_layout[src_root], r.type.shape[0], r.type.shape[1], got.reason()));
      }
    }
    const auto src_root = tr >= 0 ? static_cast<std::size_t>(fam.find(k.nodes[static_cast<std::size_t>(tr)].args[0])) : root;
    if (tr >= 0 && has_dot[root] < 0 && src_root != root && fam_layout[src_root] >= 0) {
      // A family holding a register transpose (and no dot) takes the transpose's operand's parent layout with
      // dim0 and dim1 swapped, so every thread keeps its elements in the same registers (no data moves).
      fam_layout[root] = add_layout(transposed(plan.linear[static_cast<std::size_t>(fam_layout[src_root])]),
                                    fmt::format("transpose of L{} (register trans %{})", fam_layout[src_root], tr));
    } else if (has_dot[root] >= 0 && plan.dot_mfma[static_cast<std::size_t>(has_dot[root])]) {
      const auto d = static_cast<std::size_t>(has_dot[root]);
      fam_layout[root] = add_layout(with_warp_copies(layout::mfma_accumulator({e[0], e[1]}, plan.dot_mfma[d],
                                                                              {plan.dot_split[d][0], plan.dot_split[d][1]}),
                                                     num_warps / (plan.dot_split[d][0] * plan.dot_split[d][1])),
                                    fmt::format("MFMA {0}x{0} accumulator [{1},{2}] over wavefronts [{3},{4}]", plan.dot_mfma[d], e[0],
                                                e[1], plan.dot_split[d][0], plan.dot_split[d][1]));
    } else if (has_dot[root] >= 0 && plan.dot_wgmma[static_cast<std::size_t>(has_dot[root])]) {
      const int wn = std::max(1, plan.dot_split[static_cast<std::size_t>(has_dot[root])][1]);  // warp groups along N
      fam_layout[root] = add_layout(layout::wgmma_accumulator({e[0], e[1]}, e[1] / wn, {num_warps / wn, wn}),
                                    wn > 1 ? fmt::format("wgmma m64n{}k16 accumulator [{},{}], {} warp groups side by side along N",
                                                         e[1] / wn, e[0], e[1], wn)
                                           : fmt::format("wgmma m64n{}k16 accumulator [{},{}] over {} warp groups", e[1], e[0], e[1],
                                                         num_warps / 4));
    } else if (has_dot[root] >= 0) {
      const auto w = dot_warps[static_cast<std::size_t>(has_dot[root])];
      fam_layout[root] = add_layout(with_warp_copies(layout::mma_sync_accumulator({e[0], e[1]}, {w[0], w[1]}), w[2]),
                                    fmt::format("mma.sync m16n8k16 accumulator [{},{}] warps [{},{}]{}", e[0], e[1], w[0], w[1],
                                                w[2] > 1 ? fmt::format(" x {} copies", w[2]) : ""));
    } else {
      std::string desc;
      const int minor = family_minor(root);
      if (minor == 0 && !vector_any_dim)
        plan.diagnostics.push_back(fmt::format("family of %{} [{},{}]: its loads and stores are contiguous along dim 0, which codegen "
                                               "does not vectorise (one element per access; assign_layouts' vector_any_dim)",
                                               id, e[0], e[1]));
      const auto l = blocked_parent(2, e, num_warps, warp_size, desc, access_vec(static_cast<int>(root), true),
                                    vector_any_dim ? minor : 1);
      std::string coalesced;  // why an anchor candidate is blocked instead ("" = anchor it)
      if (anchor_dot[root] >= 0 && anchorable[root]) {
        const int d = anchor_dot[root], j = anchor_which[root];
        const auto anchored = operand_layout_of(d, j);
        coalesced = coalesce_instead(root, d, anchored, l);
        if (coalesced.empty()) {
          fam_layout[root] = add_layout(anchored, operand_what(d, j));
          plan.diagnostics.push_back(fmt::format("family of %{} [{},{}] is used outside itself only as operand {} of dot{} %{}: "
                                                 "anchored to the mma.sync operand {} layout L{} (loaded straight into fragment "
                                                 "registers, no conversion)", id, e[0], e[1], j == 0 ? 'a' : 'b',
                                                 anchor_uses[root] > 1 ? "s like" : "", d, j == 0 ? 'A' : 'B', fam_layout[root]));
          continue;
        }
      }
      fam_layout[root] = add_layout(l, desc);
      if (!coalesced.empty())
        plan.diagnostics.push_back(fmt::format("family of %{} [{},{}] is used outside itself only as operand {} of dot %{}, but {}: "
                                               "blocked L{} instead (coalesced), converted to the operand layout at the dot", id,
                                               e[0], e[1], anchor_which[root] == 0 ? 'a' : 'b', anchor_dot[root], coalesced,
                                               fam_layout[root]));
    }
  }
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 2 || plan.in_smem[id]) continue;
    TileLayout& tl = plan.values[id];
    tl = family_value(static_cast<int>(id));
    if (n.op == Op::trans) {
      // The operand in the layout whose transpose is this value's: tile dim d of the operand is dim 1 - d of
      // the value, and parent dim q of the value's layout is parent dim 1 - q of the transposed one.
      TileLayout op;
      op.scalar = false;
      op.layout = add_layout(transposed(plan.linear[static_cast<std::size_t>(tl.layout)]),
                             fmt::format("transpose of L{} (operand of register trans %{})", tl.layout, id));
      for (int d = 0; d < 2; ++d) {
        const int q = tl.dim_of[static_cast<std::size_t>(1 - d)];
        op.dim_of[static_cast<std::size_t>(d)] = q < 0 ? -1 : 1 - q;
      }
      plan.dot_operands[id] = {op, op};
    } else if (n.op == Op::dot && plan.dot_rs[id]) {
      const Type& ta = k.nodes[static_cast<std::size_t>(n.args[0])].type;
      const int wn = std::max(1, plan.dot_split[id][1]);  // warp groups sharing the rows: each holds all of A
      const int la = add_layout(with_warp_copies(layout::wgmma_accumulator({ta.shape[0], ta.shape[1]}, ta.shape[1], {num_warps / wn, 1}), wn),
                                fmt::format("wgmma register operand A [{},{}] (the m64n{}k16 accumulator layout; per warp the "
                                            "m16n8k16 A fragment){}", ta.shape[0], ta.shape[1], ta.shape[1],
                                            wn > 1 ? fmt::format(", copied to {} warp groups", wn) : ""));
      plan.dot_operands[id] = {TileLayout{la, {0, 1}, false}, plan.values[static_cast<std::size_t>(n.args[1])]};
    } else if (n.op == Op::dot && (plan.dot_wgmma[id] || plan.dot_mfma[id])) {
      plan.dot_operands[id] = {plan.values[static_cast<std::size_t>(n.args[0])], plan.values[static_cast<std::size_t>(n.args[1])]};
    } else if (n.op == Op::dot) {
      const int la = add_layout(operand_layout_of(static_cast<int>(id), 0), operand_what(static_cast<int>(id), 0));
      const int lb = add_layout(operand_layout_of(static_cast<int>(id), 1), operand_what(static_cast<int>(id), 1));
      plan.dot_operands[id] = {TileLayout{la, {0, 1}, false}, TileLayout{lb, {0, 1}, false}};
    }
  }

  // 3. Rank-1 values: slices of a family's parent, found through expand_dims
  //    (consumer) and reductions (producer); values that meet elementwise share it.
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 1 || n.op == Op::expand_dims) continue;
    for (int a : n.args)
      if (a >= 0 && rank(a) == 1) cls.unite(static_cast<int>(id), a);
  }
  std::vector<TileLayout> tag(N);
  std::vector<int> tagged(N, 0);
  auto set_tag = [&](int node, TileLayout t, const char* why) {
    const auto root = static_cast<std::size_t>(cls.find(node));
    if (!tagged[root]) {
      tag[root] = t;
      tagged[root] = 1;
    } else if (!(tag[root] == t)) {
      plan.diagnostics.push_back(fmt::format("node %{} ({}): a 1-D tile also used along another layout; converted where "
                                             "the layouts meet", node, why));
    }
  };
  // Reductions first: their result can only be the slice of their source.
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (is_reduce(n.op) && n.type.rank == 1) {
      const TileLayout& src = plan.values[static_cast<std::size_t>(n.args[0])];
      set_tag(static_cast<int>(id), TileLayout{src.layout, {src.dim_of[static_cast<std::size_t>(1 - n.axis)], -1}, false}, "reduction");
    }
  }
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op == Op::expand_dims && n.type.rank == 2 && rank(n.args[0]) == 1) {
      const TileLayout& mine = plan.values[id];
      set_tag(n.args[0], TileLayout{mine.layout, {mine.dim_of[static_cast<std::size_t>(1 - n.axis)], -1}, false}, "expand_dims");
    }
  }
  // A class's extent: its largest value (a [1] value broadcast to [96] meets the [96] ones: a loop-carried [1]
  // total added to each block took the class's layout from its own size, and the [96] values then fit none).
  std::vector<int> class_extent(N, 1);
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].type.rank == 1) {
      int& e = class_extent[static_cast<std::size_t>(cls.find(static_cast<int>(id)))];
      e = std::max(e, k.nodes[id].type.shape[0]);
    }
  // Reshapes between a 1-D tile and a 2-D one: an untagged 1-D side takes the 2-D side's layout flattened (always a
  // layout: the digits concatenated), so every thread keeps its elements.
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.op != Op::reshape || (n.type.rank == 1) == (rank(n.args[0]) == 1)) continue;
    const int one = n.type.rank == 1 ? static_cast<int>(id) : n.args[0], two = n.type.rank == 1 ? n.args[0] : static_cast<int>(id);
    const auto root = static_cast<std::size_t>(cls.find(one));
    const Type& t1 = k.nodes[static_cast<std::size_t>(one)].type;
    if (tagged[root] || class_extent[root] != t1.shape[0]) continue;
    const auto got = reshaped_layout(plan, plan.values[static_cast<std::size_t>(two)], k.nodes[static_cast<std::size_t>(two)].type, t1);
    if (!got.ok()) continue;  // (a size-1 dim: the codegen's round trip through shared memory)
    set_tag(one, TileLayout{add_layout(got.value(), fmt::format("L{} flattened to [{}] (reshape %{})",
                                                                plan.values[static_cast<std::size_t>(two)].layout, t1.shape[0], id)),
                            {0, -1}, false},
            "reshape");
  }
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (n.type.rank != 1) continue;
    const auto root = static_cast<std::size_t>(cls.find(static_cast<int>(id)));
    if (!tagged[root]) {
      // Unclaimed: a 1-D blocked layout of the class's extent.
      std::string desc;
      auto l = blocked_parent(1, {class_extent[root], 1}, num_warps, warp_size, desc, access_vec(static_cast<int>(root), false));
      tag[root] = TileLayout{add_layout(l, desc), {0, -1}, false};
      tagged[root] = 1;
    }
    plan.values[id] = tag[root];
    if (n.type.shape[0] == 1) plan.values[id].dim_of = {-1, -1};
  }
  // A reduction whose class took another layout (a row sum added to a column sum of the transpose: two slices of
  // different parents meet) keeps its own slice, the only layout it can be computed in; its users read it converted
  // (operand_layout: theirs) through shared memory. Loop carries take their operand's layout unconverted, so a
  // reduction yielded into a loop keeps the class's (and codegen refuses it, naming the reduction).
  for (std::size_t id = 0; id < N; ++id) {
    const Node& n = k.nodes[id];
    if (!is_reduce(n.op) || n.type.rank != 1 || n.type.shape[0] == 1) continue;
    const TileLayout& src = plan.values[static_cast<std::size_t>(n.args[0])];
    const TileLayout own{src.layout, {src.dim_of[static_cast<std::size_t>(1 - n.axis)], -1}, false};
    if (plan.values[id].layout == own.layout) continue;
    bool carried = false;
    for (const Node& u : k.nodes)
      if (u.op == Op::loop_yield || u.op == Op::loop_result)
        for (int a : u.args) carried = carried || a == static_cast<int>(id);
    if (carried) continue;
    plan.values[id] = own;
    plan.diagnostics.push_back(fmt::format("reduction %{}: computed in its source's slice L{} and converted to the L{} slice its users "
                                           "share (they meet another family's values)", id, own.layout, tag[static_cast<std::size_t>(cls.find(static_cast<int>(id)))].layout));
  }
  for (std::size_t id = 0; id < N; ++id)
    if (k.nodes[id].type.rank == 1) {
      const TileLayout& t = plan.values[id];
      const int pd = t.dim_of[0];
      if (pd >= 0 && plan.layouts[static_cast<std::size_t>(t.layout)].shape[static_cast<std::size_t>(pd)] != k.nodes[id].type.shape[0])
        throw Unsupported(fmt::format("node %{} ({}) does not match the extent of the layout it is a slice of", id,
                                      to_string(k.nodes[id].type)));
    }
  if (plan.layouts.empty()) {  // a scalar-only kernel still needs lanes/warps
    std::string desc;
    add_layout(blocked_parent(1, {1, 1}, num_warps, warp_size, desc), desc);
  }
  // Codegen reduces within one parent layout: with the whole-rows split, a reduction whose result meets a family
  // of the other split cannot be lowered (assign_layouts then plans without the split).
  if (std::find(whole_rows.begin(), whole_rows.end(), 1) != whole_rows.end())
    for (std::size_t id = 0; id < N; ++id) {
      const Node& n = k.nodes[id];
      if (is_reduce(n.op) && n.type.rank > 0 &&
          plan.values[id].layout != plan.values[static_cast<std::size_t>(n.args[0])].layout)
        throw Unsupported(fmt::format("reduction %{} would meet values of a family with the other warp split", id));
    }
  return plan;
}
}  // namespace

LayoutPlan assign_layouts(const Kernel& k, int num_warps, int warp_size, const std::string& arch, bool vector_any_dim) {
  try {
    return assign(k, num_warps, warp_size, arch, vector_any_dim, true);
  } catch (const Unsupported& e) {
    // The whole-rows split can leave a reduction's result meeting a family of the other split (flash-decoding's
    // combine): the plan without it, and why.
    LayoutPlan plan = assign(k, num_warps, warp_size, arch, vector_any_dim, false);  // (throws again if that was not it)
    plan.diagnostics.push_back(fmt::format("whole-rows warp split not applied: {}", e.what()));
    return plan;
  }
}

}  // namespace tilejit::ir
