// tilejit/layout/conversion.hpp — planning a layout conversion from the algebra.
//
// The question
// ------------
// Two distributed layouts S (source) and D (destination) of the same tile,
// both maps (register, lane, warp) → (dim0, dim1, ...). Thread (lane l, warp
// w) must end up holding, in its register r, the element D(r, l, w). Where
// does it get it? Every answer is a *holder map* H: destination hardware
// coordinates → source hardware coordinates with S(H(y)) = D(y) for every y.
// The algebra computes H: it is invert_and_compose (Triton's
// dst.invertAndCompose(src)), a linear map solved per prime over F_p, with
// the lowest holder chosen where S broadcasts an element to several threads.
//
// What H looks like decides the cheapest data movement — the same ladder as
// Triton's minimalCvtLayout / cvtReordersRegisters / cvtNeedsWarpShuffle /
// cvtNeedsSharedMemory. (The warp-level system below is solved first: when
// it has no solution, neither has the register-level one.)
//
//   no_op                 S == D: every register already holds its element.
//   register_permutation  H keeps lane and warp: H(r,l,w) = (ρ(r,l,w), l, w).
//                         Solved as (D_r, D_l − S_l, D_w − S_w) = S_r ∘ ρ
//                         (D_x: the images of D's x digits). ρ depending on r
//                         only is a renaming of registers (0 instructions);
//                         ρ depending on l or w needs selects.
//   warp_shuffle          H keeps the warp: solved as (D_r, D_l, D_w − S_w) =
//                         S_{r,l} ∘ C. Each destination register r is one
//                         step: lane l reads (shfl.idx) from lane C_lane(r,l,w)
//                         the value that lane sends. The lane→lane part of C
//                         must be a permutation (each sender feeds one
//                         receiver per step); then the register a sender
//                         sends is a linear function T of its own lane
//                         (send = C_reg(r,0,w) − T(C_lane(r,0,w)) + T(lane)).
//   shared_memory         otherwise (an element crosses warps, or a step is
//                         not a permutation of lanes, or the digit systems
//                         differ): every source element is stored once, a
//                         barrier, every destination register loads.
//
// Triton walks the ladder by quotienting the slow dims (warp, then lane) off
// dst.invertAndCompose(src). Solving with the fast dims subtracted instead
// (D_l − S_l, D_w − S_w above) asks the same question and also sees holders
// that a broadcast makes non-unique: when S holds an element in several
// lanes, the one in the receiving lane is found even if it is not the lowest.
//
// The shared-memory layout and its swizzle
// ----------------------------------------
// The tile is stored through a bijective layout M: offset → tile. Offsets are
// written in binary digits first, then the tile's non-binary digits (so the
// bank of an address is a linear function of the binary digits whenever the
// tile has at least 128 bytes of them). M's binary offset digits are a basis
// of the tile's binary digit space, chosen in four runs:
//
//   [vec | sub-word | bank | row]
//
// * vec: register digits that are the lowest in both S and D with the same
//   image: contiguous in both, so one ld/st moves up to 16 bytes;
// * sub-word: offset bits below 4 bytes (16-bit and 8-bit elements);
// * bank: the offset bits of bytes 4..127, i.e. the 32 four-byte banks;
// * row: the rest (which 128-byte row).
//
// A warp's access in one phase (32 lanes for ≤ 4-byte accesses; 16 or 8 for
// 8- or 16-byte vectors) touches the tile vectors X = span(the phase's lane
// images, the vec digits). Two of them collide (same bank, different word)
// iff their difference lies in K = span(sub-word, row) but not in
// span(sub-word) — so a phase takes |X ∩ K| / |X ∩ sub-word| wavefronts. The
// row vectors are chosen greedily so that K meets neither the source's X nor
// the destination's: a unit vector (tile bit) when one avoids both X_src + K
// and X_dst + K — a plain, unswizzled layout when that is conflict-free —
// else a sum of two unit vectors. One exists while both are proper
// subspaces: take a unit u1 ∉ X_src + K and a unit u2 ∉ X_dst + K; if each
// lies in the other subspace, u1 ⊕ u2 lies in neither. That is the XOR
// swizzle, derived rather than taken from a table; for a transpose it pairs
// row bits with column bits. The bank run is then any complement (the
// source's lanes first).
//
// When the digit systems differ
// -----------------------------
// If a dim has digits [3,2,2,2,2,2] in S and [2,2,2,2,2,3] in D (fact 12 of
// the layout facts), no layout maps one onto the other digit by digit: the
// conversion is a permutation of elements, not a linear map
// (invert_and_compose fails with kDigitOrder). The plan is then a
// shared-memory round trip whose storage M is written in one side's digits,
// say the source's; the destination computes each load address from the
// integer element index (D gives integer coordinates; M⁻¹ decomposes them in
// the source's digits), at the cost of integer division/modulo — `reindex`. Storing in the
// destination's digits (the source re-indexing) is the mirror image; the
// planner builds both and keeps the one with fewer wavefronts (for fact 12,
// lanes-minor storage is conflict-free on both sides: 3 is odd). verify()
// simulates it element by element like every other plan.
//
// Costs (ConversionCost): per thread unless noted — shuffles, selects,
// shared stores/loads (vector instructions), barriers, index arithmetic, and
// their sum `instructions`; per warp, the shared-memory wavefronts of the
// stores and loads and what they would be without bank conflicts; and the
// shared memory in bytes (the whole tile: smem_bytes = elements · elem_bytes).
// The bank model: 32 banks of 4 bytes; an access of V bytes per lane is
// served in phases of 128 bytes (V ≤ 4: the whole warp, or 32 lanes of a
// wave64; V = 8: 16 lanes; V = 16: 8 lanes), each phase taking as many
// wavefronts as the most distinct words one bank must serve. The linear
// formula is used when bank bits are binary digits; otherwise (tiles with
// less than 128 bytes of binary digits, or a re-indexing side) the
// wavefronts of warp 0 are counted by brute force.
//
// Everything except verify() is constexpr and heap-free. verify() is the
// brute-force oracle: it simulates the plan on every element and allocates.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tilejit/layout/digits.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::layout {

/// The data movement a conversion needs, cheapest first.
enum class ConversionKind : std::uint8_t {
  no_op,                 ///< same layout: nothing moves
  register_permutation,  ///< within each thread (register renaming, maybe selects)
  warp_shuffle,          ///< within each warp: shfl.sync.idx steps
  shared_memory,         ///< through shared memory: store, barrier, load
};

[[nodiscard]] constexpr std::string_view to_string(ConversionKind k) {
  switch (k) {
    case ConversionKind::no_op: return "no_op";
    case ConversionKind::register_permutation: return "register_permutation";
    case ConversionKind::warp_shuffle: return "warp_shuffle";
    case ConversionKind::shared_memory: return "shared_memory";
  }
  return "?";
}

/// The cost estimate every plan carries. Counts are per thread unless they
/// say per warp; all are 0 for no_op.
struct ConversionCost {
  int smem_bytes = 0;              ///< shared memory used (the whole tile)
  int shuffles = 0;                ///< shfl.sync per thread
  int selects = 0;                 ///< register selects per thread
  int smem_stores = 0;             ///< st.shared per thread (vector instructions)
  int smem_loads = 0;              ///< ld.shared per thread (vector instructions)
  int barriers = 0;                ///< bar.sync
  int index_ops = 0;               ///< integer ops per thread to re-index digit systems
  int store_wavefronts = 0;        ///< per warp, all its stores
  int load_wavefronts = 0;         ///< per warp, all its loads
  int ideal_store_wavefronts = 0;  ///< the same without bank conflicts
  int ideal_load_wavefronts = 0;
  int instructions = 0;            ///< per thread: the sum of the per-thread counts

  [[nodiscard]] constexpr bool bank_conflict_free() const {
    return store_wavefronts == ideal_store_wavefronts && load_wavefronts == ideal_load_wavefronts;
  }
};

/// The shared-memory layout of a shared_memory plan.
struct SharedMemoryLayout {
  /// M: "offset" (element offset, binary digits first) → the tile's dims in
  /// the source's digit systems; a bijection.
  LinearLayout offset_to_tile;
  /// M⁻¹.
  LinearLayout tile_to_offset;
  int elem_bytes = 4;
  /// Elements per st/ld: the shared lowest register digits (1 = scalar).
  int vec = 1;
  /// True when some offset bit maps to a sum of tile bits (an XOR swizzle).
  bool swizzled = false;
};

/// A conversion plan. Hardware coordinates are Images in the order
/// (register, lane, warp).
struct ConversionPlan {
  ConversionKind kind = ConversionKind::no_op;
  /// The layouts as planned: inputs (register, lane, warp) in that order
  /// (missing ones added with size 1); dst's outputs in src's order.
  LinearLayout src;
  LinearLayout dst;
  /// dst hardware → src hardware: where each destination register takes its
  /// value from (no_op, register_permutation, warp_shuffle). S(H(y)) == D(y).
  LinearLayout holder;
  /// warp_shuffle: T, "lane" → "register": the sender's register as a
  /// function of its lane (see shuffle_send_register).
  LinearLayout send;
  /// shared_memory: the storage layout (and its swizzle).
  SharedMemoryLayout smem;
  /// shared_memory: src hardware → "offset", and dst hardware → "offset"
  /// (whichever is linear; see reindex).
  LinearLayout store;
  LinearLayout load;
  /// shared_memory: the digit systems differ, so the side whose digits are
  /// not the storage's addresses through the integer element index (its
  /// store or load is then not a linear layout, and left empty).
  bool reindex = false;
  /// shared_memory: the tile is stored in the destination's digit systems
  /// (else the source's). Only ever true when reindex.
  bool storage_in_dst_digits = false;
  /// src's free input digits: a source register whose free digits are not
  /// all 0 is a broadcast copy and does not store.
  DigitMasks src_free{};
  ConversionCost cost;
  /// How the kind was decided (which dims, which digits).
  Reason why;

  /// The source coordinates a destination register takes its value from.
  [[nodiscard]] constexpr Image holder_of(const Image& dst_hw) const {
    return holder.apply(dst_hw);
  }
  /// register_permutation with a static map: the source register of
  /// destination register r (same lane, same warp).
  [[nodiscard]] constexpr int register_source(int r) const {
    return holder.apply(Image{r, 0, 0, 0})[0];
  }
  /// warp_shuffle, step r (destination register r): the lane that lane l of
  /// warp w reads from.
  [[nodiscard]] constexpr int shuffle_src_lane(int r, int l, int w) const {
    return holder.apply(Image{r, l, w, 0})[1];
  }
  /// warp_shuffle, step r: the register that lane `sender` of warp w sends.
  [[nodiscard]] constexpr int shuffle_send_register(int r, int sender, int w) const {
    const Image h0 = holder.apply(Image{r, 0, w, 0});
    const DigitSystem& rs = src.in_digits(0);
    const int t0 = send.apply(Image{h0[1], 0, 0, 0})[0];
    const int ts = send.apply(Image{sender, 0, 0, 0})[0];
    return rs.add(rs.add(h0[0], rs.scale(t0, -1)), ts);
  }
  /// shared_memory: whether source register src_hw stores (it is the lowest
  /// holder of its element).
  [[nodiscard]] constexpr bool store_writes(const Image& src_hw) const {
    for (int i = 0; i < src.num_in_dims(); ++i) {
      const DigitSystem& ds = src.in_digits(i);
      const DigitSystem::Digits d = ds.decompose(src_hw[static_cast<std::size_t>(i)]);
      for (int k = 0; k < ds.num_digits(); ++k) {
        if (((src_free[static_cast<std::size_t>(i)] >> k) & 1u) != 0 &&
            d[static_cast<std::size_t>(k)] != 0) {
          return false;
        }
      }
    }
    return true;
  }
  /// shared_memory: the element offset source register src_hw stores to.
  [[nodiscard]] constexpr int store_offset(const Image& src_hw) const {
    if (reindex && storage_in_dst_digits) return smem.tile_to_offset.apply(src.apply(src_hw))[0];
    return store.apply(src_hw)[0];
  }
  /// shared_memory: the element offset destination register dst_hw loads.
  [[nodiscard]] constexpr int load_offset(const Image& dst_hw) const {
    if (reindex && !storage_in_dst_digits) return smem.tile_to_offset.apply(dst.apply(dst_hw))[0];
    return load.apply(dst_hw)[0];
  }
};

namespace detail::cvt {

/// A subspace of F_2^32 kept in echelon form by leading bit.
class Gf2Basis {
 public:
  /// v reduced by the basis: 0 iff v is in the span.
  [[nodiscard]] constexpr std::uint32_t reduce(std::uint32_t v) const {
    std::uint32_t kept = 0;  // leading bits with no basis row: they stay
    while (v != 0) {
      const int b = std::bit_width(v) - 1;
      const std::uint32_t row = rows_[static_cast<std::size_t>(b)];
      if (row != 0) {
        v ^= row;
      } else {
        kept |= std::uint32_t{1} << b;
        v ^= std::uint32_t{1} << b;
      }
    }
    return kept;
  }
  [[nodiscard]] constexpr bool contains(std::uint32_t v) const {
    while (v != 0) {
      const std::uint32_t row = rows_[static_cast<std::size_t>(std::bit_width(v) - 1)];
      if (row == 0) return false;
      v ^= row;
    }
    return true;
  }
  /// Adds v; false (and no change) if v is already in the span.
  constexpr bool insert(std::uint32_t v) {
    while (v != 0) {
      std::uint32_t& row = rows_[static_cast<std::size_t>(std::bit_width(v) - 1)];
      if (row == 0) {
        row = v;
        ++dim_;
        return true;
      }
      v ^= row;
    }
    return false;
  }
  [[nodiscard]] constexpr int dim() const { return dim_; }

 private:
  std::array<std::uint32_t, 32> rows_{};
  int dim_ = 0;
};

constexpr int log2_exact(int x) { return std::bit_width(static_cast<unsigned>(x)) - 1; }

/// The binary digits of a tile's output dims (the F_2 coordinates every
/// lane and vector image lives in), and its non-binary digits, both in
/// flattening order.
struct TileDigits {
  struct Ref {
    int dim = 0;
    int digit = 0;
    int stride = 1;  // of the digit in its dim
    int radix = 2;
    /// The digit's value in index v of its dim.
    [[nodiscard]] constexpr int of(int v) const { return (v / stride) % radix; }
  };
  std::array<Ref, 30> bin{};
  std::array<Ref, 30> other{};
  int n2 = 0;
  int n_other = 0;

  static constexpr TileDigits of(const LinearLayout& l) {
    TileDigits t;
    for (int j = 0; j < l.num_out_dims(); ++j) {
      const DigitSystem& ds = l.out_digits(j);
      for (int k = 0; k < ds.num_digits(); ++k) {
        const Ref r{j, k, ds.stride(k), ds.radix(k)};
        if (ds.radix(k) == 2) {
          t.bin[static_cast<std::size_t>(t.n2++)] = r;
        } else {
          t.other[static_cast<std::size_t>(t.n_other++)] = r;
        }
      }
    }
    return t;
  }
  /// The binary part of a tile index vector (in these digit systems) as a
  /// bit mask.
  constexpr std::uint32_t mask(const Image& img) const {
    std::uint32_t m = 0;
    for (int t = 0; t < n2; ++t) {
      const Ref r = bin[static_cast<std::size_t>(t)];
      if (r.of(img[static_cast<std::size_t>(r.dim)]) != 0) m |= std::uint32_t{1} << t;
    }
    return m;
  }
  /// The tile index vector of a bit mask.
  constexpr Image image(std::uint32_t m) const {
    Image img{};
    for (int t = 0; t < n2; ++t) {
      if (((m >> t) & 1u) == 0) continue;
      const Ref r = bin[static_cast<std::size_t>(t)];
      img[static_cast<std::size_t>(r.dim)] += r.stride;
    }
    return img;
  }
};

/// l with inputs exactly (register, lane, warp), in that order; missing ones
/// are added with size 1. Throws LayoutError for another input dim.
constexpr LinearLayout normalize(const LinearLayout& l, const char* role) {
  if (l.num_out_dims() == 0) {
    throw_layout_error(Reason("plan_conversion: the ") << role << " layout has no output dims");
  }
  for (int i = 0; i < l.num_in_dims(); ++i) {
    const Name n = l.in_name(i);
    if (!(n == Name("register") || n == Name("lane") || n == Name("warp"))) {
      throw_layout_error(Reason("plan_conversion: the ")
                         << role << " layout has input dim " << n
                         << "; a distributed layout has only register, lane and warp");
    }
  }
  LinearLayout r = l;
  for (const char* n : {"register", "lane", "warp"}) {
    if (r.in_dim_index(n) < 0) r = r * LinearLayout::zeros1D(1, n, r.out_name(0));
  }
  return r.transpose_ins({"register", "lane", "warp"});
}

constexpr NameList out_names(const LinearLayout& l) {
  NameList n;
  for (int j = 0; j < l.num_out_dims(); ++j) n.push_back(l.out_name(j));
  return n;
}

/// (D_r, D_l or D_l − S_l, D_w − S_w): the images D's digits must find in
/// S's remaining inputs when the subtracted inputs are kept fixed.
constexpr LinearLayout residual(const LinearLayout& s, const LinearLayout& d, bool subtract_lane) {
  LayoutBuilder b;
  for (int j = 0; j < d.num_out_dims(); ++j) b.add_out_dim(d.out_name(j), d.out_digits(j));
  for (int i = 0; i < 3; ++i) {
    b.add_in_dim(d.in_name(i), d.in_digits(i));
    const bool sub = i == 2 || (i == 1 && subtract_lane);
    for (int k = 0; k < d.in_digits(i).num_digits(); ++k) {
      Image img = d.image(i, k);
      if (sub) {
        const Image si = s.image(i, k);
        for (int j = 0; j < d.num_out_dims(); ++j) {
          const DigitSystem& os = d.out_digits(j);
          img[static_cast<std::size_t>(j)] = os.add(img[static_cast<std::size_t>(j)],
                                                    os.scale(si[static_cast<std::size_t>(j)], -1));
        }
      }
      b.set_image(i, k, img);
    }
  }
  return b.build();
}

/// The full holder map from c (outputs: src's register [and lane]): the
/// inputs that c does not produce are kept (identity).
constexpr LinearLayout extend_holder(const LinearLayout& c, const LinearLayout& s,
                                     const LinearLayout& d) {
  LayoutBuilder b;
  for (int i = 0; i < 3; ++i) b.add_out_dim(s.in_name(i), s.in_digits(i));
  for (int i = 0; i < 3; ++i) b.add_in_dim(d.in_name(i), d.in_digits(i));
  const int produced = c.num_out_dims();  // 1: register; 2: register, lane
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < d.in_digits(i).num_digits(); ++k) {
      Image img{};
      const Image ci = c.image(i, k);
      for (int o = 0; o < produced; ++o) img[static_cast<std::size_t>(o)] = ci[static_cast<std::size_t>(o)];
      if (i >= produced) img[static_cast<std::size_t>(i)] = d.in_digits(i).stride(k);
      b.set_image(i, k, img);
    }
  }
  return b.build();
}

/// (register, lane, warp) → the same: the holder map of no_op.
constexpr LinearLayout identity_holder(const LinearLayout& s) {
  LayoutBuilder b;
  for (int i = 0; i < 3; ++i) b.add_out_dim(s.in_name(i), s.in_digits(i));
  for (int i = 0; i < 3; ++i) {
    b.add_in_dim(s.in_name(i), s.in_digits(i));
    for (int k = 0; k < s.in_digits(i).num_digits(); ++k) {
      Image img{};
      img[static_cast<std::size_t>(i)] = s.in_digits(i).stride(k);
      b.set_image(i, k, img);
    }
  }
  return b.build();
}

/// Product of the radices of the digits of ds not set in free_mask: the
/// number of distinct (non-broadcast) values of the dim.
constexpr int non_free_size(const DigitSystem& ds, std::uint32_t free_mask) {
  int n = 1;
  for (int k = 0; k < ds.num_digits(); ++k) {
    if (((free_mask >> k) & 1u) == 0) n *= ds.radix(k);
  }
  return n;
}

/// The binary digits of a register index as a mask (bit k: digit k).
constexpr std::uint32_t register_mask(const DigitSystem& rs, int v) {
  std::uint32_t m = 0;
  for (int k = 0; k < rs.num_digits(); ++k) {
    if (rs.radix(k) == 2 && rs.digit(v, k) != 0) m |= std::uint32_t{1} << k;
  }
  return m;
}

/// l.free_variable_masks(), with a fast path over F_2 bit masks when every
/// input digit is binary and l's outputs are in tile's digit systems (a
/// digit is free iff its image is in the span of the images before it, in
/// flattening order — the algebra's definition).
constexpr DigitMasks free_masks(const LinearLayout& l, const TileDigits& tile, bool same_digits) {
  bool binary = same_digits;
  for (int i = 0; i < l.num_in_dims() && binary; ++i) binary = l.in_digits(i).count(2) == l.in_digits(i).num_digits();
  if (!binary) return l.free_variable_masks();
  DigitMasks m{};
  Gf2Basis seen;
  for (int i = 0; i < l.num_in_dims(); ++i) {
    for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
      if (!seen.insert(tile.mask(l.image(i, k)))) m[static_cast<std::size_t>(i)] |= std::uint32_t{1} << k;
    }
  }
  return m;
}

/// Wavefront counts of one side of a shared-memory round trip.
struct Wavefronts {
  int actual = 0;
  int ideal = 0;
};

/// Brute force over warp 0: for every instruction (register group with the
/// vec digits 0 and some lane accessing) and phase, the most distinct 4-byte words
/// any bank serves. offset(r, l) is the element offset of register r, lane l;
/// writes(r, l) says whether that lane accesses it.
template <class Offset, class Writes>
constexpr Wavefronts brute_force_wavefronts(int registers, int lanes, int vec, int elem_bytes,
                                            Offset&& offset, Writes&& writes) {
  const int vbytes = vec * elem_bytes;
  const int words_per_access = vbytes >= 4 ? vbytes / 4 : 1;
  const int lanes_per_phase = lanes < 32 / words_per_access ? lanes : 32 / words_per_access;
  Wavefronts w;
  for (int r = 0; r < registers; r += vec) {
    bool any = false;
    for (int l = 0; l < lanes; ++l) any = any || writes(r, l);
    if (!any) continue;
    for (int base = 0; base < lanes; base += lanes_per_phase) {
      std::array<std::array<int, 32>, 32> words{};  // per bank: distinct words seen
      std::array<int, 32> n{};
      int worst = 1;
      for (int l = base; l < base + lanes_per_phase; ++l) {
        if (!writes(r, l)) continue;
        const int byte = offset(r, l) * elem_bytes;
        for (int u = 0; u < words_per_access; ++u) {
          const int word = byte / 4 + u;
          const int bank = word % 32;
          bool seen = false;
          for (int q = 0; q < n[static_cast<std::size_t>(bank)]; ++q) {
            seen = seen || words[static_cast<std::size_t>(bank)][static_cast<std::size_t>(q)] == word;
          }
          if (!seen && n[static_cast<std::size_t>(bank)] < 32) {
            words[static_cast<std::size_t>(bank)][static_cast<std::size_t>(n[static_cast<std::size_t>(bank)]++)] = word;
          }
          if (n[static_cast<std::size_t>(bank)] > worst) worst = n[static_cast<std::size_t>(bank)];
        }
      }
      w.actual += worst;
      w.ideal += 1;
    }
  }
  return w;
}

/// Fills the shared-memory half of p (kind, smem, store, load, costs), the
/// tile stored in the digit systems of the destination when storage_dst,
/// else of the source. A side whose digits are not the storage's (only
/// when p.reindex) addresses through the integer element index.
constexpr void plan_shared(ConversionPlan& p, int elem_bytes, bool storage_dst) {
  const LinearLayout& s = p.src;
  const LinearLayout& d = p.dst;
  const LinearLayout& st = storage_dst ? d : s;
  p.storage_in_dst_digits = storage_dst;
  const bool lin_s = !p.reindex || !storage_dst;  // the source's stores are a layout
  const bool lin_d = !p.reindex || storage_dst;   // the destination's loads are a layout
  const TileDigits tile = TileDigits::of(st);
  const int n2 = tile.n2;
  const int lane_bits = s.in_digits(1).num_digits();
  const int lanes = s.in_size(1);

  // vec: the lowest register digits, binary, with equal images in both.
  std::array<std::uint32_t, 32> vecs{};
  int v = 0;
  Gf2Basis vb;
  if (!p.reindex) {
    const int max_v = log2_exact(16 / elem_bytes);
    const DigitSystem& sr = s.in_digits(0);
    const DigitSystem& dr = d.in_digits(0);
    while (v < max_v && v < sr.num_digits() && v < dr.num_digits() && sr.radix(v) == 2 &&
           dr.radix(v) == 2 && s.image(0, v) == d.image(0, v)) {
      const std::uint32_t m = tile.mask(s.image(0, v));
      if (!vb.insert(m)) break;
      vecs[static_cast<std::size_t>(v++)] = m;
    }
  }
  const int vec = 1 << v;
  const int vbytes = vec * elem_bytes;
  const int words_per_access = vbytes >= 4 ? vbytes / 4 : 1;
  const int lanes_per_phase = lanes < 32 / words_per_access ? lanes : 32 / words_per_access;
  const int phase_bits = log2_exact(lanes_per_phase);
  const int phases = lanes / lanes_per_phase;
  const int sw = elem_bytes >= 4 ? 0 : log2_exact(4 / elem_bytes);  // offset bits inside a word
  const int c = log2_exact(128 / elem_bytes);                        // offset bits inside 128 bytes

  // The lanes of one phase and the vector: X_src, X_dst (linear sides only).
  std::array<std::uint32_t, 8> src_lane{}, dst_lane{};
  for (int k = 0; k < lane_bits && k < 8; ++k) {
    if (lin_s) src_lane[static_cast<std::size_t>(k)] = tile.mask(s.image(1, k));
    if (lin_d) dst_lane[static_cast<std::size_t>(k)] = tile.mask(d.image(1, k));
  }
  Gf2Basis xs, xd;
  for (int k = 0; k < v; ++k) {
    xs.insert(vecs[static_cast<std::size_t>(k)]);
    xd.insert(vecs[static_cast<std::size_t>(k)]);
  }
  for (int k = 0; k < phase_bits; ++k) {
    xs.insert(src_lane[static_cast<std::size_t>(k)]);
    xd.insert(dst_lane[static_cast<std::size_t>(k)]);
  }

  // K = span(sub-word digits, row digits), built greedily; X + K for both.
  Gf2Basis full, kspan, swspan, xks = xs, xkd = xd;
  std::array<std::uint32_t, 32> order{};  // offset binary digit → tile mask
  int no = 0;
  for (int k = 0; k < v; ++k) {
    full.insert(vecs[static_cast<std::size_t>(k)]);
    order[static_cast<std::size_t>(no++)] = vecs[static_cast<std::size_t>(k)];
  }
  const int s_target = sw < n2 ? sw : n2;
  for (int k = 0; k < v && k < s_target; ++k) {
    kspan.insert(vecs[static_cast<std::size_t>(k)]);
    swspan.insert(vecs[static_cast<std::size_t>(k)]);
  }
  auto add_k = [&](std::uint32_t u, bool sub_word) {
    full.insert(u);
    kspan.insert(u);
    if (sub_word) swspan.insert(u);
    xks.insert(u);
    xkd.insert(u);
  };
  // Sub-word digits: prefer vectors the lanes contain (lanes that share a
  // word do not conflict).
  for (int k = v; k < s_target; ++k) {
    std::uint32_t best = 0;
    int best_score = -1;
    auto consider = [&](std::uint32_t u) {
      if (u == 0 || full.contains(u)) return;
      const int score = (lin_s && xs.contains(u) ? 1 : 0) + (lin_d && xd.contains(u) ? 1 : 0);
      if (score > best_score) {
        best_score = score;
        best = u;
      }
    };
    for (int q = 0; q < lane_bits && q < 8; ++q) {
      consider(src_lane[static_cast<std::size_t>(q)]);
      consider(dst_lane[static_cast<std::size_t>(q)]);
    }
    for (int t = 0; t < n2; ++t) consider(std::uint32_t{1} << t);
    add_k(best, true);
    order[static_cast<std::size_t>(no++)] = best;
  }
  const int s1 = v > s_target ? v : s_target;
  const int c_n = c < n2 ? c : n2;
  const int c1 = s1 > c_n ? s1 : c_n;
  // Row digits: avoid X_src + K and X_dst + K (see the file comment).
  std::array<std::uint32_t, 32> rows{};
  int nr = 0;
  for (int k = c1; k < n2; ++k) {
    auto penalty = [&](std::uint32_t u) {
      return (lin_s && xks.contains(u) ? 1 : 0) + (lin_d && xkd.contains(u) ? 1 : 0);
    };
    std::uint32_t best = 0;
    int best_pen = 3;
    for (int t = n2 - 1; t >= 0 && best_pen > 0; --t) {
      const std::uint32_t u = std::uint32_t{1} << t;
      if (full.contains(u)) continue;
      const int pen = penalty(u);
      if (pen < best_pen) {
        best_pen = pen;
        best = u;
      }
    }
    for (int t1 = n2 - 1; t1 >= 0 && best_pen > 0; --t1) {
      const std::uint32_t u1 = std::uint32_t{1} << t1;
      for (int t2 = t1 - 1; t2 >= 0 && best_pen > 0; --t2) {
        const std::uint32_t u = u1 ^ (std::uint32_t{1} << t2);
        if (full.contains(u)) continue;
        const int pen = penalty(u);
        if (pen < best_pen) {
          best_pen = pen;
          best = u;
        }
      }
    }
    add_k(best, false);
    rows[static_cast<std::size_t>(nr++)] = best;
  }
  // Bank digits: a complement, the source's lanes first.
  for (int q = 0; q < lane_bits && q < 8 && full.dim() < n2; ++q) {
    const std::uint32_t u = lin_s ? src_lane[static_cast<std::size_t>(q)] : dst_lane[static_cast<std::size_t>(q)];
    if (full.insert(u)) order[static_cast<std::size_t>(no++)] = u;
  }
  for (int t = 0; t < n2 && full.dim() < n2; ++t) {
    if (full.insert(std::uint32_t{1} << t)) order[static_cast<std::size_t>(no++)] = std::uint32_t{1} << t;
  }
  // Sub-word digits that are not vec digits sit between vec and bank digits;
  // they were appended in that order already. Row digits go on top.
  for (int k = nr - 1; k >= 0; --k) order[static_cast<std::size_t>(no++)] = rows[static_cast<std::size_t>(k)];

  // M: offset → tile, binary digits first, then the tile's other digits.
  LayoutBuilder mb;
  for (int j = 0; j < st.num_out_dims(); ++j) mb.add_out_dim(st.out_name(j), st.out_digits(j));
  DigitSystem off;
  for (int k = 0; k < n2; ++k) off.push_back(2);
  for (int u = 0; u < tile.n_other; ++u) {
    const TileDigits::Ref r = tile.other[static_cast<std::size_t>(u)];
    off.push_back(st.out_digits(r.dim).radix(r.digit));
  }
  const int oi = mb.add_in_dim("offset", off);
  bool swizzled = false;
  for (int k = 0; k < n2; ++k) {
    const std::uint32_t m = order[static_cast<std::size_t>(k)];
    swizzled = swizzled || std::popcount(m) > 1;
    mb.set_image(oi, k, tile.image(m));
  }
  for (int u = 0; u < tile.n_other; ++u) {
    const TileDigits::Ref r = tile.other[static_cast<std::size_t>(u)];
    Image img{};
    img[static_cast<std::size_t>(r.dim)] = st.out_digits(r.dim).stride(r.digit);
    mb.set_image(oi, n2 + u, img);
  }
  p.smem.offset_to_tile = mb.build();
  // M⁻¹ directly: the binary part is the inverse of the basis `order` over
  // F_2 (Gauss–Jordan on bit masks), the other digits map one to one.
  std::array<std::uint32_t, 32> inv{};  // tile bit t → offset bits
  {
    std::array<std::uint32_t, 32> row_v{}, row_c{};  // echelon rows by leading bit
    for (int k = 0; k < n2; ++k) {
      std::uint32_t vv = order[static_cast<std::size_t>(k)], cc = std::uint32_t{1} << k;
      for (int bit = 31; bit >= 0 && vv != 0; --bit) {
        if (((vv >> bit) & 1u) != 0 && row_v[static_cast<std::size_t>(bit)] != 0) {
          vv ^= row_v[static_cast<std::size_t>(bit)];
          cc ^= row_c[static_cast<std::size_t>(bit)];
        }
      }
      const auto lead = static_cast<std::size_t>(std::bit_width(vv) - 1);  // vv != 0: a basis
      row_v[lead] = vv;
      row_c[lead] = cc;
    }
    for (int t = 0; t < n2; ++t) {
      std::uint32_t vv = std::uint32_t{1} << t, cc = 0;
      for (int bit = 31; bit >= 0 && vv != 0; --bit) {
        if (((vv >> bit) & 1u) != 0) {
          vv ^= row_v[static_cast<std::size_t>(bit)];
          cc ^= row_c[static_cast<std::size_t>(bit)];
        }
      }
      inv[static_cast<std::size_t>(t)] = cc;
    }
  }
  // The offset of a tile index vector (valid images only: digit-wise).
  std::array<int, 30> other_stride{};  // offset stride of the tile's other digits
  for (int u = 0; u < tile.n_other; ++u) other_stride[static_cast<std::size_t>(u)] = off.stride(n2 + u);
  auto offset_of = [&](const Image& img) {
    int o = 0;
    for (int t = 0; t < n2; ++t) {
      const TileDigits::Ref r = tile.bin[static_cast<std::size_t>(t)];
      if (r.of(img[static_cast<std::size_t>(r.dim)]) != 0) o ^= static_cast<int>(inv[static_cast<std::size_t>(t)]);
    }
    for (int u = 0; u < tile.n_other; ++u) {
      const TileDigits::Ref r = tile.other[static_cast<std::size_t>(u)];
      o += r.of(img[static_cast<std::size_t>(r.dim)]) * other_stride[static_cast<std::size_t>(u)];
    }
    return o;
  };
  auto through_offsets = [&](const LinearLayout& l) {
    LayoutBuilder b;
    const int oo = b.add_out_dim("offset", off);
    for (int i = 0; i < l.num_in_dims(); ++i) {
      b.add_in_dim(l.in_name(i), l.in_digits(i));
      for (int k = 0; k < l.in_digits(i).num_digits(); ++k) {
        Image img{};
        img[static_cast<std::size_t>(oo)] = offset_of(l.image(i, k));
        b.set_image(i, k, img);
      }
    }
    return b.build();
  };
  {
    const LinearLayout id = [&] {
      LayoutBuilder b;
      for (int j = 0; j < st.num_out_dims(); ++j) b.add_out_dim(st.out_name(j), st.out_digits(j));
      for (int j = 0; j < st.num_out_dims(); ++j) {
        b.add_in_dim(st.out_name(j), st.out_digits(j));
        for (int k = 0; k < st.out_digits(j).num_digits(); ++k) {
          Image img{};
          img[static_cast<std::size_t>(j)] = st.out_digits(j).stride(k);
          b.set_image(j, k, img);
        }
      }
      return b.build();
    }();
    p.smem.tile_to_offset = through_offsets(id);
  }
  p.smem.elem_bytes = elem_bytes;
  p.smem.vec = vec;
  p.smem.swizzled = swizzled;
  if (lin_s) p.store = through_offsets(s);
  if (lin_d) p.load = through_offsets(d);
  p.src_free = free_masks(s, tile, lin_s);
  const DigitMasks dst_free = free_masks(d, tile, lin_d);

  // Costs.
  ConversionCost& cost = p.cost;
  cost.smem_bytes = s.total_out_size() * elem_bytes;
  cost.smem_stores = non_free_size(s.in_digits(0), p.src_free[0]) / vec;
  cost.smem_loads = non_free_size(d.in_digits(0), dst_free[0]) / vec;
  cost.barriers = 1;
  if (p.reindex) {
    int mismatched = 0;
    for (int j = 0; j < s.num_out_dims(); ++j) mismatched += s.out_digits(j) == d.out_digits(j) ? 0 : 1;
    cost.index_ops = 4 * mismatched * (storage_dst ? cost.smem_stores : cost.smem_loads);
  }
  // A phase takes |X ∩ K| / |X ∩ SW| wavefronts; dim(A ∩ B) = dim A + dim B − dim(A + B).
  auto per_phase = [&](const Gf2Basis& x, const Gf2Basis& xk) {
    Gf2Basis xsw = x;
    for (int k = 0; k < no; ++k) {
      if (swspan.contains(order[static_cast<std::size_t>(k)])) xsw.insert(order[static_cast<std::size_t>(k)]);
    }
    const int cap_k = x.dim() + kspan.dim() - xk.dim();
    const int cap_sw = x.dim() + swspan.dim() - xsw.dim();
    return 1 << (cap_k - cap_sw);
  };
  const bool banks_linear = n2 >= c;  // bank bits come from binary digits only
  if (banks_linear && lin_s) {
    cost.store_wavefronts = cost.smem_stores * phases * per_phase(xs, xks);
    cost.ideal_store_wavefronts = cost.smem_stores * phases;
  } else {
    const Wavefronts w = brute_force_wavefronts(
        s.in_size(0), lanes, vec, elem_bytes,
        [&](int r, int l) { return p.store_offset(Image{r, l, 0, 0}); },
        [&](int r, int l) { return p.store_writes(Image{r, l, 0, 0}); });
    cost.store_wavefronts = w.actual;
    cost.ideal_store_wavefronts = w.ideal;
  }
  if (banks_linear && lin_d) {
    cost.load_wavefronts = cost.smem_loads * phases * per_phase(xd, xkd);
    cost.ideal_load_wavefronts = cost.smem_loads * phases;
  } else {
    const std::uint32_t dreg_free = dst_free[0];
    const DigitSystem& drs = d.in_digits(0);
    const Wavefronts w = brute_force_wavefronts(
        d.in_size(0), lanes, vec, elem_bytes,
        [&](int r, int l) { return p.load_offset(Image{r, l, 0, 0}); },
        [&](int r, int) {
          for (int k = 0; k < drs.num_digits(); ++k) {
            if (((dreg_free >> k) & 1u) != 0 && drs.digit(r, k) != 0) return false;
          }
          return true;
        });
    cost.load_wavefronts = w.actual;
    cost.ideal_load_wavefronts = w.ideal;
  }
  cost.instructions = cost.smem_stores + cost.smem_loads + cost.barriers + cost.index_ops;
  p.kind = ConversionKind::shared_memory;
}

}  // namespace detail::cvt

/// Plans the conversion of a tile from layout src to layout dst.
///
/// Preconditions (else LayoutError): both are distributed layouts — input
/// dims among register, lane, warp (missing ones count as size 1) — of the
/// same tile: the same output dim names with the same sizes (order may
/// differ), the same number of lanes and of warps; elem_bytes ∈ {1,2,4,8}.
///
/// Postconditions: verify(plan, src, dst) holds — every destination register
/// receives the element dst says it holds; plan.kind is the first rung of
/// no_op < register_permutation < warp_shuffle < shared_memory that the
/// algebra proves sufficient (see the file comment); plan.cost is filled
/// (all 0 for no_op; smem_bytes = elements · elem_bytes for shared_memory).
/// When a dim's digit systems differ, kind is shared_memory with reindex
/// and plan.why names the dim and both digit systems.
[[nodiscard]] constexpr ConversionPlan plan_conversion(const LinearLayout& src,
                                                       const LinearLayout& dst,
                                                       int elem_bytes = 4) {
  using detail::throw_layout_error;
  namespace cvt = detail::cvt;
  if (elem_bytes != 1 && elem_bytes != 2 && elem_bytes != 4 && elem_bytes != 8) {
    throw_layout_error(Reason("plan_conversion: elem_bytes must be 1, 2, 4 or 8 (got ")
                       << elem_bytes << ")");
  }
  ConversionPlan p;
  p.src = cvt::normalize(src, "source");
  const LinearLayout d0 = cvt::normalize(dst, "destination");
  const LinearLayout& s = p.src;
  if (d0.num_out_dims() != s.num_out_dims()) {
    throw_layout_error(Reason("plan_conversion: the source has ")
                       << s.num_out_dims() << " output dims, the destination "
                       << d0.num_out_dims() << "; not the same tile");
  }
  for (int j = 0; j < s.num_out_dims(); ++j) {
    const int dj = d0.out_dim_index(s.out_name(j));
    if (dj < 0 || d0.out_size(dj) != s.out_size(j)) {
      Reason why("plan_conversion: output dim ");
      why << s.out_name(j) << " has size " << s.out_size(j) << " in the source but ";
      if (dj < 0) {
        why << "is missing in the destination";
      } else {
        why << "size " << d0.out_size(dj) << " in the destination";
      }
      throw_layout_error(why << "; not the same tile");
    }
  }
  p.dst = d0.transpose_outs(cvt::out_names(s));
  const LinearLayout& d = p.dst;
  for (int i = 1; i < 3; ++i) {
    if (s.in_size(i) != d.in_size(i)) {
      throw_layout_error(Reason("plan_conversion: ")
                         << s.in_name(i) << " has size " << s.in_size(i) << " in the source and "
                         << d.in_size(i) << " in the destination");
    }
  }

  // Different digit systems: a permutation of elements, not a linear map.
  for (int j = 0; j < s.num_out_dims(); ++j) {
    if (!(s.out_digits(j) == d.out_digits(j))) {
      p.reindex = true;
      // Store in whichever side's digits conflicts less; the other side
      // re-indexes through the integer element index.
      ConversionPlan q = p;
      cvt::plan_shared(p, elem_bytes, false);
      cvt::plan_shared(q, elem_bytes, true);
      const auto waves = [](const ConversionCost& c) { return c.store_wavefronts + c.load_wavefronts; };
      if (waves(q.cost) < waves(p.cost)) p = q;
      p.why << "dim " << s.out_name(j) << " has digits " << s.out_digits(j)
            << " in the source and " << d.out_digits(j)
            << " in the destination: a change of digit order, i.e. a permutation of elements "
               "that no digit-wise linear map expresses; planned as a shared-memory round trip "
               "stored in the "
            << (p.storage_in_dst_digits ? "destination's" : "source's")
            << " digits, the other side re-indexing through the integer element index";
      return p;
    }
  }

  const NameList outs = cvt::out_names(s);
  const int regs_d = d.in_size(0);
  if (s == d) {
    p.kind = ConversionKind::no_op;
    p.holder = cvt::identity_holder(s);
    p.why << "identical layouts";
    return p;
  }

  // Rung 2 (solved first: if a warp lacks an element, so does its thread):
  // every element a warp needs is in that warp.
  const Result<LinearLayout> c2 =
      cvt::residual(s, d, false).invert_and_compose(s.sublayout({"register", "lane"}, outs));
  if (c2.ok()) {
    // Rung 1: every element a thread needs is in its own registers.
    const Result<LinearLayout> c1 =
        cvt::residual(s, d, true).invert_and_compose(s.sublayout({"register"}, outs));
    if (c1.ok()) {
      p.kind = ConversionKind::register_permutation;
      p.holder = cvt::extend_holder(c1.value(), s, d);
      const LinearLayout dep = c1.value().sublayout({"lane", "warp"}, {"register"});
      const int choices = 1 << dep.rank(2);
      p.cost.selects = choices > 1 ? regs_d * (choices - 1) : 0;
      p.cost.instructions = p.cost.selects;
      p.why << "every thread holds the elements it needs; "
            << (choices > 1 ? "the source register depends on the lane or warp (selects)"
                            : "a static renaming of registers");
      return p;
    }
    const LinearLayout& c = c2.value();
    const LinearLayout lane_map = c.sublayout({"lane"}, {"lane"});
    if (lane_map.is_bijective()) {
      p.kind = ConversionKind::warp_shuffle;
      p.holder = cvt::extend_holder(c, s, d);
      p.send = lane_map.invert().value().compose(c.sublayout({"lane"}, {"register"})).value();
      // Shuffles: steps whose lane map is not the identity.
      const bool lanes_fixed = lane_map == LinearLayout::identity1D(s.in_digits(1), "lane", "lane") &&
                               c.sublayout_is_zero({"warp"}, {"lane"});
      const int moving = 1 << c.sublayout({"register"}, {"lane"}).rank(2);
      p.cost.shuffles = lanes_fixed ? regs_d - regs_d / moving : regs_d;
      // Selects: the sender's register varies over 2^rank values per step.
      const DigitSystem& rs = s.in_digits(0);
      cvt::Gf2Basis vary;
      for (int k = 0; k < s.in_digits(1).num_digits(); ++k) {
        vary.insert(cvt::register_mask(rs, p.send.image(0, k)[0]));
      }
      for (int k = 0; k < s.in_digits(2).num_digits(); ++k) {
        const Image h = p.holder.image(2, k);  // (reg, lane, warp) of warp digit k
        const int t = p.send.apply(Image{h[1], 0, 0, 0})[0];
        vary.insert(cvt::register_mask(rs, rs.add(h[0], rs.scale(t, -1))));
      }
      const int choices = 1 << vary.dim();
      p.cost.selects = choices > 1 ? regs_d * (choices - 1) : 0;
      p.cost.instructions = p.cost.shuffles + p.cost.selects;
      p.why << "every warp holds the elements it needs; " << p.cost.shuffles
            << " shuffle steps per thread, each a permutation of the lanes";
      return p;
    }
    p.why << "every warp holds the elements it needs, but one shuffle step would need several "
             "values from one lane (the lane map has rank "
          << lane_map.rank(2) << " < " << s.in_digits(1).num_digits()
          << "); shared-memory round trip";
  } else {
    p.why << "elements cross warps: solving for holders in the receiving warp fails ("
          << c2.reason() << "); shared-memory round trip";
  }
  cvt::plan_shared(p, elem_bytes, false);
  return p;
}

/// What verify() found.
struct VerifyResult {
  bool ok = false;
  /// Number of destination registers checked.
  long long checked = 0;
  /// The first mismatch, empty when ok.
  Reason why;
  explicit operator bool() const { return ok; }
};

/// The brute-force oracle: simulates plan on every element and checks that
/// every destination (register, lane, warp) receives the element dst says
/// it holds. Values are the elements' flat indices computed from src and
/// dst themselves (by dim name), not from the plan. Shared-memory plans
/// also check that no two stores to one offset disagree and that every load
/// reads a stored offset. Run time only; allocates the simulated memory.
inline VerifyResult verify(const ConversionPlan& plan, const LinearLayout& src,
                           const LinearLayout& dst) {
  namespace cvt = detail::cvt;
  VerifyResult res;
  const LinearLayout s = cvt::normalize(src, "source");
  const LinearLayout d = cvt::normalize(dst, "destination");
  // Element value: flat index in src's output order, by name.
  std::array<int, kMaxDims> d_of_s{};  // src out dim j → dst out dim
  for (int j = 0; j < s.num_out_dims(); ++j) d_of_s[static_cast<std::size_t>(j)] = d.out_dim_index(s.out_name(j));
  auto flat_s = [&](const Image& c) {
    long long v = 0;
    for (int j = s.num_out_dims() - 1; j >= 0; --j) v = v * s.out_size(j) + c[static_cast<std::size_t>(j)];
    return v;
  };
  auto flat_d = [&](const Image& c) {
    long long v = 0;
    for (int j = s.num_out_dims() - 1; j >= 0; --j) {
      v = v * s.out_size(j) + c[static_cast<std::size_t>(d_of_s[static_cast<std::size_t>(j)])];
    }
    return v;
  };
  const int rs = s.in_size(0), rd = d.in_size(0), lanes = d.in_size(1), warps = d.in_size(2);
  auto src_value = [&](int r, int l, int w) { return flat_s(s.apply(Image{r, l, w, 0})); };
  auto fail = [&](Reason why) {
    res.ok = false;
    res.why = why;
    return res;
  };
  auto in_range = [&](const Image& h) {
    return h[0] >= 0 && h[0] < rs && h[1] >= 0 && h[1] < s.in_size(1) && h[2] >= 0 &&
           h[2] < s.in_size(2);
  };
  switch (plan.kind) {
    case ConversionKind::no_op:
      if (rs != rd) return fail(Reason("no_op with ") << rs << " source and " << rd << " destination registers");
      [[fallthrough]];
    case ConversionKind::register_permutation:
      for (int w = 0; w < warps; ++w) {
        for (int l = 0; l < lanes; ++l) {
          for (int r = 0; r < rd; ++r) {
            const Image h = plan.kind == ConversionKind::no_op ? Image{r, l, w, 0}
                                                               : plan.holder_of(Image{r, l, w, 0});
            if (!in_range(h) || h[1] != l || h[2] != w) {
              return fail(Reason("register ") << r << " of lane " << l << " warp " << w
                                              << " would read another thread's register");
            }
            if (src_value(h[0], l, w) != flat_d(d.apply(Image{r, l, w, 0}))) {
              return fail(Reason("register ") << r << " of lane " << l << " warp " << w
                                              << " receives the wrong element");
            }
            ++res.checked;
          }
        }
      }
      break;
    case ConversionKind::warp_shuffle: {
      std::vector<long long> sent(static_cast<std::size_t>(lanes));
      for (int w = 0; w < warps; ++w) {
        for (int r = 0; r < rd; ++r) {
          for (int l = 0; l < lanes; ++l) {
            const int reg = plan.shuffle_send_register(r, l, w);
            if (reg < 0 || reg >= rs) return fail(Reason("step ") << r << ": lane " << l << " sends register " << reg);
            sent[static_cast<std::size_t>(l)] = src_value(reg, l, w);
          }
          for (int l = 0; l < lanes; ++l) {
            const int from = plan.shuffle_src_lane(r, l, w);
            if (from < 0 || from >= lanes) return fail(Reason("step ") << r << ": lane " << l << " reads lane " << from);
            if (sent[static_cast<std::size_t>(from)] != flat_d(d.apply(Image{r, l, w, 0}))) {
              return fail(Reason("step ") << r << ": lane " << l << " of warp " << w
                                          << " receives the wrong element from lane " << from);
            }
            ++res.checked;
          }
        }
      }
      break;
    }
    case ConversionKind::shared_memory: {
      const int elems = plan.smem.offset_to_tile.in_size(0);
      std::vector<long long> mem(static_cast<std::size_t>(elems), -1);
      for (int w = 0; w < warps; ++w) {
        for (int l = 0; l < s.in_size(1); ++l) {
          for (int r = 0; r < rs; ++r) {
            const Image x{r, l, w, 0};
            if (!plan.store_writes(x)) continue;
            const int o = plan.store_offset(x);
            if (o < 0 || o >= elems) return fail(Reason("store to offset ") << o << " outside [0, " << elems << ")");
            const long long v = src_value(r, l, w);
            long long& cell = mem[static_cast<std::size_t>(o)];
            if (cell != -1 && cell != v) return fail(Reason("two stores to offset ") << o << " disagree");
            cell = v;
          }
        }
      }
      for (int w = 0; w < warps; ++w) {
        for (int l = 0; l < lanes; ++l) {
          for (int r = 0; r < rd; ++r) {
            const Image y{r, l, w, 0};
            const int o = plan.load_offset(y);
            if (o < 0 || o >= elems) return fail(Reason("load from offset ") << o << " outside [0, " << elems << ")");
            const long long v = mem[static_cast<std::size_t>(o)];
            if (v == -1) return fail(Reason("load from offset ") << o << ", which no store wrote");
            if (v != flat_d(d.apply(y))) {
              return fail(Reason("register ") << r << " of lane " << l << " warp " << w
                                              << " loads the wrong element from offset " << o);
            }
            ++res.checked;
          }
        }
      }
      break;
    }
  }
  res.ok = true;
  return res;
}

}  // namespace tilejit::layout
