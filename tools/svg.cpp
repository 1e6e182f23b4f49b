// tools/svg.cpp — the picture of a layout: one rectangle per element,
// coloured by warp (a lighter shade per group of 8 lanes), labelled with the
// lane and register that hold it; axis labels and a legend. Plain string
// formatting: SVG is our own output format and needs no library.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "tools/layout_cmd.hpp"

namespace tilejit::tools {

namespace L = tilejit::layout;

namespace {

// Tableau 10: distinct hues that stay readable under black text.
constexpr std::array<unsigned, 10> kPalette = {0x4e79a7, 0xf28e2b, 0xe15759, 0x76b7b2, 0x59a14f,
                                               0xedc948, 0xb07aa1, 0xff9da7, 0x9c755f, 0xbab0ac};

constexpr int kCellW = 34;   // px per cell
constexpr int kLeft = 48;    // row labels and the dim0 axis title
constexpr int kTop = 58;     // title, the dim1 axis title and column labels
constexpr int kRight = 12;
constexpr int kLaneGroup = 8;  // lanes per shade

/// colour mixed with white by f in [0, 1], as #rrggbb.
std::string shade(unsigned rgb, double f) {
  const auto mix = [f](unsigned c) {
    return static_cast<unsigned>(static_cast<double>(c) + (255.0 - static_cast<double>(c)) * f + 0.5);
  };
  return fmt::format("#{:02x}{:02x}{:02x}", mix((rgb >> 16) & 0xff), mix((rgb >> 8) & 0xff),
                     mix(rgb & 0xff));
}

std::string escape(std::string_view s) {
  std::string r;
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      default: r += c;
    }
  }
  return r;
}

}  // namespace

std::string render_svg(const ParsedLayout& p, const OwnerTable& t, const ShowOptions& o) {
  const L::LinearLayout& l = p.layout;
  const detail::GridView v = detail::grid_view(t, o.wrap, kSvgMaxCells);
  const int cell_h = p.memory ? 18 : 24;
  const int warp_dim = detail::in_dim(l, "warp");
  const int lane_dim = detail::in_dim(l, "lane");
  const int reg_dim = detail::in_dim(l, "register");
  const int off_dim = detail::in_dim(l, "offset");
  const int num_warps = warp_dim >= 0 ? l.in_size(warp_dim) : 1;
  const int num_lanes = lane_dim >= 0 ? l.in_size(lane_dim) : 1;
  const int groups = std::max(1, num_lanes / kLaneGroup);
  const auto group_shade = [&](int g) {
    return groups == 1 ? 0.0 : 0.55 * static_cast<double>(g) / static_cast<double>(groups - 1);
  };

  const int grid_w = v.shown_cols * kCellW;
  const int width = std::max(kLeft + grid_w + kRight, 460);
  const int legend_top = kTop + v.shown_rows * cell_h + 22;
  // Legend: swatches (wrapping), then shades, then two lines of text.
  const int swatch_w = p.memory ? 150 : 70;
  const int per_line = std::max(1, (width - kLeft) / swatch_w);
  const int swatches = p.memory ? 8 : std::min<int>(num_warps, static_cast<int>(kPalette.size()));
  const int swatch_lines = (swatches + per_line - 1) / per_line;
  const int legend_h = 18 * swatch_lines + (p.memory ? 0 : 18) + 2 * 16 + 8;
  const int height = legend_top + legend_h;

  std::string s;
  s.reserve(static_cast<std::size_t>(v.shown_rows * v.shown_cols) * 150 + 4096);
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\">\n",
      width, height);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width,
                   height);
  std::string title = p.spec;
  if (v.truncated()) {
    title += fmt::format("  (rows 0..{} of {}, columns 0..{} of {})", v.shown_rows - 1, v.rows,
                         v.shown_cols - 1, v.cols);
  }
  s += fmt::format("<text x=\"{}\" y=\"18\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
                   kLeft, escape(title));

  // Axes.
  const std::string d0(l.out_name(0).view());
  if (v.one_d) {
    s += fmt::format("<text x=\"{}\" y=\"36\" font-size=\"11\">{}: element = row label + column "
                     "(+k) →</text>\n",
                     kLeft, escape(d0));
  } else {
    s += fmt::format("<text x=\"{}\" y=\"36\" font-size=\"11\">{} →</text>\n", kLeft,
                     escape(l.out_name(1).view()));
    const int cy = kTop + v.shown_rows * cell_h / 2;
    s += fmt::format("<text x=\"12\" y=\"{0}\" font-size=\"11\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 12 {0})\">{1} ↓</text>\n",
                     cy, escape(d0));
  }
  s += "<g font-size=\"8\" fill=\"#555555\">\n";
  for (int c = 0; c < v.shown_cols; ++c) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}{}</text>\n",
                     kLeft + c * kCellW + kCellW / 2, kTop - 5, v.one_d ? "+" : "", c);
  }
  for (int r = 0; r < v.shown_rows; ++r) {
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n", kLeft - 4,
                     kTop + r * cell_h + cell_h / 2 + 3, v.one_d ? r * v.cols : r);
  }
  s += "</g>\n";

  // Cells: rectangles first, then their labels.
  s += "<g stroke=\"#ffffff\" stroke-width=\"1\">\n";
  std::string labels = "<g font-size=\"8\" text-anchor=\"middle\" fill=\"#111111\">\n";
  for (int r = 0; r < v.shown_rows; ++r) {
    for (int c = 0; c < v.shown_cols; ++c) {
      const auto [tr, tc] = detail::view_element(t, v, r, c);
      if (tr < 0) continue;
      const int x = kLeft + c * kCellW, y = kTop + r * cell_h, cx = x + kCellW / 2;
      const std::vector<L::Image>& owners = t.at(tr, tc);
      if (owners.empty()) {
        s += fmt::format("<rect class=\"none\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                         "fill=\"#eeeeee\"/>\n",
                         x, y, kCellW, cell_h);
        labels += fmt::format("<text x=\"{}\" y=\"{}\">-</text>\n", cx, y + 14);
        continue;
      }
      const L::Image& in = owners[0];
      const auto at = [&](int dim) { return dim >= 0 ? in[static_cast<std::size_t>(dim)] : 0; };
      const std::string more =
          owners.size() > 1 ? fmt::format("+{}", owners.size() - 1) : std::string();
      if (p.memory) {
        const int offset = at(off_dim);
        const int chunk = (offset * std::max(p.elem_bytes, 1) / 16) % 8;
        s += fmt::format("<rect class=\"c{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                         "fill=\"{}\"/>\n",
                         chunk, x, y, kCellW, cell_h, shade(kPalette[chunk], 0.25));
        labels += fmt::format("<text x=\"{}\" y=\"{}\">{}{}</text>\n", cx, y + 12, offset, more);
        continue;
      }
      const int warp = at(warp_dim), lane = at(lane_dim);
      const unsigned base = kPalette[static_cast<std::size_t>(warp) % kPalette.size()];
      s += fmt::format("<rect class=\"w{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" "
                       "fill=\"{}\"/>\n",
                       warp, x, y, kCellW, cell_h, shade(base, group_shade(lane / kLaneGroup)));
      labels += fmt::format("<text x=\"{}\" y=\"{}\">t{}</text>\n", cx, y + 10, lane);
      labels += fmt::format("<text x=\"{}\" y=\"{}\">r{}{}</text>\n", cx, y + 20, at(reg_dim),
                            more);
    }
  }
  s += "</g>\n" + labels + "</g>\n";

  // Legend.
  s += "<g font-size=\"10\" fill=\"#111111\">\n";
  int y = legend_top;
  for (int k = 0; k < swatches; ++k) {
    const int x = kLeft + (k % per_line) * swatch_w;
    const int yy = y + (k / per_line) * 18;
    const unsigned col = kPalette[static_cast<std::size_t>(k)];
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", x,
                     yy - 10, p.memory ? shade(col, 0.25) : shade(col, 0.0));
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", x + 16, yy,
                     p.memory ? fmt::format("chunk {}: banks {}-{}", k, 4 * k, 4 * k + 3)
                              : fmt::format("warp {}", k));
  }
  y += 18 * swatch_lines;
  if (!p.memory) {
    for (int g = 0; g < groups; ++g) {
      const int x = kLeft + g * 70;
      s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", x,
                       y - 10, shade(kPalette[0], group_shade(g)));
      s += fmt::format("<text x=\"{}\" y=\"{}\">t{}-{}</text>\n", x + 16, y,
                       g * kLaneGroup, std::min(num_lanes, (g + 1) * kLaneGroup) - 1);
    }
    y += 18;
  }
  std::string note1, note2;
  if (p.memory) {
    note1 = fmt::format("label: element offset in shared memory; {} bytes per element", p.elem_bytes);
    note2 = "colour: 16-byte chunk of the offset mod 8 (the 4 banks it hits)";
  } else {
    note1 = fmt::format("colour: warp ({} warp{}{}); lighter: higher lane group", num_warps,
                        num_warps == 1 ? "" : "s",
                        num_warps > static_cast<int>(kPalette.size()) ? ", colours repeat" : "");
    note2 = "label: t<lane> over r<register>; +k: k more owners hold copies";
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft, y, escape(note1));
  s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kLeft, y + 16, escape(note2));
  s += "</g>\n</svg>\n";
  return s;
}

}  // namespace tilejit::tools
