// The `tilejit` command-line tool.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tilejit/core/error.hpp"
#include "tools/demo.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tilejit: GPU tile kernels from C++"};
  app.require_subcommand(1);
  tilejit::tools::DemoOptions demo;
  auto* d = app.add_subcommand("demo", "run vector add and softmax: on a GPU at >= 1 GiB against the copy bandwidth; "
                                        "without one through the CPU interpreter, plus NVRTC/HIP compiles");
  d->add_option("--gib", demo.gib, "GiB of input data per kernel on a GPU")->check(CLI::Range(0.01, 64.0));
  d->add_option("--iters", demo.iters, "timed launches per kernel (median)")->check(CLI::Range(1, 10000));
  d->add_flag("--cpu", demo.force_cpu, "use the CPU interpreter even if a GPU is present");
  CLI11_PARSE(app, argc, argv);
  try {
    if (d->parsed()) return tilejit::tools::run_demo(demo);
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 1;
  }
  return 0;
}
