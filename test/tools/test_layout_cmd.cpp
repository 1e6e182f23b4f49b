// `tilejit layout show` (tools/layout_cmd.hpp): spec parsing, the text grid,
// the SVG picture, and docs/layouts.md kept honest — every command in the
// doc is rerun here and its printed output and committed SVG compared, and
// every C++ line in the doc appears in this file.
#include <doctest/doctest.h>
#include <cstdio>
#include <unistd.h>
#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/encodings/encodings.hpp"
#include "tools/layout_cmd.hpp"

namespace {

using namespace tilejit::tools;
using tilejit::layout::DigitSystem;
using LL = tilejit::layout::LinearLayout;
namespace lay = tilejit::layout;

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

/// The grid part of layout_show's text: row label -> cells.
std::vector<std::pair<std::string, std::vector<std::string>>> grid_rows(const std::string& text) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  const std::vector<std::string> ls = lines_of(text);
  auto it = std::find_if(ls.begin(), ls.end(),
                         [](const std::string& l) { return l.rfind("grid:", 0) == 0; });
  REQUIRE(it != ls.end());
  it += 2;  // skip the column header
  for (; it != ls.end(); ++it) {
    std::vector<std::string> w = words(*it);
    if (w.empty() || w[0].find_first_not_of("0123456789") != std::string::npos) break;
    rows.emplace_back(w[0], std::vector<std::string>(w.begin() + 1, w.end()));
  }
  return rows;
}

std::string owners_at(const std::string& spec, int row, int col, bool all = false) {
  const ParsedLayout p = parse_layout_spec(spec);
  return cell_text(p, compute_owners(p.layout), row, col, all);
}

// ---- a small XML well-formedness check --------------------------------------

/// Empty when svg is well formed (balanced tags, quoted attributes, escaped
/// text), else what is wrong.
std::string xml_problem(const std::string& svg) {
  std::vector<std::string> stack;
  std::size_t i = 0;
  if (svg.rfind("<?xml", 0) != 0) return "no XML declaration";
  while (i < svg.size()) {
    if (svg[i] == '&') {
      static const char* ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
      bool ok = false;
      for (const char* e : ents) ok = ok || svg.compare(i, std::strlen(e), e) == 0;
      if (!ok) return "bare & at " + std::to_string(i);
      ++i;
      continue;
    }
    if (svg[i] == '>') return "stray > at " + std::to_string(i);
    if (svg[i] != '<') {
      ++i;
      continue;
    }
    const std::size_t end = svg.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    const std::string tag = svg.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) return "unbalanced quotes in <" + tag;
    if (tag.find('<') != std::string::npos) return "< inside a tag";
    if (tag[0] == '?') {
      if (tag.back() != '?') return "bad processing instruction";
      continue;
    }
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1);
      stack.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    if (tag.back() != '/') stack.push_back(name);
    if (stack.empty() && name != "svg" && tag.back() != '/') return "element outside <svg>";
  }
  if (!stack.empty()) return "unclosed <" + stack.back();
  return "";
}

int count(const std::string& s, std::string_view needle) {
  int n = 0;
  for (std::size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

/// The distinct values of attribute class="<prefix>..." on rects.
std::set<std::string> rect_classes(const std::string& svg, std::string_view prefix) {
  std::set<std::string> out;
  const std::string key = "<rect class=\"" + std::string(prefix);
  for (std::size_t p = svg.find(key); p != std::string::npos; p = svg.find(key, p + 1)) {
    const std::size_t b = p + std::string("<rect class=\"").size();
    out.insert(svg.substr(b, svg.find('"', b) - b));
  }
  return out;
}

// ---- parsing -------------------------------------------------------------------------

TEST_CASE("layout_cmd: every kind parses to its factory's layout") {
  using lay::DimValues;
  CHECK(parse_layout_spec("blocked shape=96 spt=3 tpw=32 wpc=1").layout ==
        lay::blocked({96}, {3}, {32}, {1}, {0}));
  CHECK(parse_layout_spec("blocked shape=96 tpw=32 wpc=1").layout ==
        lay::blocked({96}, {1}, {32}, {1}, {0}));
  const ParsedLayout b2 = parse_layout_spec("blocked shape=16x96 spt=1x4 tpw=4x8 wpc=4x1 order=1,0");
  CHECK(b2.kind == LayoutKind::blocked);
  CHECK(b2.layout == lay::blocked({16, 96}, {1, 4}, {4, 8}, {4, 1}, {1, 0}));
  CHECK(b2.layout.out_digits(1) == DigitSystem{2, 2, 2, 2, 2, 3});
  // order defaults to rank-1, ..., 0 (dim1 contiguous), spt and wpc to 1
  CHECK(parse_layout_spec("blocked shape=16x96 spt=1x4 tpw=4x8 wpc=4x1").layout == b2.layout);
  CHECK(parse_layout_spec("blocked shape=32x32 tpw=4x8").layout ==
        lay::blocked({32, 32}, {1, 1}, {4, 8}, {1, 1}, {1, 0}));

  CHECK(parse_layout_spec("mma shape=32x32 warps=2x2").layout ==
        lay::mma_sync_accumulator({32, 32}, {2, 2}));
  CHECK(parse_layout_spec("mma shape=16x8").layout == lay::mma_sync_accumulator({16, 8}, {1, 1}));
  CHECK(parse_layout_spec("mma-a shape=32x16 warps=2x2").layout ==
        lay::mma_sync_operand_a({32, 16}, {2, 2}));
  CHECK(parse_layout_spec("mma-b shape=16x32 warps=2x2").layout ==
        lay::mma_sync_operand_b({16, 32}, {2, 2}));
  CHECK(parse_layout_spec("wgmma n=96 warps=4").layout == lay::wgmma_accumulator(96, 4));
  CHECK(parse_layout_spec("wgmma n=96").layout == lay::wgmma_accumulator(96, 4));
  CHECK(parse_layout_spec("wgmma n=192 warps=8").layout == lay::wgmma_accumulator(192, 8));
  CHECK(parse_layout_spec("wgmma n=96 warps=4x2 shape=64x384").layout ==
        lay::wgmma_accumulator({64, 384}, 96, {4, 2}));
  CHECK(parse_layout_spec("mfma m=32 shape=64x64 warps=2x2").layout ==
        lay::mfma_accumulator({64, 64}, 32, {2, 2}));
  CHECK(parse_layout_spec("mfma m=16 shape=16x16").layout ==
        lay::mfma_accumulator({16, 16}, 16, {1, 1}));

  const ParsedLayout sh = parse_layout_spec("shared shape=96x64 elem=2 swizzle=128");
  CHECK(sh.memory);
  CHECK(sh.elem_bytes == 2);
  CHECK(sh.layout == lay::nvmma_shared({96, 64}, 2, 128));
  CHECK(parse_layout_spec("shared shape=64x8 elem=4 swizzle=32 contig=0").layout ==
        lay::nvmma_shared({64, 8}, 4, 32, 0));
  CHECK(parse_layout_spec("shared shape=8x64 elem=2").layout == lay::nvmma_shared({8, 64}, 2, 0));

  const ParsedLayout sl = parse_layout_spec("slice dim=1 mma shape=16x8");
  CHECK(sl.kind == LayoutKind::slice);
  CHECK(sl.layout == lay::slice(lay::mma_sync_accumulator({16, 8}, {1, 1}), 1));
  CHECK(parse_layout_spec("slice dim=1 regs=drop mma shape=16x8").layout ==
        lay::slice(lay::mma_sync_accumulator({16, 8}, {1, 1}), 1, lay::SliceRegisters::drop_copies));

  // Blanks are free; the spec is kept normalised.
  CHECK(parse_layout_spec("  blocked\tshape=96   tpw=32 ").spec == "blocked shape=96 tpw=32");
}

struct Bad {
  const char* spec;
  const char* token;
  const char* rule;  // a part of the rule
};

TEST_CASE("layout_cmd: bad specs name the token and the rule") {
  const Bad cases[] = {
      {"", "", "the spec is empty"},
      {"   ", "", "kind is one of blocked, mma"},
      {"blocky shape=4", "blocky", "kind is one of blocked, mma, mma-a, mma-b, wgmma, mfma, shared, slice"},
      {"blocked shape=96 tpw 32", "tpw", "param ::= key=value"},
      {"blocked shape=96 tpw=32 foo=1", "foo=1", "unknown key 'foo'; keys of blocked: shape, tpw"},
      {"blocked shape=96 tpw=32 tpw=32", "tpw=32", "each key at most once"},
      {"blocked tpw=32", "blocked", "blocked needs shape="},
      {"mfma shape=64x64", "mfma", "mfma needs m="},
      {"blocked shape=9x6x tpw=32", "shape=9x6x", "value ::= INT"},
      {"blocked shape=abc tpw=32", "shape=abc", "value ::= INT"},
      {"blocked shape= tpw=32", "shape=", "value ::= INT"},
      {"blocked shape=-4 tpw=32", "shape=-4", "value ::= INT"},
      {"blocked shape=99999999 tpw=32", "shape=99999999", "0..1048576"},
      {"blocked shape=0 tpw=32", "shape=0", "at least 1"},
      {"blocked shape=2x2x2 tpw=32", "shape=2x2x2", "layout show draws rank 1 or 2"},
      {"blocked shape=65536x65536 tpw=32x1", "shape=65536x65536", "holds at most 24 prime digits"},
      {"blocked shape=96 spt=1048576 tpw=32 wpc=1", "spt=1048576", "holds at most 24 prime digits"},  // not shape's
      {"blocked shape=16x96 tpw=32", "tpw=32", "tpw takes 2 entries, one per dim of shape (got 1)"},
      {"blocked shape=16x96 tpw=4x8 order=0,0", "order=0,0", "permutation"},
      {"blocked shape=96 tpw=16 wpc=1", "blocked", "a warp has 32 or 64 threads"},
      {"blocked shape=32 tpw=32 wpc=3", "wpc=3", "wpc make 3 warps"},
      {"blocked shape=8x96 tpw=1x32 wpc=4x3", "blocked", "powers of two"},  // 12 warps, but blocked's are binary
      {"mma shape=30x8", "mma", "footprint"},
      {"mma shape=80x8 warps=5x1", "warps=5x1", "warps make 5 warps: a program has a power of two in 1..32, or 12, 20"},
      {"wgmma n=96 warps=36", "warps=36", "warps make 36 warps"},
      {"mfma m=16 shape=48x16 warps=3x1", "warps=3x1", "warps make 3 warps"},
      {"blocked shape=96 tpw=32 wpc=64", "wpc=64", "wpc make 64 warps"},
      {"mma shape=32 warps=2x2", "shape=32", "shape takes 2 entries"},
      {"mma-a shape=32x16 warps=2x2x1", "warps=2x2x1", "warps takes 2 entries"},
      {"wgmma n=100", "n=100", "multiple of 8 in 8..256"},
      {"wgmma n=88", "n=88", "the prime factor 11"},
      {"wgmma n=96 warps=2", "wgmma", "multiple of 4"},
      {"mfma m=8 shape=64x64", "m=8", "16 or 32"},
      {"shared shape=96x64 elem=3", "shared", "elem_bytes must be 1, 2, 4 or 8"},
      {"shared shape=96x64 elem=2 swizzle=48", "shared", "swizzle_bytes must be 0, 32, 64 or 128"},
      {"slice dim=1", "slice", "needs an inner spec"},
      {"slice dim=2 mma shape=16x8", "dim=2", "dim is 0..1"},
      {"slice dim=0 blocked shape=96 tpw=32", "dim=0", "must have 2 dims"},
      {"slice dim=1 regs=maybe mma shape=16x8", "regs=maybe", "regs ::= keep | drop"},
      {"slice mma shape=16x8", "slice", "slice needs dim="},
      {"mma shape=16x8 slice", "slice", "param ::= key=value"},
      {"slice dim=0 slice dim=0 mma shape=16x8", "slice", "not itself a slice"},
  };
  for (const Bad& b : cases) {
    const std::string spec = b.spec;
    CAPTURE(spec);
    try {
      (void)parse_layout_spec(b.spec);
      FAIL("no error for a bad spec");
    } catch (const SpecError& e) {
      CHECK(e.token() == b.token);
      CHECK_MESSAGE(contains(e.rule(), b.rule), e.rule());
      CHECK(contains(e.what(), "'" + std::string(b.token) + "'"));
      CHECK(contains(e.what(), e.rule()));
    }
  }
  // A helper agent's finding: 939 nested slices recursed until the stack overflowed (a segfault).
  {
    std::string nested;
    for (int i = 0; i < 5000; ++i) nested += "slice dim=0 ";
    CHECK_THROWS_WITH_AS((void)parse_layout_spec(nested + "mma shape=16x8"), doctest::Contains("not itself a slice"), SpecError);
  }
  // Leading zeros are not digits of the value: 000000096 is 96 (the 8-digit cap counted them).
  CHECK(parse_layout_spec("blocked shape=000000096 tpw=32").layout == parse_layout_spec("blocked shape=96 tpw=32").layout);
  // A SpecError is a tilejit::InvalidArgument, so `catch (tilejit::Error&)` sees it.
  CHECK_THROWS_AS((void)parse_layout_spec("blocky"), tilejit::InvalidArgument);
  // The subcommand turns it into exit code 2.
  LayoutShowArgs args;
  args.spec = {"blocked", "shape=96", "tpw=33"};
  CHECK(run_layout_show(args) == 2);
}

TEST_CASE("layout show: an SVG that cannot be written is exit code 1 with nothing on stdout") {
  LayoutShowArgs args;
  args.spec = {"blocked", "shape=96", "spt=3", "tpw=32", "wpc=1"};
  args.svg_path = "/nonexistent-dir/x.svg";
  const auto out = std::filesystem::temp_directory_path() / ("tilejit-layout-stdout-" + std::to_string(::getpid()));
  std::fflush(stdout);
  const int saved = ::dup(1);
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  ::dup2(fd, 1);
  const int rc = run_layout_show(args);
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(saved);
  ::close(fd);
  CHECK(rc == 1);
  CHECK(std::filesystem::file_size(out) == 0);  // the layout used to be printed before the error
  std::filesystem::remove(out);
}

// ---- the text grid ------------------------------------------------------------------

TEST_CASE("layout show: fact 11, 96 floats as 32 lanes x 3 registers, registers minor") {
  const std::string spec = "blocked shape=96 spt=3 tpw=32 wpc=1";
  const std::string text = layout_show(spec, ShowOptions{});
  // The algebraic form: digit systems and images, radices visible.
  CHECK(contains(text, "out  dim0      [3,2,2,2,2,2]  size 96"));
  CHECK(contains(text, "in   register  [3]            size 3"));
  CHECK(contains(text, "register.d0 (3)  ->  1   = dim0.d0(3)"));
  const char* lane_images[] = {"lane.d0 (2)      ->  3   = dim0.d1(2)",
                               "lane.d1 (2)      ->  6   = dim0.d2(2)",
                               "lane.d2 (2)      ->  12  = dim0.d3(2)",
                               "lane.d3 (2)      ->  24  = dim0.d4(2)",
                               "lane.d4 (2)      ->  48  = dim0.d5(2)"};
  for (const char* l : lane_images) CHECK_MESSAGE(contains(text, l), l);
  CHECK(contains(text, "injective: yes   surjective: yes"));
  // The grid: one row of 96, wrapped every 32 (row labels 0, 32, 64).
  const auto rows = grid_rows(text);
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].first == "0");
  CHECK(rows[2].first == "64");
  for (const auto& r : rows) REQUIRE(r.second.size() == 32);
  CHECK(rows[0].second[17] == "w0:t5:r2");   // element 17: lane 5, register 2
  CHECK(rows[2].second[31] == "w0:t31:r2");  // element 95: the inverse gives (register 2, lane 31)
  for (int e = 0; e < 96; ++e) {
    CHECK(rows[static_cast<std::size_t>(e / 32)].second[static_cast<std::size_t>(e % 32)] ==
          "w0:t" + std::to_string(e / 3) + ":r" + std::to_string(e % 3));
  }
  CHECK(owners_at(spec, 0, 17) == "w0:t5:r2");
  CHECK(contains(text, "every element has exactly one owner: no replication"));
  // --wrap changes only the drawing.
  ShowOptions w12;
  w12.wrap = 12;
  const auto rows12 = grid_rows(layout_show(spec, w12));
  REQUIRE(rows12.size() == 8);
  CHECK(rows12[1].first == "12");
  CHECK(rows12[1].second[5] == "w0:t5:r2");
}

TEST_CASE("layout show: fact 12, the same 96 floats lanes minor") {
  const std::string spec = "blocked shape=96 tpw=32 wpc=1";
  const std::string text = layout_show(spec, ShowOptions{});
  CHECK(contains(text, "out  dim0      [2,2,2,2,2,3]  size 96"));
  for (int k = 0; k < 5; ++k) {
    CHECK(contains(text, "lane.d" + std::to_string(k) + " (2)"));
    CHECK(contains(text, "= dim0.d" + std::to_string(k) + "(2)"));
  }
  CHECK(contains(text, "register.d0 (3)  ->  32  = dim0.d5(3)"));
  const auto rows = grid_rows(text);
  REQUIRE(rows.size() == 3);
  // Wrapped every 32, grid row k is register k and column t is lane t.
  for (int r = 0; r < 3; ++r) {
    for (int t = 0; t < 32; ++t) {
      CHECK(rows[static_cast<std::size_t>(r)].second[static_cast<std::size_t>(t)] ==
            "w0:t" + std::to_string(t) + ":r" + std::to_string(r));
    }
  }
  CHECK(owners_at(spec, 0, 17) == "w0:t17:r0");
  // Facts 11 and 12 write dim0 in different digit systems: element 17 has
  // different owners, and no digit-wise map converts one into the other.
  CHECK(owners_at(spec, 0, 17) != owners_at("blocked shape=96 spt=3 tpw=32 wpc=1", 0, 17));
}

TEST_CASE("layout show: 2-D grids, wgmma N = 96 and a truncated grid") {
  const std::string spec = "wgmma n=96 warps=4";
  const ParsedLayout p = parse_layout_spec(spec);
  const OwnerTable t = compute_owners(p.layout);
  CHECK(t.rows == 64);
  CHECK(t.cols == 96);
  CHECK(t.min_owners() == 1);
  CHECK(t.max_owners() == 1);
  // wgmma.hpp's worked example: warp 1, lane 6, register 45 holds (17, 93).
  CHECK(cell_text(p, t, 17, 93) == "w1:t6:r45");
  const std::string text = layout_show(spec, ShowOptions{});
  CHECK(contains(text, "in   register  [2,2,2,2,3]"));
  CHECK(contains(text, "out  dim1      [2,2,2,2,2,3]"));
  CHECK(contains(text, "grid: dim0 (64 rows) x dim1 (96 columns)"));
  CHECK(contains(text, "(truncated: rows 0..31 of 64 and columns 0..15 of 96 shown; "
                       "--max-cells 6144 shows all)"));
  const auto rows = grid_rows(text);
  REQUIRE(rows.size() == 32);
  CHECK(rows[0].second.size() == 16);
  CHECK(rows[9].second[3] == cell_text(p, t, 9, 3));
  ShowOptions all;
  all.max_cells = 6144;
  const std::string full = layout_show(spec, all);
  CHECK(!contains(full, "truncated"));
  CHECK(grid_rows(full).size() == 64);
  CHECK(grid_rows(full)[17].second[93] == "w1:t6:r45");

  // mma.sync C: lane 5, register 3 holds (9, 3) (mma_sync.hpp's example).
  CHECK(owners_at("mma shape=16x8", 9, 3) == "w0:t5:r3");
  // MFMA 32x32: lane 37, register 6 holds (14, 5).
  CHECK(owners_at("mfma m=32 shape=32x32", 14, 5) == "w0:t37:r6");
}

TEST_CASE("layout show: replication when the tile is smaller than the program") {
  // 8 columns, but 8 lanes x 2 warps cover 16: warp digit 0 has image 0.
  const std::string spec = "blocked shape=8x8 tpw=4x8 wpc=2x2 order=1,0";
  const std::string text = layout_show(spec, ShowOptions{});
  CHECK(contains(text, "warp.d0 (2)  ->  (0, 0)  = 0: a copy (broadcast)"));
  CHECK(contains(text, "digits with image 0 (their values are copies of one another): warp.d0"));
  CHECK(contains(text, "injective: no   surjective: yes"));
  CHECK(contains(text, "replication: every element has 2 owners"));
  const auto rows = grid_rows(text);
  REQUIRE(rows.size() == 8);
  CHECK(rows[0].second[0] == "w0:t0:r0+1");
  CHECK(rows[4].second[7] == "w2:t7:r0+1");
  CHECK(owners_at(spec, 0, 0, true) == "w0:t0:r0|w1:t0:r0");
  CHECK(owners_at(spec, 5, 2, true) == "w2:t10:r0|w3:t10:r0");
  ShowOptions all;
  all.all_owners = true;
  CHECK(grid_rows(layout_show(spec, all))[0].second[0] == "w0:t0:r0|w1:t0:r0");

  // 1-D: 16 elements over 32 lanes; lanes 16..31 hold copies of 0..15.
  CHECK(owners_at("blocked shape=16 tpw=32", 0, 3, true) == "w0:t3:r0|w0:t19:r0");
  // 4 elements over 32 lanes x 4 warps: 32 owners each; --all-owners lists the first 8, then how many more.
  CHECK(owners_at("blocked shape=4 tpw=32 wpc=4", 0, 1, true) ==
        "w0:t1:r0|w0:t5:r0|w0:t9:r0|w0:t13:r0|w0:t17:r0|w0:t21:r0|w0:t25:r0|w0:t29:r0|+24");
  // A reduction's result: every row sum is held by a quad of lanes x 2 registers.
  const std::string row_sums = layout_show("slice dim=1 mma shape=16x8", ShowOptions{});
  CHECK(contains(row_sums, "replication: every element has 8 owners"));
  CHECK(grid_rows(row_sums)[0].second[9] == "w0:t4:r2+7");
  CHECK(owners_at("slice dim=1 regs=drop mma shape=16x8", 0, 9, true) ==
        "w0:t4:r1|w0:t5:r1|w0:t6:r1|w0:t7:r1");
  // mma.sync operand A with 2x2 warps: warps along N hold the same A rows.
  CHECK(owners_at("mma-a shape=32x16 warps=2x2", 0, 0, true) == "w0:t0:r0|w1:t0:r0");
}

TEST_CASE("layout show: shared-memory layouts print offsets") {
  const std::string spec = "shared shape=8x64 elem=2 swizzle=128";
  const ParsedLayout p = parse_layout_spec(spec);
  const OwnerTable t = compute_owners(p.layout);
  CHECK(cell_text(p, t, 0, 5) == "5");
  // Row 1 stores its 16-byte chunk c in chunk c ^ 1: element (1, 0) at 64 + 8.
  CHECK(cell_text(p, t, 1, 0) == "72");
  // nvmma_shared.hpp's worked example: offset 511 holds element (7, 7).
  CHECK(cell_text(p, t, 7, 7) == "511");
  const std::string text = layout_show(spec, ShowOptions{});
  CHECK(contains(text, "offset.d6 (2)  ->  (1, 8)   = dim0.d0(2) + dim1.d3(2)"));
  CHECK(contains(text, "cell = the element's offset in shared memory"));
  CHECK(contains(text, "every element has exactly one offset"));
  // NPOT rows: 96 rows with a radix-3 digit, still one offset per element.
  const ParsedLayout p96 = parse_layout_spec("shared shape=96x64 elem=2 swizzle=128");
  const OwnerTable t96 = compute_owners(p96.layout);
  CHECK(t96.min_owners() == 1);
  CHECK(t96.max_owners() == 1);
  CHECK(contains(describe_layout(p96), "out  dim0    [2,2,2,2,2,3]"));
}

// ---- the picture -----------------------------------------------------------------------

TEST_CASE("layout show: the SVG is well formed, one rect per element, one colour per warp") {
  struct Pic {
    std::string spec;
    int elements;
    int warps;
    int lanes;
  };
  const Pic pics[] = {
      {"blocked shape=96 spt=3 tpw=32 wpc=1", 96, 1, 32},
      {"blocked shape=96 tpw=32 wpc=1", 96, 1, 32},
      {"blocked shape=16x96 spt=1x4 tpw=4x8 wpc=4x1 order=1,0", 16 * 96, 4, 32},
      {"mma shape=32x32 warps=2x2", 32 * 32, 4, 32},
      {"wgmma n=24 warps=4", 64 * 24, 4, 32},
      {"mfma m=32 shape=64x64 warps=2x2", 64 * 64, 4, 64},
      {"blocked shape=8x8 tpw=4x8 wpc=2x2 order=1,0", 64, 2, 32},  // warps 1, 3 hold only copies
  };
  for (const Pic& pic : pics) {
    CAPTURE(pic.spec);
    std::string svg;
    (void)layout_show(pic.spec, ShowOptions{}, &svg);
    CHECK_MESSAGE(xml_problem(svg).empty(), xml_problem(svg));
    CHECK(count(svg, "<rect class=\"w") == pic.elements);
    CHECK(static_cast<int>(rect_classes(svg, "w").size()) == pic.warps);
    // Every rect of one warp has that warp's hue: at most 4 shades (lane groups) per warp.
    std::set<std::string> fills;
    for (std::size_t q = svg.find("<rect class=\"w"); q != std::string::npos;
         q = svg.find("<rect class=\"w", q + 1)) {
      const std::size_t f = svg.find("fill=\"", q) + 6;
      fills.insert(svg.substr(f, 7));
    }
    CHECK(static_cast<int>(fills.size()) <= pic.lanes / 8 * pic.warps);
    CHECK(contains(svg, "<text x=\"48\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" +
                            pic.spec + "</text>"));
    CHECK(contains(svg, "label: t&lt;lane&gt; over r&lt;register&gt;"));
  }
  std::string svg;
  (void)layout_show("blocked shape=96 spt=3 tpw=32 wpc=1", ShowOptions{}, &svg);
  CHECK(contains(svg, ">t5</text>"));
  CHECK(contains(svg, ">r2</text>"));
  CHECK(contains(svg, ">warp 0</text>"));
  CHECK(contains(svg, ">t24-31</text>"));

  // Replicated elements say so.
  (void)layout_show("blocked shape=8x8 tpw=4x8 wpc=2x2 order=1,0", ShowOptions{}, &svg);
  CHECK(contains(svg, ">r0+1</text>"));

  // Shared memory: one rect per offset, coloured by the 8 16-byte chunks.
  (void)layout_show("shared shape=8x64 elem=2 swizzle=128", ShowOptions{}, &svg);
  CHECK(xml_problem(svg).empty());
  CHECK(count(svg, "<rect class=\"c") == 512);
  CHECK(rect_classes(svg, "c").size() == 8);
  CHECK(contains(svg, ">511</text>"));

  // The checker itself catches what it should.
  CHECK(!xml_problem("<?xml version=\"1.0\"?>\n<svg><g></svg>").empty());
  CHECK(!xml_problem("<?xml version=\"1.0\"?>\n<svg><text>a & b</text></svg>").empty());
  CHECK(xml_problem("<?xml version=\"1.0\"?>\n<svg><g><rect/></g></svg>").empty());
}

// ---- docs/layouts.md -------------------------------------------------------------------

std::filesystem::path repo_root() {
  return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

/// True when the lines of want appear in got in order, "..." matching any
/// run of lines.
bool output_matches(const std::vector<std::string>& want, const std::vector<std::string>& got) {
  std::size_t g = 0;
  bool skipping = false;
  for (const std::string& w : want) {
    if (w == "...") {
      skipping = true;
      continue;
    }
    if (skipping) {
      while (g < got.size() && got[g] != w) ++g;
      skipping = false;
    }
    if (g >= got.size() || got[g] != w) return false;
    ++g;
  }
  return skipping || g == got.size();
}

struct DocCommands {
  int commands = 0, pictures = 0, errors = 0;
};

/// Runs every `$ tilejit layout show` command of docs/<name> and checks the output the doc shows (and the SVG file
/// it names) against what the tool prints and draws.
DocCommands check_doc_commands(const std::string& name) {
  CAPTURE(name);
  DocCommands n;
  const std::string doc = read_file(repo_root() / "docs" / name);
  REQUIRE(!doc.empty());
  const std::vector<std::string> ls = lines_of(doc);
  const std::string prompt = "$ tilejit layout show ";
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (ls[i].rfind(prompt, 0) != 0) continue;
    ++n.commands;
    std::string rest = ls[i].substr(prompt.size());
    CAPTURE(ls[i]);
    REQUIRE(rest.size() > 2);
    REQUIRE(rest[0] == '"');
    const std::size_t close = rest.find('"', 1);
    REQUIRE(close != std::string::npos);
    const std::string spec = rest.substr(1, close - 1);
    ShowOptions o;
    std::string svg_path;
    const std::vector<std::string> opts = words(rest.substr(close + 1));
    for (std::size_t k = 0; k < opts.size(); ++k) {
      if (opts[k] == "--all-owners") {
        o.all_owners = true;
      } else {
        REQUIRE(k + 1 < opts.size());
        if (opts[k] == "--svg") svg_path = opts[k + 1];
        else if (opts[k] == "--max-cells") o.max_cells = std::stoi(opts[k + 1]);
        else if (opts[k] == "--wrap") o.wrap = std::stoi(opts[k + 1]);
        else FAIL("unknown option " << opts[k]);
        ++k;
      }
    }
    // The output shown: the lines up to the end of the code block or the next command.
    std::vector<std::string> want;
    for (std::size_t j = i + 1; j < ls.size() && ls[j].rfind("```", 0) != 0 &&
                                ls[j].rfind("$ ", 0) != 0;
         ++j) {
      want.push_back(ls[j]);
    }
    std::string svg, text;
    try {
      text = layout_show(spec, o, &svg);
      if (!svg_path.empty()) text += "wrote " + svg_path + "\n";
    } catch (const SpecError& e) {
      ++n.errors;
      text = std::string("tilejit layout show: ") + e.what() + "\n";
    }
    CHECK_MESSAGE(output_matches(want, lines_of(text)), text);
    if (!svg_path.empty()) {
      ++n.pictures;
      CHECK_MESSAGE(read_file(repo_root() / svg_path) == svg,
                    svg_path << " differs from what the command draws: rerun it");
    }
  }
  return n;
}

TEST_CASE("layout show: every command in docs/layouts.md prints what the doc shows") {
  const DocCommands n = check_doc_commands("layouts.md");
  CHECK(n.commands >= 8);
  CHECK(n.pictures >= 5);
  CHECK(n.errors >= 2);
}

TEST_CASE("layout show: every command in docs/attention.md prints what the doc shows") {
  const DocCommands n = check_doc_commands("attention.md");
  CHECK(n.commands >= 2);
  CHECK(n.pictures >= 1);
}

TEST_CASE("layout_cmd: the C++ examples of docs/layouts.md are lines of this test") {
  // Worked examples of the doc, run here; the check below finds each line of
  // the doc's cpp blocks in this file.
  using tilejit::layout::DigitSystem;
  CHECK(DigitSystem{2, 2, 2, 2, 2, 3}.decompose(33) == DigitSystem::Digits{1, 0, 0, 0, 0, 1});
  CHECK(DigitSystem{3, 2, 2, 2, 2, 2}.decompose(33) == DigitSystem::Digits{0, 1, 1, 0, 1, 0});
  CHECK(DigitSystem{2, 2, 2, 2, 2, 3}.add(32, 32) == 64);  // digit 5: 1 + 1 = 2 < 3
  CHECK(DigitSystem{2, 2, 2, 2, 2, 3}.add(64, 32) == 0);   // digit 5: 2 + 1 = 3 = 0 mod 3
  CHECK(DigitSystem{2, 2, 2, 2, 2, 3}.add(1, 1) == 0);     // digit 0: XOR
  const LL regs_minor = LL::identity1D(3, "register", "dim0") * LL::identity1D(32, "lane", "dim0");
  const LL lanes_minor = LL::identity1D(32, "lane", "dim0") * LL::identity1D(3, "register", "dim0");
  CHECK(regs_minor.out_digits(0) == DigitSystem{3, 2, 2, 2, 2, 2});
  CHECK(lanes_minor.out_digits(0) == DigitSystem{2, 2, 2, 2, 2, 3});
  CHECK(regs_minor.apply({{"lane", 5}, {"register", 2}})[0] == 17);
  CHECK(lanes_minor.apply({{"lane", 5}, {"register", 2}})[0] == 69);
  CHECK(regs_minor.invert().value().apply({95})[0] == 2);  // (register 2, lane 31)
  CHECK(!regs_minor.invert_and_compose(lanes_minor).ok());  // a change of digit order
  CHECK(lanes_minor.reshape_outs({{"minor", 3}, {"major", 32}}).needs_digit_reorder());  // fact 15
  CHECK(lanes_minor.reshape_outs({{"minor", 32}, {"major", 3}}).ok());
  CHECK(!LL::try_from_images({{"register", {3}, {{1}}}}, {{"dim0", {2, 3}}}).ok());  // 3 onto 2
  CHECK(LL::try_from_images({{"register", {3}, {{2}}}}, {{"dim0", {2, 3}}}).ok());   // 3 onto 3

  const std::string doc = read_file(repo_root() / "docs" / "layouts.md");
  const std::string self = read_file(__FILE__);
  REQUIRE(!doc.empty());
  std::set<std::string> mine;
  for (const std::string& l : lines_of(self)) mine.insert(trim(l));
  bool in_cpp = false;
  int checked = 0;
  for (const std::string& l : lines_of(doc)) {
    if (l.rfind("```", 0) == 0) {
      in_cpp = l == "```cpp";
      continue;
    }
    const std::string t = trim(l);
    if (!in_cpp || t.empty() || t.rfind("//", 0) == 0) continue;
    ++checked;
    CHECK_MESSAGE(mine.count(t) == 1, "docs/layouts.md line not exercised here: " << t);
  }
  CHECK(checked >= 8);
}

}  // namespace
