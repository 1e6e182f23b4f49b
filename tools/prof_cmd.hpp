// tools/prof_cmd.hpp — `tilejit prof view` and `tilejit prof html`: read a
// hatchet profile (JSON or MessagePack, as the profiler writes them; see
// docs/profiler.md), print its call tree with chosen metrics, compare two
// profiles, draw a self-contained HTML flame graph.
//
// Everything the subcommands do is a function here, so the tests call the
// same code the tool runs (test/tools/test_prof_cmd.cpp).
//
// Metrics (--metrics, comma separated; names are case-insensitive)
// -----------------------------------------------------------------
//   time/s time/ms time/us time/ns   inclusive "time (ns)" in that unit
//   avg_time/s ... avg_time/ns        inclusive time / inclusive "count"
//   flop/s gflop/s tflop/s            (sum of flops8/16/32/64) / time
//   flop<W>/s gflop<W>/s tflop<W>/s   flops<W> / time, W in 8 16 32 64
//   byte/s gbyte/s tbyte/s            bytes / time
//   util                              max(sum_W flops<W> / peak<W>, bytes / peak_bw) / time,
//                                     against --device-peaks (default h200)
//   any metric of the file            by its name, with or without its unit:
//                                     "count", "bytes", "flops16", "time" (= "time (ns)")
// Every value is inclusive (the node and its descendants) for metrics the
// file reports as inclusive ("<name> (inc)") and for the kernel and launch
// metrics (time (ns), count, flops<W>, bytes) of files that carry no "(inc)"
// values (Proton's); other metrics (exclusive, property) are the node's own.
// Rates and util are shown where the node's time is > 0, avg_time where its
// count is > 0; "-" elsewhere.
//
// Filters: --include keeps every path through a frame whose name matches
// (its ancestors and its subtree); --exclude drops matching frames with their
// subtrees; --depth N shows N levels below ROOT; --threshold X drops nodes whose
// inclusive time is below X times ROOT's (a profile without time: its first
// metric). Regexes are RE2's syntax (Perl's, without backreferences or
// lookaround; at most 1024 bytes; matching takes time linear in the name),
// matched anywhere in it;
// ROOT itself is always shown. Values are those of the unfiltered profile.
// --sort METRIC orders siblings by METRIC, largest first (nodes without a
// value last); otherwise siblings keep the file's order.
//
// Diff (--diff B): nodes are matched by their path of names; for each metric
// four columns: a, b, b-a and b/a; a node present on one side only shows "-"
// for the other. Sort uses b's value, else a's; --threshold keeps a node that is
// significant on either side, each side against its own ROOT.
//
// Bad input — unreadable or malformed files, unknown metrics, bad regexes,
// bad peaks files — throws InvalidArgument naming the value and the rule; the
// tool prints it and exits with code 2.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tilejit/core/error.hpp"

namespace tilejit::tools {

/// One node of a hatchet tree.
struct ProfNode {
  std::string name;
  std::string type;                            ///< frame.type ("function")
  std::map<std::string, double> metrics;       ///< numeric metrics as written
  std::map<std::string, std::string> strings;  ///< text metrics (device_id, device_type)
  std::set<std::string> nulls;                 ///< metrics written as null (NaN or infinite when recorded)
  std::map<std::string, double> inclusive;     ///< base metric name -> inclusive value
  std::vector<ProfNode> children;
};

/// A device of the hatchet device_info element.
struct ProfDevice {
  std::string type;  ///< "CUDA", "HIP"
  std::string id;
  std::string arch;
  double clock_rate = 0, memory_clock_rate = 0, bus_width = 0, num_sms = 0;
};

struct Profile {
  std::string origin;   ///< file name (for messages)
  bool msgpack = false; ///< read from MessagePack
  ProfNode root;
  std::vector<ProfDevice> devices;
  /// Metric names with inclusive values (ProfNode::inclusive has them).
  std::set<std::string> inclusive_metrics;
  /// Other numeric metric names: shown as the node's own value.
  std::set<std::string> plain_metrics;
  /// Metric names the file has only as null (every value NaN or infinite when recorded): not viewable.
  std::set<std::string> null_metrics;

  [[nodiscard]] bool has(std::string_view metric) const;
  [[nodiscard]] std::size_t node_count() const;
};

/// A hatchet profile from its bytes: JSON if the first non-blank byte is '['
/// or '{', else MessagePack. Throws InvalidArgument (naming `origin`) for bad
/// JSON/MessagePack, a Chrome trace, or a tree that is not hatchet's.
[[nodiscard]] Profile parse_profile(std::string_view bytes, std::string_view origin);
/// Reads and parses a file; an unreadable file throws InvalidArgument.
[[nodiscard]] Profile load_profile(const std::string& path);

/// Peak rates to compute utilisation against.
struct DevicePeaks {
  std::string name;                  ///< shown above the tree
  std::map<int, double> flop_per_s;  ///< width (8, 16, 32, 64) -> FLOP/s
  double byte_per_s = 0;             ///< memory bandwidth, bytes/s
};
/// NVIDIA H200 SXM, datasheet figures (dense): FP8 1979, BF16 989.5, FP32 67,
/// FP64 Tensor Core 67 TFLOP/s; HBM3e 4.8 TB/s.
[[nodiscard]] DevicePeaks h200_peaks();
/// "h200" (any case), or a JSON file such as
///   {"name": "my GPU", "flop16/s": 9.895e14, "flop8/s": 1.979e15, "byte/s": 4.8e12}
/// with keys name, flop8/s, flop16/s, flop32/s, flop64/s, byte/s (positive
/// numbers, at least one rate). Throws InvalidArgument otherwise.
[[nodiscard]] DevicePeaks load_peaks(const std::string& spec);

/// The value of one metric (grammar above) at a node; nullopt where it is not
/// defined ("-" in the tree). Throws InvalidArgument for an unknown metric or
/// a derived one whose source metrics the profile lacks.
[[nodiscard]] std::optional<double> metric_value(const Profile& p, const ProfNode& n,
                                                 std::string_view metric,
                                                 const DevicePeaks& peaks);

struct ViewOptions {
  std::vector<std::string> metrics;  ///< empty: time/ms if the file has time, else its first metric
  std::string include, exclude;      ///< regexes; empty: none
  int depth = -1;                    ///< levels below ROOT to show; < 0: all
  double threshold = 0;              ///< fraction of ROOT's time, in [0, 1]
  std::string sort;                  ///< a metric; empty: file order
  std::string peaks = "h200";        ///< for util: "h200" or a peaks file
};

/// The printed tree of `a` (and, with b, the diff of a and b): a header
/// line of column names, then one line per node: the metric columns, then
/// the name drawn as a tree (├─ └─ │). Throws InvalidArgument.
[[nodiscard]] std::string render_view(const Profile& a, const ViewOptions& o,
                                      const Profile* b = nullptr);

struct HtmlOptions {
  std::string peaks = "h200";  ///< util in the tooltips
  int width = 1200;            ///< picture width in pixels
};
/// A self-contained HTML page (no scripts, no external resources): an inline
/// SVG flame graph, ROOT at the bottom, one <rect> per node, its width the
/// node's share of the inclusive time (of its leaf count when the profile has
/// no time), labelled with the name where it fits, a <title> tooltip with the
/// path and the metrics.
[[nodiscard]] std::string render_html(const Profile& p, const HtmlOptions& o = {});

struct ProfViewArgs {
  std::string file;
  std::string diff;  ///< empty: no diff
  ViewOptions options;
  bool diff_given = false;  ///< --diff was on the command line (an empty name there is an error, not "no diff")
};
/// `tilejit prof view`: prints to stdout, errors to stderr; returns 0, or 2
/// for bad input.
int run_prof_view(const ProfViewArgs& args);

struct ProfHtmlArgs {
  std::string file;
  std::string out;
  HtmlOptions options;
};
/// `tilejit prof html`: writes args.out; returns 0, 2 for bad input, 1 when
/// the output cannot be written.
int run_prof_html(const ProfHtmlArgs& args);

}  // namespace tilejit::tools
