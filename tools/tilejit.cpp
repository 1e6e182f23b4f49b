// The `tilejit` command-line tool.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>

#include "tilejit/core/error.hpp"
#include "tools/demo.hpp"
#include "tools/layout_cmd.hpp"
#include "tools/predict_cmd.hpp"
#include "tools/prof_cmd.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tilejit: GPU tile kernels from C++"};
  app.require_subcommand(1);
  tilejit::tools::DemoOptions demo;
  auto* d = app.add_subcommand("demo", "run vector add and softmax: on a GPU at >= 1 GiB against the copy bandwidth; "
                                        "without one through the CPU interpreter, plus NVRTC/HIP compiles");
  d->add_option("--gib", demo.gib, "GiB of input data per kernel on a GPU")
      ->check([](const std::string& v) -> std::string {  // CLI::Range lets NaN through (every comparison is false)
        return v.find_first_of("nN") != std::string::npos ? "--gib " + v + ": must be a number in [0.01, 64]" : "";
      })
      ->check(CLI::Range(0.01, 64.0));
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
  ls->add_option("--svg", show.svg_path, "also write an SVG picture to this file")
      ->check([](const std::string& v) -> std::string { return v.empty() ? "--svg needs a file name" : ""; });
  ls->add_option("--max-cells", show.options.max_cells, "text grid: show at most N cells")
      ->check(CLI::Range(1, 1 << 24));
  ls->add_option("--wrap", show.options.wrap, "1-D layouts: elements per grid row")
      ->check(CLI::Range(1, 1 << 20));
  ls->add_flag("--all-owners", show.options.all_owners,
               "list the owners of a replicated element (the first 8 a cell, then |+k) instead of +k");
  tilejit::tools::ProfViewArgs pview;
  tilejit::tools::ProfHtmlArgs phtml;
  auto* prof = app.add_subcommand("prof", "read the hatchet profiles the profiler writes (docs/profiler.md)");
  prof->require_subcommand(1);
  auto* pv = prof->add_subcommand("view", "print a profile's call tree with chosen metrics, or the diff of two "
                                          "(metric names and filters: tools/prof_cmd.hpp)");
  pv->add_option("file", pview.file, "hatchet profile, JSON or MessagePack")->required();
  pv->add_option("--metrics,-m", pview.options.metrics,
                 "comma-separated: time/ms, avg_time/us, count, flop/s, tflop16/s, byte/s, gbyte/s, util, "
                 "or any metric of the file (default time/ms)")
      ->delimiter(',')
      ->expected(1)  // one comma-separated value per -m (repeatable): a vector option would also take the file
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  pv->add_option("--include,-i", pview.options.include, "keep the paths through frames matching this regex (RE2 syntax)");
  pv->add_option("--exclude,-e", pview.options.exclude, "drop frames matching this regex (RE2 syntax), with their subtrees");
  pv->add_option("--depth,-d", pview.options.depth, "levels below ROOT to show (default: all)")
      ->check(CLI::Range(0, 8192));
  pv->add_option("--threshold,-t", pview.options.threshold,
                 "drop nodes whose time is below this fraction of ROOT's (0..1)");
  pv->add_option("--sort,-s", pview.options.sort, "order siblings by this metric, largest first");
  auto* diff_opt = pv->add_option("--diff", pview.diff, "compare with this profile (a, b, b-a, b/a per metric)");
  pv->add_option("--device-peaks", pview.options.peaks,
                 "peaks for util: h200 (datasheet figures, the default) or a JSON file");
  auto* ph = prof->add_subcommand("html", "write a self-contained HTML flame graph of a profile");
  ph->add_option("file", phtml.file, "hatchet profile, JSON or MessagePack")->required();
  ph->add_option("-o,--output", phtml.out, "the HTML file to write")->required();
  ph->add_option("--device-peaks", phtml.options.peaks, "peaks for util: h200 (default) or a JSON file");
  tilejit::tools::PredictArgs pred;
  auto* predict = app.add_subcommand("predict", "the learned config ranker's data and model (docs/predictor.md)");
  predict->require_subcommand(1);
  auto* pe = predict->add_subcommand("eval", "leave-one-kernel-out: rank each family with a model trained on the others, "
                                             "beside the roofline order and a random one");
  auto* pt = predict->add_subcommand("train", "train the ranking model on every family of the data");
  for (auto* sub : {pe, pt}) {
    sub->add_option("data", pred.data, "dataset files written by predict_sweep (one device)")->required()->check(CLI::ExistingFile);
    sub->add_option("--rounds", pred.train.rounds, "boosting rounds")->check(CLI::Range(1, 10000));
    sub->add_option("--max-depth", pred.train.max_depth, "tree depth")->check(CLI::Range(1, 16));
    sub->add_option("--eta", pred.train.eta, "learning rate")->check(CLI::Range(0.001, 1.0));
  }
  pe->add_option("--k", pred.k, "top-k sizes, comma-separated")
      ->delimiter(',')
      ->expected(1)  // as -m above: `--k 1,3 data` must leave data to the positional
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(CLI::Range(1, 1000));
  pe->add_option("--tolerance", pred.tolerance, "regret counted as zero up to this fraction")
      ->check([](const std::string& v) -> std::string {  // CLI::Range lets NaN through (every comparison is false)
        return v.find_first_of("nN") != std::string::npos ? "--tolerance " + v + ": must be a number in [0, 1]" : "";
      })
      ->check(CLI::Range(0.0, 1.0));
  pt->add_option("-o,--output", pred.out, "the model file to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the message (or the help, exit 0); a usage error exits 2, as a bad spec or profile does.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (d->parsed()) return tilejit::tools::run_demo(demo);
    if (ls->parsed()) return tilejit::tools::run_layout_show(show);
    if (pv->parsed()) {
      pview.diff_given = diff_opt->count() > 0;
      return tilejit::tools::run_prof_view(pview);
    }
    if (ph->parsed()) return tilejit::tools::run_prof_html(phtml);
    if (pe->parsed()) return tilejit::tools::run_predict_eval(pred);
    if (pt->parsed()) return tilejit::tools::run_predict_train(pred);
  } catch (const tilejit::Error& e) {
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tilejit: out of memory\n");
    return 1;
  } catch (const std::exception& e) {  // anything else a library below throws: a message and exit 1, not an abort
    std::fprintf(stderr, "tilejit: %s\n", e.what());
    return 1;
  }
  return 0;
}
