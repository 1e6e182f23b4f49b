#pragma once
namespace tilejit::tools {
struct DemoOptions {
  double gib = 1.0;      // data per kernel on a GPU, GiB
  int iters = 20;        // timed launches per kernel (median reported)
  bool force_cpu = false;
};
/// `tilejit demo`: returns the process exit code (0 when every check passed).
int run_demo(const DemoOptions& o);
}  // namespace tilejit::tools
