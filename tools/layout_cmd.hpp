// tools/layout_cmd.hpp — `tilejit layout show <spec>`: parse an encoding spec,
// print the layout's algebraic form and an ownership grid, draw an SVG.
//
// Everything the subcommand does is a function here, so the tests call the
// same code the tool runs (test/tools/test_layout_cmd.cpp).
//
// Spec grammar (one line; tokens separated by blanks; docs/layouts.md)
// --------------------------------------------------------------------
//   spec   ::= kind param*  |  "slice" "dim=" INT ["regs=" ("keep"|"drop")] spec
//   param  ::= key "=" value                (no blanks around '=')
//   value  ::= INT ( ("x" | ",") INT )*     one entry per dim, dim0 first: 16x96, 1,0
//   INT    ::= decimal digits, 0 .. 1048576
//
//   kind     required keys        optional keys (default)
//   blocked  shape tpw            spt (1 per dim) wpc (1 per dim) order (r-1,...,0)
//   mma      shape                warps (1x1)           mma.sync m16n8k16 accumulator
//   mma-a    shape                warps (1x1)           operand A (M x K)
//   mma-b    shape                warps (1x1)           operand B (K x N)
//   wgmma    n                    warps (4 = 4x1) shape (16*wM x n*wN)
//   mfma     m shape              warps (1x1)           wave64, m = 16 or 32
//   shared   shape elem           swizzle (0) contig (1)
//   slice    dim + inner spec     regs (keep)
//
// blocked: shape has 1 or 2 entries and spt/tpw/wpc/order as many. A bad
// spec throws SpecError naming the token and the rule it broke (the tool
// exits with code 2).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tilejit/core/error.hpp"
#include "tilejit/layout/linear_layout.hpp"

namespace tilejit::tools {

/// A spec string that does not follow the grammar above, or that names a
/// layout the factories reject. token() is the offending token (or the kind
/// word when no single token is to blame), rule() the rule it broke.
class SpecError : public InvalidArgument {
 public:
  SpecError(std::string token, std::string rule);
  [[nodiscard]] const std::string& token() const noexcept { return token_; }
  [[nodiscard]] const std::string& rule() const noexcept { return rule_; }

 private:
  std::string token_, rule_;
};

enum class LayoutKind { blocked, mma, mma_a, mma_b, wgmma, mfma, shared, slice };

/// A parsed spec: the layout and what is needed to draw it.
struct ParsedLayout {
  LayoutKind kind = LayoutKind::blocked;
  std::string spec;             ///< the tokens, joined by single blanks
  layout::LinearLayout layout;  ///< outputs dim0 (and dim1)
  bool memory = false;          ///< input is "offset" (a shared-memory layout)
  int elem_bytes = 0;           ///< element size, shared layouts only
};

/// Parses a spec (grammar in the file comment). Throws SpecError.
/// Postcondition: the layout has 1 or 2 output dims.
[[nodiscard]] ParsedLayout parse_layout_spec(std::string_view spec);

/// Who holds each element: for element (row, col) every input (one index per
/// input dim) that maps to it, in flattening order (first input dim minor),
/// so the first owner is the minimum holder in the algebra's sense. A 1-D
/// layout has rows = 1 and cols = its size.
struct OwnerTable {
  int rows = 1;
  int cols = 1;
  std::vector<std::vector<layout::Image>> owners;  ///< index row * cols + col

  [[nodiscard]] const std::vector<layout::Image>& at(int row, int col) const;
  [[nodiscard]] int min_owners() const;
  [[nodiscard]] int max_owners() const;
};
[[nodiscard]] OwnerTable compute_owners(const layout::LinearLayout& l);

/// One owner as text: "w0:t5:r2" (warp, lane = t, register; b for block,
/// other input dims by name) or, for a shared-memory layout, the offset.
[[nodiscard]] std::string owner_label(const ParsedLayout& p, const layout::Image& in);
/// One grid cell: the first owner, then "+k" for k further copies, or with
/// all_owners every owner joined by '|'; "-" for an element nobody holds.
[[nodiscard]] std::string cell_text(const ParsedLayout& p, const OwnerTable& t, int row, int col,
                                    bool all_owners = false);

struct ShowOptions {
  int max_cells = 512;      ///< text grid: at most this many cells (top-left block)
  int wrap = 32;            ///< 1-D layouts: elements per grid row (text and SVG)
  bool all_owners = false;  ///< list every owner instead of "+k"
};

/// The algebraic form: digit systems of every dim, the image of every input
/// digit (with the output digits it hits and their radices), injectivity.
[[nodiscard]] std::string describe_layout(const ParsedLayout& p);
/// The ownership grid (dim0 rows x dim1 columns; 1-D wrapped every
/// o.wrap elements), truncated to o.max_cells with a note; then a line on
/// replication.
[[nodiscard]] std::string render_grid(const ParsedLayout& p, const OwnerTable& t,
                                      const ShowOptions& o);
/// The picture: an SVG document with one <rect class="w<warp>"> per element
/// (at most kSvgMaxCells), coloured by warp, a lighter shade per group of 8
/// lanes, labelled t<lane> / r<register>; axis labels and a legend. Shared
/// layouts are labelled by offset and coloured by 16-byte chunk (bank group).
[[nodiscard]] std::string render_svg(const ParsedLayout& p, const OwnerTable& t,
                                     const ShowOptions& o);
inline constexpr int kSvgMaxCells = 65536;

/// Everything `tilejit layout show` prints for spec; the SVG text goes to
/// *svg when svg is not null. Throws SpecError.
[[nodiscard]] std::string layout_show(std::string_view spec, const ShowOptions& o,
                                      std::string* svg = nullptr);

namespace detail {
/// How a table is laid out on screen or on the picture: a 2-D layout as is,
/// a 1-D layout wrapped every `wrap` elements; truncated to the top-left
/// block of at most max_cells cells.
struct GridView {
  bool one_d = false;
  int rows = 1, cols = 1;              ///< the whole (wrapped) grid
  int shown_rows = 1, shown_cols = 1;  ///< the part drawn
  [[nodiscard]] bool truncated() const { return shown_rows < rows || shown_cols < cols; }
};
[[nodiscard]] GridView grid_view(const OwnerTable& t, int wrap, int max_cells);
/// The element (row, col) of the view stands for, as (table row, table col);
/// {-1, -1} past the end of a wrapped 1-D layout.
[[nodiscard]] std::pair<int, int> view_element(const OwnerTable& t, const GridView& v, int row,
                                               int col);
/// Index of the input dim called name, or -1.
[[nodiscard]] int in_dim(const layout::LinearLayout& l, std::string_view name);
}  // namespace detail

struct LayoutShowArgs {
  std::vector<std::string> spec;  ///< spec tokens (joined by blanks)
  std::string svg_path;           ///< empty: no SVG
  ShowOptions options;
};
/// The subcommand: prints to stdout, errors to stderr. Returns the exit
/// code: 0, 2 for a bad spec, 1 when the SVG cannot be written.
int run_layout_show(const LayoutShowArgs& args);

}  // namespace tilejit::tools
