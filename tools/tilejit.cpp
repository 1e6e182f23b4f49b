// The `tilejit` command-line tool.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tilejit/core/error.hpp"
#include "tools/demo.hpp"
#include "tools/layout_cmd.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tilejit: GPU tile kernels from C++"};
  app.require_subcommand(1);
  tilejit::tools::DemoOptions demo;
  auto* d = app.add_subcommand("demo", "run vector add and softmax: on a GPU at >= 1 GiB against the copy bandwidth; "
                                        "without one through the CPU interpreter, plus NVRTC/HIP compiles");
  d->add_option("--gib", demo.gib, "GiB of input data per kernel on a GPU")->check(CLI::Range(0.01, 64.0));
  d->add_option("--iters", demo.iters, "timed launches per kernel (median)")->check(CLI::Range(1, 10000));
  d->add_flag("--cpu", demo.force_cpu, "use the CPU interpreter even if a GPU is present");
  tilejit::tools::LayoutShowArgs show;
  auto* layout = app.add_subcommand("layout", "inspect layouts");
  layout->require_subcommand(1);
  auto* ls = layout->add_subcommand(
      "show", "print which (warp, lane, register) owns each element of an encoding, and draw it "
              "(grammar: docs/layouts.md)");
  ls->add_option("spec", show.spec,
                 "encoding spec, e.g. \"wgmma n=96 warps=4\" or blocked shape=96 tpw=32 wpc=1")
      ->required();
  ls->add_option("--svg", show.svg_path, "also write an SVG picture to this file");
  ls->add_option("--max-cells", show.options.max_cells, "text grid: show at most N cells")
      ->check(CLI::Range(1, 1 << 24));
  ls->add_option("--wrap", show.options.wrap, "1-D layouts: elements per grid row")
      ->check(CLI::Range(1, 1 << 20));
  ls->add_flag("--all-owners", show.options.all_owners,
               "list every owner of a replicated element instead of +k");
  CLI11_PARSE(app, argc, argv);
  try {
    if (d->parsed()) return tilejit::tools::run_demo(demo);
    if (ls->parsed()) return tilejit::tools::run_layout_show(show);
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 1;
  }
  return 0;
}
