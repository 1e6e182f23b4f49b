// src/runtime/autotune.cpp — the autotuner: prune, compile in parallel,
// benchmark with events and L2 flushes, persist the winner (see autotune.hpp).
#include "tilejit/runtime/autotune.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "atomic_file.hpp"
#include "parallel.hpp"

namespace tilejit {
namespace {

/// [A-Za-z0-9_.-]: the characters of autotuner names (they name files) and tune key property names (written as
/// name=value pairs separated by spaces).
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/// The longest autotuner name: its stored file's temporary name must stay within NAME_MAX (255 bytes).
constexpr std::size_t kMaxNameChars = 200;

/// Register-pressure prune threshold (registers per thread for one tile).
constexpr long kMaxTileRegisters = 128;


using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr const char* kFormat = "tilejit autotune";
constexpr int kVersion = 1;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// "CompileError: <what>" — the reason recorded for a skipped candidate.
std::string describe(const std::exception& e) {
  const char* kind = "std::exception";
  if (dynamic_cast<const CompileError*>(&e)) kind = "CompileError";
  else if (dynamic_cast<const InvalidArgument*>(&e)) kind = "InvalidArgument";
  else if (dynamic_cast<const Unsupported*>(&e)) kind = "Unsupported";
  else if (dynamic_cast<const DriverError*>(&e)) kind = "DriverError";
  else if (dynamic_cast<const DeviceUnavailable*>(&e)) kind = "DeviceUnavailable";
  else if (dynamic_cast<const LayoutError*>(&e)) kind = "LayoutError";
  else if (dynamic_cast<const Error*>(&e)) kind = "Error";
  return fmt::format("{}: {}", kind, e.what());
}

std::string first_line(const std::string& s) {
  const auto n = s.find('\n');
  return n == std::string::npos ? s : s.substr(0, n) + " ...";
}

const char* source_name(runtime::KernelCache::Source s) {
  switch (s) {
    case runtime::KernelCache::Source::compiled: return "compiled";
    case runtime::KernelCache::Source::memory: return "memory";
    case runtime::KernelCache::Source::disk: return "disk";
  }
  return "?";
}

double median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (double(v[n / 2 - 1]) + double(v[n / 2]));
}

/// A stored file written by a newer tilejit (a higher "version"): read by neither lookup nor store, and never
/// overwritten.
struct NewerStore : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// The stored file exists but cannot be read now (permissions, EIO, EMFILE): its entries may be fine, so it is
/// neither trusted nor replaced (replacing it lost every other key's winner).
struct UnreadableStore : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The largest stored file read (a few hundred bytes per key): anything larger is not one.
constexpr std::uintmax_t kMaxStoreBytes = std::uintmax_t{64} << 20;

/// The stored file, parsed and checked; nullopt when absent. Entries that are not {"config": string, ...} objects
/// are dropped, each named in `dropped` (the rest of the file stays usable). Throws NewerStore for a newer
/// version's file, std::runtime_error (the reason) when the file exists but is not a valid one: not a regular file
/// (a FIFO would block, /dev/zero never end), larger than kMaxStoreBytes, not JSON, another format.
std::optional<json> read_store(const std::filesystem::path& file, std::vector<std::string>* dropped = nullptr) {
  std::error_code ec;
  const auto st = std::filesystem::status(file, ec);
  if (ec || st.type() == std::filesystem::file_type::not_found) return std::nullopt;
  if (!std::filesystem::is_regular_file(st)) throw std::runtime_error("is not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(file, ec);
  if (ec) throw UnreadableStore(fmt::format("has no readable size ({})", ec.message()));
  if (size > kMaxStoreBytes) throw std::runtime_error(fmt::format("is {} bytes, more than a stored file's {} MiB", size, kMaxStoreBytes >> 20));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UnreadableStore(fmt::format("cannot be opened ({})", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("is not JSON ({})", e.what()));
  }
  if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("version") || !j["version"].is_number_integer())
    throw std::runtime_error(fmt::format("is not a version-{} \"{}\" file", kVersion, kFormat));
  if (j["version"].get<long long>() > kVersion)
    throw NewerStore(fmt::format("was written by a newer tilejit (version {}; this one reads version {})", j["version"].dump(), kVersion));
  if (j["version"] != kVersion) throw std::runtime_error(fmt::format("is not a version-{} \"{}\" file", kVersion, kFormat));
  if (!j.contains("entries") || !j["entries"].is_object()) throw std::runtime_error("has no \"entries\" object");
  json& entries = j["entries"];
  for (auto dev = entries.begin(); dev != entries.end();) {
    if (!dev->is_object()) {
      if (dropped) dropped->push_back(fmt::format("device \"{}\" (not an object)", dev.key()));
      dev = entries.erase(dev);
      continue;
    }
    for (auto e = dev->begin(); e != dev->end();) {
      if (!e->is_object() || !e->contains("config") || !(*e)["config"].is_string()) {
        if (dropped) dropped->push_back(fmt::format("\"{}\" / \"{}\" (no \"config\" string)", dev.key(), e.key()));
        e = dev->erase(e);
      } else {
        ++e;
      }
    }
    ++dev;
  }
  return j;
}

/// Holds an exclusive flock(2) on <file>.lock while alive, so that concurrent tuners (threads or processes, on
/// one machine or sharing a local volume) read, merge and replace the stored file one at a time. Throws
/// std::runtime_error when the lock file cannot be created (the directory is not writable: nothing could be
/// stored anyway).
class StoreLock {
 public:
  explicit StoreLock(const std::filesystem::path& file) {
    std::filesystem::create_directories(file.parent_path());
    auto lock = file;
    lock += ".lock";
    fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error(fmt::format("cannot create the lock file {}: {}", lock.string(), std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw std::runtime_error(fmt::format("cannot lock {}: {}", lock.string(), std::strerror(err)));
    }
  }
  ~StoreLock() { ::close(fd_); }  // closing releases the lock
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace

// ---- Config, TuneKey, reports ---------------------------------------------

long long Config::param(std::string_view name) const {
  auto it = params.find(name);
  if (it == params.end()) throw InvalidArgument(fmt::format("config \"{}\" has no parameter {}", str(), name));
  return it->second;
}

std::string Config::str() const {
  std::string s;
  for (const auto& [k, v] : params) s += fmt::format("{}={} ", k, v);
  return s + fmt::format("num_warps={} num_stages={}", num_warps, num_stages);
}

TuneKey& TuneKey::set(std::string name, Value v) {
  // Names of [A-Za-z0-9_.-]: str() writes "name=value" pairs separated by spaces, and no two keys may print alike
  // ({"a": 1, "b": 2} and {"a=1 b": 2} did).
  if (name.empty() || !std::all_of(name.begin(), name.end(), is_name_char))
    throw InvalidArgument(fmt::format("tune key property name {}: must be [A-Za-z0-9_.-]+ (it is written as name=value)",
                                      json(name).dump(-1, ' ', false, json::error_handler_t::replace)));
  if (const auto* str = std::get_if<std::string>(&v.v)) {
    try {
      (void)json(*str).dump();
    } catch (const json::exception&) {
      throw InvalidArgument(fmt::format("tune key property {}: its string value is not valid UTF-8 (it is stored as JSON)", name));
    }
  }
  kv_.insert_or_assign(std::move(name), std::move(v));
  return *this;
}

long long TuneKey::integer(std::string_view name) const {
  auto it = kv_.find(name);
  if (it == kv_.end()) throw InvalidArgument(fmt::format("tune key {{{}}} has no property {}", str(), name));
  if (auto* p = std::get_if<long long>(&it->second.v)) return *p;
  throw InvalidArgument(fmt::format("tune key property {} is a string, not an integer", name));
}

const std::string& TuneKey::string(std::string_view name) const {
  auto it = kv_.find(name);
  if (it == kv_.end()) throw InvalidArgument(fmt::format("tune key {{{}}} has no property {}", str(), name));
  if (auto* p = std::get_if<std::string>(&it->second.v)) return *p;
  throw InvalidArgument(fmt::format("tune key property {} is an integer, not a string", name));
}

std::string TuneKey::str() const {
  std::string s;
  for (const auto& [k, v] : kv_) {
    if (!s.empty()) s += ' ';
    if (auto* p = std::get_if<long long>(&v.v)) s += fmt::format("{}={}", k, *p);
    else s += k + "=" + json(std::get<std::string>(v.v)).dump();  // quoted and escaped
  }
  return s;
}

std::string to_string(CandidateReport::Status s) {
  switch (s) {
    case CandidateReport::Status::not_run: return "not run";
    case CandidateReport::Status::pruned: return "pruned";
    case CandidateReport::Status::compile_failed: return "compile failed";
    case CandidateReport::Status::launch_failed: return "launch failed";
    case CandidateReport::Status::timed: return "timed";
    case CandidateReport::Status::loaded: return "loaded";
    case CandidateReport::Status::ranked_out: return "ranked out";
  }
  return "?";
}

std::string TuneReport::str() const {
  std::string s = fmt::format("autotune {} on {} for {{{}}}: {}\n", name, device, key,
                              tuned ? "tuned" : from_disk ? "stored winner reused" : "not tuned");
  if (!note.empty()) s += "  note: " + note + "\n";
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const auto& c = candidates[i];
    s += fmt::format("  {} {:<40} {:<14}", c.winner ? '*' : ' ', c.config.str(), to_string(c.status));
    if (c.compile_ms >= 0) s += fmt::format(" build {:8.2f} ms ({})", c.compile_ms, c.jit_source);
    if (c.median_ms >= 0 && c.status == CandidateReport::Status::timed) s += fmt::format("  median {:9.4f} ms x{}", c.median_ms, c.reps);
    else if (c.median_ms >= 0) s += fmt::format("  stored median {:.4f} ms", c.median_ms);
    if (c.rank >= 0 && c.status != CandidateReport::Status::ranked_out) s += fmt::format("  rank {} (score {:.4g})", c.rank + 1, c.score);
    if (!c.reason.empty()) s += "  " + first_line(c.reason);
    s += '\n';
  }
  s += fmt::format("  total {:.2f} ms: lookup {:.2f}, {}compile {:.2f} on {} threads, benchmark {:.2f}, store {:.2f}\n", total_ms,
                   lookup_ms, rank_ms > 0 ? fmt::format("rank {:.2f}, ", rank_ms) : std::string(), compile_ms, threads, bench_ms,
                   store_ms);
  return s;
}

// ---- AutotunerCore --------------------------------------------------------

namespace runtime {

AutotunerCore::AutotunerCore(std::string name, std::vector<std::pair<Config, KernelFactory>> cands, TuneOptions opt)
    : name_(std::move(name)), cands_(std::move(cands)), opt_(std::move(opt)),
      dev_(opt_.device ? *opt_.device : Device::best()) {
  if (name_.empty() || !std::all_of(name_.begin(), name_.end(), is_name_char) || name_[0] == '.')
    throw InvalidArgument(fmt::format("autotuner name \"{}\": must be [A-Za-z0-9_.-]+, not starting with '.' (it names a file)", name_));
  if (name_.size() > kMaxNameChars)  // <name>.json and its temporary (.<name>.json.<pid>.<random>.tmp) must fit NAME_MAX
    throw InvalidArgument(fmt::format("autotuner name of {} characters: at most {} (it names a file)", name_.size(), kMaxNameChars));
  if (cands_.empty()) throw InvalidArgument(fmt::format("autotuner {} has no candidates", name_));
  for (std::size_t i = 0; i < cands_.size(); ++i) {
    if (!cands_[i].second) throw InvalidArgument(fmt::format("autotuner {}: candidate {} has no factory", name_, i));
    for (std::size_t j = 0; j < i; ++j)
      if (cands_[j].first.str() == cands_[i].first.str())
        throw InvalidArgument(fmt::format("autotuner {}: candidates {} and {} have the same config \"{}\"; "
                                          "give each its parameters so the stored winner names one",
                                          name_, j, i, cands_[i].first.str()));
  }
  if (opt_.reps < 1) throw InvalidArgument(fmt::format("TuneOptions::reps = {}: must be >= 1", opt_.reps));
  if (opt_.warmup < 0) throw InvalidArgument(fmt::format("TuneOptions::warmup = {}: must be >= 0", opt_.warmup));
  if (opt_.top_k < 0) throw InvalidArgument(fmt::format("TuneOptions::top_k = {}: must be >= 0 (0 = time every ranked candidate)", opt_.top_k));
  if (!(opt_.budget_ms > 0) || !std::isfinite(opt_.budget_ms))
    throw InvalidArgument(fmt::format("TuneOptions::budget_ms = {}: must be a finite number of milliseconds > 0", opt_.budget_ms));
  if (opt_.cache_dir && opt_.cache_dir->is_relative() && !opt_.cache_dir->empty()) {  // fixed now: a chdir must not move it
    std::error_code ec;
    if (auto abs = std::filesystem::absolute(*opt_.cache_dir, ec); !ec) {
      abs = abs.lexically_normal();
      opt_.cache_dir = abs.has_filename() ? abs : abs.parent_path();
    }
  }
  device_id_ = dev_.backend() == Backend::interpreter
                   ? std::string("CPU interpreter")
                   : fmt::format("{} | {} | driver {}", dev_.name(), dev_.arch(), dev_.driver_version());
}

std::filesystem::path AutotunerCore::file() const {
  std::filesystem::path dir = opt_.cache_dir ? *opt_.cache_dir : KernelCache::global().dir();
  if (dir.empty()) return {};
  return dir / "autotune" / (name_ + ".json");
}

void AutotunerCore::log(const std::string& msg) const {
  const std::string line = fmt::format("tilejit autotune {}: {}", name_, msg);
  if (opt_.log) opt_.log(line);
  else std::fprintf(stderr, "%s\n", line.c_str());
}

const TuneReport& AutotunerCore::tune(const TuneKey& key, const GridFn& grid, std::span<const ArgSlot> args) {
  std::lock_guard lock(mu_);
  return tune_locked(key, grid, args).report;
}

void AutotunerCore::launch(const TuneKey& key, const GridFn& grid, std::span<ArgSlot> args) {
  std::shared_ptr<KernelCore> k;
  const Config* cfg = nullptr;  // cands_ never changes after construction: no copy per launch
  {
    std::lock_guard lock(mu_);
    Tuned& t = tune_locked(key, grid, args);
    k = t.kernel;
    cfg = &cands_[t.index].first;
  }
  k->launch(grid(*cfg), opt_.stream, args);
}

const TuneReport& AutotunerCore::report(const TuneKey& key) const {
  if (const TuneReport* r = find(key)) return *r;
  throw InvalidArgument(fmt::format("autotuner {} has not tuned key {{{}}}", name_, key.str()));
}

const TuneReport* AutotunerCore::find(const TuneKey& key) const {
  std::lock_guard lock(mu_);
  auto it = tuned_.find(key.str());
  return it == tuned_.end() ? nullptr : &it->second.report;
}

AutotunerCore::Tuned& AutotunerCore::tune_locked(const TuneKey& key, const GridFn& grid, std::span<const ArgSlot> args) {
  const std::string ks = key.str();
  if (auto it = tuned_.find(ks); it != tuned_.end()) return it->second;
  const auto t0 = Clock::now();
  const std::size_t n = cands_.size();
  TuneReport rep;
  rep.name = name_;
  rep.device = device_id_;
  rep.key = ks;
  rep.file = file();
  rep.candidates.resize(n);
  for (std::size_t i = 0; i < n; ++i) rep.candidates[i].config = cands_[i].first;
  std::vector<std::shared_ptr<KernelCore>> kernels(n);
  // Per candidate: the InvalidArgument of its argument checks (KernelCore::check_arguments). Those depend on the
  // arguments and the family's shared signature, not on the config: every candidate hits the same one, so it
  // propagates as itself rather than as an AutotuneError of "failed" configs.
  std::vector<std::exception_ptr> arg_errors(n);
  auto rethrow_argument_error = [&] {
    for (const auto& e : arg_errors)
      if (e) std::rethrow_exception(e);
  };

  // Trace candidate i (factory; the register-pressure prune; the argument checks): kernels[i] is set, or its
  // status and reason are. Never throws.
  auto make = [&](std::size_t i) {
    CandidateReport& c = rep.candidates[i];
    const auto tb = Clock::now();
    try {
      auto k = cands_[i].second(dev_, cands_[i].first);
      if (!k) throw InvalidArgument("the candidate's factory returned no kernel");
      // Register pressure: a tile whose elements give a thread more than
      // kMaxTileRegisters registers cannot stay in the 255-register budget next
      // to the kernel's other live values; such a config spills and its
      // (straight-line) code is also the slowest to compile. Pruned, not built.
      if (dev_.backend() != Backend::interpreter) {
        const long threads = static_cast<long>(k->options().num_warps) * dev_.warp_size();
        long worst = 0;
        for (const auto& node : k->ir().nodes)
          if (node.type.rank > 0) worst = std::max<long>(worst, (node.type.numel() + threads - 1) / threads);
        if (worst > kMaxTileRegisters) {
          c.status = CandidateReport::Status::pruned;
          c.reason = fmt::format("a tile gives each of its {} threads {} registers (more than {}): it would spill", threads,
                                 worst, kMaxTileRegisters);
          log(fmt::format("pruned {}: {}", c.config.str(), c.reason));
          c.compile_ms = ms_since(tb);
          return;
        }
      }
      try {
        k->check_arguments(args);
      } catch (const InvalidArgument&) {
        arg_errors[i] = std::current_exception();
        throw;
      }
      kernels[i] = std::move(k);
    } catch (const std::exception& e) {
      c.status = CandidateReport::Status::compile_failed;
      c.reason = describe(e);
    } catch (...) {  // a factory may throw anything; this runs on parallel_for's threads, which must not throw
      c.status = CandidateReport::Status::compile_failed;
      c.reason = "the candidate's factory threw an exception that is not a std::exception";
    }
    c.compile_ms = ms_since(tb);
  };
  // Compile a traced candidate: prepare (codegen, JIT, load). Never throws.
  auto jit = [&](std::size_t i) {
    if (!kernels[i]) return;
    CandidateReport& c = rep.candidates[i];
    const auto tb = Clock::now();
    try {
      const JitInfo ji = kernels[i]->prepare(args);
      c.jit_ms = ji.compile_ms;
      c.jit_source = dev_.backend() == Backend::interpreter ? "none" : source_name(ji.source);
    } catch (const std::exception& e) {
      c.status = CandidateReport::Status::compile_failed;
      c.reason = describe(e);
      kernels[i].reset();
    } catch (...) {
      c.status = CandidateReport::Status::compile_failed;
      c.reason = "compiling the candidate threw an exception that is not a std::exception";
      kernels[i].reset();
    }
    c.compile_ms = std::max(c.compile_ms, 0.0) + ms_since(tb);
  };
  auto build = [&](std::size_t i) {
    make(i);
    jit(i);
  };
  // Run fn over `idx` on TuneOptions::threads threads (default: all cores); returns the threads used.
  auto in_parallel = [&](const std::vector<std::size_t>& idx, const std::function<void(std::size_t)>& fn) {
    return detail::parallel_for(idx.size(), opt_.threads, [&](std::size_t j) { fn(idx[j]); });
  };

  // 1. The stored winner for (device, key), if any.
  if (!rep.file.empty()) {
    try {
      std::vector<std::string> dropped;
      if (auto j = read_store(rep.file, &dropped)) {
        if (!dropped.empty())
          rep.note = fmt::format("{}: ignoring {} entr{} that {} not valid ({}); the others are kept", rep.file.string(), dropped.size(),
                                 dropped.size() == 1 ? "y" : "ies", dropped.size() == 1 ? "is" : "are", fmt::join(dropped, ", "));
        const json& entries = (*j)["entries"];
        if (entries.contains(device_id_) && entries[device_id_].contains(ks)) {
          const std::string stored = entries[device_id_][ks]["config"].get<std::string>();
          std::size_t i = 0;
          while (i < n && cands_[i].first.str() != stored) ++i;
          if (i == n) {
            rep.note = fmt::format("stored winner \"{}\" is not among the candidates: re-tuning", stored);
          } else {
            build(i);
            if (kernels[i]) {
              rep.candidates[i].status = CandidateReport::Status::loaded;
              rep.candidates[i].winner = true;
              if (entries[device_id_][ks].contains("median_ms") && entries[device_id_][ks]["median_ms"].is_number())
                rep.candidates[i].median_ms = entries[device_id_][ks]["median_ms"].get<double>();
              rep.from_disk = true;
              rep.best = i;
              rep.lookup_ms = rep.total_ms = ms_since(t0);
              return tuned_.emplace(ks, Tuned{i, std::move(kernels[i]), std::move(rep)}).first->second;
            }
            rep.note = fmt::format("stored winner \"{}\" no longer builds ({}): re-tuning", stored, first_line(rep.candidates[i].reason));
            rep.candidates[i] = CandidateReport{};
            rep.candidates[i].config = cands_[i].first;
          }
        }
      }
    } catch (const NewerStore& e) {
      rep.note = fmt::format("ignoring {}: it {}; re-tuning, and leaving it as it is", rep.file.string(), e.what());
    } catch (const UnreadableStore& e) {
      rep.note = fmt::format("ignoring {}: it {}; re-tuning, and leaving it as it is", rep.file.string(), e.what());
    } catch (const std::exception& e) {
      rep.note = fmt::format("ignoring {}: it {}; re-tuning and rewriting it", rep.file.string(), e.what());
    }
    rethrow_argument_error();  // the stored winner failed on the arguments, not its config: re-tuning would too
    if (!rep.note.empty()) log(rep.note);
  }
  rep.lookup_ms = ms_since(t0);

  // 2. Pruning.
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < n; ++i) {
    CandidateReport& c = rep.candidates[i];
    for (const auto& p : opt_.prune) {
      if (!p) continue;
      try {
        c.reason = p(c.config, key, dev_);
      } catch (const std::exception& e) {
        c.reason = "the prune predicate threw " + describe(e);
      }
      if (!c.reason.empty()) break;
    }
    if (!c.reason.empty()) {
      c.status = CandidateReport::Status::pruned;
      log(fmt::format("pruned {}: {}", c.config.str(), c.reason));
    } else {
      todo.push_back(i);
    }
  }

  // 3b. Ranking: trace every survivor, score them, keep the order (and with top_k only the first batch).
  std::vector<std::vector<std::size_t>> batches;  // compiled and timed in turn until one yields a timed candidate
  std::size_t ranked_count = 0;
  if (opt_.rank && !todo.empty()) {
    const auto tr = Clock::now();
    rep.threads = in_parallel(todo, make);
    std::vector<std::size_t> traced;
    std::vector<RankInput> inputs;
    for (std::size_t i : todo) {
      if (!kernels[i]) continue;
      try {
        inputs.push_back(RankInput{rep.candidates[i].config, *kernels[i], grid(rep.candidates[i].config)});
        traced.push_back(i);
      } catch (const std::exception& e) {
        rep.candidates[i].status = CandidateReport::Status::launch_failed;
        rep.candidates[i].reason = "the grid function threw " + describe(e);
        kernels[i].reset();
      }
    }
    std::vector<double> scores;
    bool rank_failed = false;
    try {
      if (!traced.empty()) scores = opt_.rank(key, inputs, args);
      if (scores.size() != traced.size())
        throw std::runtime_error(fmt::format("it returned {} scores for {} candidates", scores.size(), traced.size()));
    } catch (const std::exception& e) {
      log(fmt::format("the rank function failed ({}): timing every candidate", describe(e)));
      rank_failed = true;
    } catch (...) {
      log("the rank function failed (it threw something that is not a std::exception): timing every candidate");
      rank_failed = true;
    }
    if (rank_failed) scores.assign(traced.size(), std::numeric_limits<double>::quiet_NaN());
    std::vector<std::size_t> order(traced.size());
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      const bool na = std::isnan(scores[a]), nb = std::isnan(scores[b]);
      if (na != nb) return nb;
      return !na && scores[a] > scores[b];
    });
    std::vector<std::size_t> ranked;
    for (std::size_t j = 0; j < order.size(); ++j) {
      const std::size_t i = traced[order[j]];
      rep.candidates[i].score = scores[order[j]];
      rep.candidates[i].rank = rank_failed ? -1 : static_cast<int>(j);
      ranked.push_back(i);
    }
    // Scores that are all NaN order nothing (a Recorder's): every candidate is timed, as without a rank function.
    const bool informative = std::any_of(scores.begin(), scores.end(), [](double x) { return !std::isnan(x); });
    const std::size_t k = opt_.top_k > 0 && informative ? std::min(static_cast<std::size_t>(opt_.top_k), ranked.size()) : ranked.size();
    std::vector<std::size_t> first(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(k));
    std::vector<std::size_t> rest(ranked.begin() + static_cast<std::ptrdiff_t>(k), ranked.end());
    auto pot = [&](std::size_t i) {
      return std::all_of(rep.candidates[i].config.params.begin(), rep.candidates[i].config.params.end(),
                         [](const auto& kv) { return kv.second > 0 && (kv.second & (kv.second - 1)) == 0; });
    };
    if (!std::any_of(first.begin(), first.end(), pot)) {
      // Power-of-two variants stay in the race beside NPOT ones: the best-scored one joins the first batch.
      if (auto it = std::find_if(rest.begin(), rest.end(), pot); it != rest.end()) {
        first.push_back(*it);
        rest.erase(it);
      }
    }
    if (!first.empty()) batches.push_back(std::move(first));
    for (std::size_t at = 0; at < rest.size() && k > 0; at += k)
      batches.emplace_back(rest.begin() + static_cast<std::ptrdiff_t>(at),
                           rest.begin() + static_cast<std::ptrdiff_t>(std::min(rest.size(), at + k)));
    ranked_count = ranked.size();
    if (ranked.empty()) rethrow_argument_error();
    rep.rank_ms = ms_since(tr);
  } else if (!todo.empty()) {
    batches.push_back(todo);
  }

  // 3-4. Per batch: compile every candidate of it before timing anything, on all cores; then benchmark them one at a
  // time. Stop after the first batch that times a candidate.
  double bench_ms = 0, compile_ms = 0;
  std::vector<ArgSlot> slots(args.begin(), args.end());
  void* flush = nullptr;
  bool flush_tried = false;
  std::size_t done_batches = 0;
  for (const auto& batch : batches) {
    ++done_batches;
    const auto tc = Clock::now();
    const unsigned used = in_parallel(batch, opt_.rank ? std::function<void(std::size_t)>(jit) : std::function<void(std::size_t)>(build));
    rep.threads = std::max(rep.threads, used);
    compile_ms += ms_since(tc);
    if (!opt_.rank && std::none_of(kernels.begin(), kernels.end(), [](const auto& k) { return k != nullptr; })) rethrow_argument_error();
    for (std::size_t i : batch)
      if (!kernels[i]) log(fmt::format("skipped {}: {}", rep.candidates[i].config.str(), rep.candidates[i].reason));

    const auto tt = Clock::now();
    if (!flush_tried) {
      flush_tried = true;
      if (dev_.backend() != Backend::interpreter && opt_.flush_bytes > 0) {
        try {
          flush = dev_.alloc(opt_.flush_bytes);
        } catch (const std::exception& e) {
          log(fmt::format("no L2 flush buffer ({}): timing without flushes", describe(e)));
        }
      }
    }
    // Timing round-robin: every candidate's first launch (launch errors and faults surface here) and warm-up, then
    // rep r of each candidate in turn, each after an L2 flush. A GPU's clocks drift under sustained load (on the
    // H200 a race of 16 GEMMs measured its later configs 5-15% slower than a race of 3; docs/perf.md v0.33):
    // interleaved, every candidate sees the same drift instead of the last ones all of it.
    struct Run {
      std::size_t i;
      Grid g;
      int reps;
      std::vector<float> t;
    };
    std::vector<Run> runs;
    auto fail = [&](std::size_t i, const std::exception& e) {
      CandidateReport& c = rep.candidates[i];
      c.status = CandidateReport::Status::launch_failed;
      c.reason = describe(e);
      kernels[i].reset();
      log(fmt::format("skipped {}: {}", c.config.str(), c.reason));
    };
    for (std::size_t i : batch) {
      if (!kernels[i]) continue;
      try {
        const Grid g = grid(rep.candidates[i].config);
        KernelCore& k = *kernels[i];
        auto run = [&] { k.launch(g, opt_.stream, slots); };
        const float first = dev_.time_ms(opt_.stream, run);
        // (in double first: a huge budget over a short launch must not overflow the int)
        const int fit = first > 0 ? static_cast<int>(std::min<double>(opt_.budget_ms / first, std::max(opt_.reps, opt_.warmup))) : opt_.reps;
        const int warm = std::clamp(fit, 0, opt_.warmup);
        for (int w = 0; w < warm; ++w) run();
        runs.push_back(Run{i, g, std::clamp(fit, 1, opt_.reps), {}});
      } catch (const std::exception& e) {
        fail(i, e);
      }
    }
    int most = 0;
    for (const auto& r : runs) most = std::max(most, r.reps);
    for (int r = 0; r < most; ++r) {
      for (auto& x : runs) {
        if (r >= x.reps || !kernels[x.i]) continue;
        try {
          if (flush) dev_.memset(flush, r & 0xff, opt_.flush_bytes);
          KernelCore& k = *kernels[x.i];
          x.t.push_back(dev_.time_ms(opt_.stream, [&] { k.launch(x.g, opt_.stream, slots); }));
        } catch (const std::exception& e) {
          fail(x.i, e);
        }
      }
    }
    bool any = false;
    for (auto& x : runs) {
      if (!kernels[x.i]) continue;
      CandidateReport& c = rep.candidates[x.i];
      c.reps = static_cast<int>(x.t.size());
      c.median_ms = median(std::move(x.t));
      c.status = CandidateReport::Status::timed;
      any = true;
    }
    bench_ms += ms_since(tt);
    if (any) break;
  }
  // What no batch reached: ranked out.
  std::size_t compiled_count = 0;
  for (std::size_t b = 0; b < done_batches; ++b) compiled_count += batches[b].size();
  for (std::size_t b = done_batches; b < batches.size(); ++b)
    for (std::size_t i : batches[b]) {
      CandidateReport& c = rep.candidates[i];
      c.status = CandidateReport::Status::ranked_out;
      c.reason = fmt::format("ranked {} of {} by the rank function (score {:.4g}): only the first {} were compiled", c.rank + 1,
                             ranked_count, c.score, compiled_count);
      kernels[i].reset();
    }
  if (flush) {
    try {
      dev_.synchronize();
      dev_.free(flush);
    } catch (const std::exception& e) {
      log(fmt::format("freeing the L2 flush buffer: {}", describe(e)));
    }
  }
  rep.compile_ms = compile_ms;
  rep.bench_ms = bench_ms;
  rep.tuned = true;

  // 5. The winner.
  std::size_t best = n;
  for (std::size_t i = 0; i < n; ++i)
    if (rep.candidates[i].status == CandidateReport::Status::timed &&
        (best == n || rep.candidates[i].median_ms < rep.candidates[best].median_ms))
      best = i;
  if (best == n) {
    rep.total_ms = ms_since(t0);
    std::string msg = fmt::format("autotune {} for {{{}}} on {}: all {} candidates failed or were pruned:", name_, ks, device_id_, n);
    for (const auto& c : rep.candidates)
      msg += fmt::format("\n  {}: {}: {}", c.config.str(), to_string(c.status), first_line(c.reason));
    throw AutotuneError(std::move(msg), std::move(rep));
  }
  rep.best = best;
  rep.candidates[best].winner = true;

  // 6. Store it: re-read (another process may have added keys), merge, rename into place.
  const auto ts = Clock::now();
  if (!rep.file.empty()) {
    try {
      const StoreLock lock(rep.file);  // read, merge and replace as one step against other tuners
      json j;
      try {
        if (auto old = read_store(rep.file)) j = std::move(*old);  // (entries that are not valid are dropped)
      } catch (const NewerStore&) {
        throw;  // not ours to overwrite
      } catch (const UnreadableStore&) {
        throw;  // its entries may be fine: not overwritten with this key alone
      } catch (const std::exception&) {
        // not a valid file: replaced by a fresh one (already noted above)
      }
      if (j.is_null()) j = json{{"format", kFormat}, {"version", kVersion}, {"name", name_}, {"entries", json::object()}};
      const auto& c = rep.candidates[best];
      json params = json::object();
      for (const auto& [pk, pv] : c.config.params) params[pk] = pv;
      std::size_t timed = 0;
      for (const auto& x : rep.candidates) timed += x.status == CandidateReport::Status::timed;
      j["entries"][device_id_][ks] = json{{"config", c.config.str()},
                                          {"params", params},
                                          {"num_warps", c.config.num_warps},
                                          {"num_stages", c.config.num_stages},
                                          {"median_ms", c.median_ms},
                                          {"candidates", n},
                                          {"timed", timed},
                                          {"unix_time", static_cast<long long>(std::time(nullptr))}};
      if (const std::string err = detail::write_file_atomically(rep.file, j.dump(2) + "\n"); !err.empty())
        throw std::runtime_error(err);
    } catch (const std::exception& e) {
      log(fmt::format("could not store the result in {}: {}", rep.file.string(), e.what()));
    }
  }
  rep.store_ms = ms_since(ts);
  rep.total_ms = ms_since(t0);
  for (std::size_t i = 0; i < n; ++i)
    if (i != best) kernels[i].reset();
  return tuned_.emplace(ks, Tuned{best, std::move(kernels[best]), std::move(rep)}).first->second;
}

}  // namespace runtime
}  // namespace tilejit
