// Sessions, the per-thread hot path (scopes, metrics, launches), phases and
// the background writer. Lock order: see state.hpp.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>
#include <fmt/core.h>

#include "device_events.hpp"
#include "io.hpp"
#include "state.hpp"
#include "writers.hpp"

namespace tilejit::profiler {
namespace detail {

std::atomic<int> g_hook_sessions{0};
BackendFactory cupti_backend_factory();  // cupti_backend.cpp: the built-in "cupti" backend
void load_env_plugins();                 // plugin.cpp: TILEJIT_PROFILER_PLUGINS, once

namespace {

std::atomic<std::uint64_t> g_epoch{1};
std::atomic<std::uint32_t> g_thread_counter{0};

struct Registry {
  std::mutex mu;
  std::map<SessionId, std::shared_ptr<Session>> sessions;  // finalized ones stay as tombstones
  SessionId next = 0;
  std::mutex backends_mu;
  std::map<std::string, BackendFactory> backends{{"cupti", cupti_backend_factory()}};
};
Registry& reg() {
  static auto* r = new Registry;  // never destroyed: threads may outlive static destruction
  return *r;
}

template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  fmt::print(stderr, "[tilejit.profiler] {}\n", fmt::format(f, std::forward<A>(a)...));
}

/// Called with reg().mu held after any change of the set of active sessions.
void bump_locked() {
  int hooks = 0;
  for (auto& [id, s] : reg().sessions)
    if (s->hook && s->active.load() && !s->finalized.load()) ++hooks;
  g_hook_sessions.store(hooks, std::memory_order_relaxed);
  g_epoch.fetch_add(1, std::memory_order_acq_rel);
}

std::shared_ptr<Session> find(SessionId id, const char* what) {
  std::lock_guard g(reg().mu);
  auto it = reg().sessions.find(id);
  if (it == reg().sessions.end())
    throw InvalidArgument(fmt::format("profiler::{}: no session with id {}", what, id));
  return it->second;
}

// ---- the calling thread ----------------------------------------------------

struct Frame {
  NameId name;
  std::uint64_t start;  // 0 when no trace session was active at entry
};

struct ThreadState {
  std::uint32_t index = g_thread_counter.fetch_add(1) + 1;  // lane; 0 is the backend lane
  std::uint64_t epoch = 0;
  std::vector<Frame> stack;
  std::vector<std::shared_ptr<Local>> known;  // every live session, active or not
  std::vector<Local*> active;
  bool need_time = false;  // an active session records trace events
  // The open LaunchScope (any session with the hook): a graph node captured
  // inside it takes the op's name and metrics as part of its capture site.
  bool op_open = false;
  NameId op_name = 0;
  MetricSlot op_slots[2];
  int op_n = 0;
  // Made after this thread's thread_local destructors began (a Scope in one of them): never destroyed, so its
  // Locals are marked gone when made.
  bool posthumous = false;
  ~ThreadState() {
    for (auto& l : known) l->thread_gone.store(true);
  }
};

// The thread's state lives on the heap behind a trivially destructible pointer, deleted by a thread_local reaper at
// thread exit. A Scope in another thread_local's destructor that runs after the reaper then gets a fresh state
// instead of a destroyed one (a thread_local ThreadState was used after its destructor: SIGSEGV).
thread_local ThreadState* t_state = nullptr;
thread_local bool t_reaped = false;
struct Reaper {
  ~Reaper() {
    ThreadState* p = t_state;
    t_state = nullptr;
    t_reaped = true;
    delete p;
  }
};
thread_local Reaper t_reaper;

ThreadState& tls() {
  if (t_state) return *t_state;
  t_state = new ThreadState;
  if (t_reaped) t_state->posthumous = true;
  else (void)&t_reaper;  // its first use in this thread: destroyed at the thread's exit
  return *t_state;
}

void refresh(ThreadState& ts) {
  std::lock_guard g(reg().mu);
  ts.epoch = g_epoch.load(std::memory_order_acquire);
  std::erase_if(ts.known, [](const std::shared_ptr<Local>& l) { return l->closed.load(); });
  for (auto& [id, s] : reg().sessions) {
    if (s->finalized.load()) continue;
    bool have = std::any_of(ts.known.begin(), ts.known.end(),
                            [&](const std::shared_ptr<Local>& l) { return l->session == s.get(); });
    if (have) continue;
    auto l = std::make_shared<Local>();
    l->session = s.get();
    l->data.thread = ts.index;
    if (ts.posthumous) l->thread_gone.store(true);
    {
      std::lock_guard lg(s->locals_mu);
      s->locals.push_back(l);
    }
    ts.known.push_back(std::move(l));
  }
  ts.active.clear();
  ts.need_time = false;
  for (auto& l : ts.known)
    if (l->session->active.load()) {
      ts.active.push_back(l.get());
      ts.need_time |= l->session->trace;
    }
}

inline ThreadState& current() {
  ThreadState& ts = tls();
  if (ts.epoch != g_epoch.load(std::memory_order_acquire)) refresh(ts);
  return ts;
}

/// Scopes nested deeper than this are recorded in their kMaxScopeDepth-th enclosing scope: the writers and the
/// viewer walk the tree recursively, and a scope entered in a loop without its exit (50,000 deep) overflowed the
/// stack of both. Said once per process on stderr.
constexpr std::size_t kMaxScopeDepth = 4096;

/// Give every frame of the thread's stack a node in `l` (held); past kMaxScopeDepth, the deepest node again.
void sync_path(Local& l, const ThreadState& ts) {
  const bool trace = l.session->trace;
  while (l.path.size() < ts.stack.size()) {
    const Frame& f = ts.stack[l.path.size()];
    std::uint32_t parent = l.path.empty() ? 0 : l.path.back();
    if (l.path.size() >= kMaxScopeDepth) {
      static std::atomic<bool> said{false};
      if (!said.exchange(true))
        std::fprintf(stderr, "[tilejit.profiler] scopes nested more than %zu deep (an exit_scope missing in a loop?): "
                             "deeper ones are recorded in their %zu-th enclosing scope\n", kMaxScopeDepth, kMaxScopeDepth);
      l.path.push_back(parent);
    } else {
      l.path.push_back(l.data.tree.child(parent, f.name));
    }
    if (trace) {
      std::uint64_t start = f.start != 0 ? f.start : now_ns();
      l.path_start.push_back(std::max(start, l.session->start_mono));
      l.path_metrics.emplace_back();
    }
  }
}

inline std::uint32_t top(const Local& l) { return l.path.empty() ? 0 : l.path.back(); }

void enter(NameId name) noexcept {
  ThreadState& ts = current();
  ts.stack.push_back({name, ts.need_time ? now_ns() : 0});
  for (Local* l : ts.active) {
    std::lock_guard g(l->lock);
    sync_path(*l, ts);
  }
}

/// Close frames until the stack has `depth` entries.
void exit_to(std::size_t depth) noexcept {
  ThreadState& ts = current();
  if (ts.stack.size() <= depth) return;
  const std::uint64_t t = ts.need_time ? now_ns() : 0;
  ts.stack.resize(depth);
  for (auto& lp : ts.known) {
    Local& l = *lp;
    std::lock_guard g(l.lock);
    if (l.path.size() <= depth) continue;
    if (l.session->trace) {
      if (l.session->active.load(std::memory_order_relaxed)) {
        const std::uint64_t end = t != 0 ? t : now_ns();
        for (std::size_t i = l.path.size(); i-- > depth;)
          l.data.scopes.push_back(
              {l.path[i], EventCat::scope, l.path_start[i], end, std::move(l.path_metrics[i]), {}});
      }
      l.path_start.resize(depth);
      l.path_metrics.resize(depth);
    }
    l.path.resize(depth);
  }
}

MetricSlot slot_of(const Metric& m) {
  std::uint32_t id = metric_id(m.name, m.type(), m.kind);
  return m.type() == MetricType::int64
             ? MetricSlot::of_int(id, m.kind, std::get<std::int64_t>(m.value))
             : MetricSlot::of_double(id, m.kind, std::get<double>(m.value));
}

void add_slots(const MetricSlot* slots, std::size_t n) {
  ThreadState& ts = current();
  for (Local* l : ts.active) {
    std::lock_guard g(l->lock);
    sync_path(*l, ts);
    auto& node = l->data.tree.nodes[top(*l)].metrics;
    for (std::size_t i = 0; i < n; ++i) add_slot(node, slots[i]);
    if (l->session->trace && !l->path.empty())
      for (std::size_t i = 0; i < n; ++i) add_slot(l->path_metrics.back(), slots[i]);
  }
}

// ---- phases ------------------------------------------------------------------

/// Move the open phase out of every Local (state_mu held). Open scopes, an
/// open launch op and launches waiting for their kernel keep their paths in
/// the fresh trees — except, when `late` (periodic flushing), ordinary
/// launches, whose records will be added to the closed phase itself until it
/// is sealed (see PhaseData).
std::shared_ptr<PhaseData> collect(Session& s, bool late = false) {
  auto pd = std::make_shared<PhaseData>();
  pd->phase = s.phase;
  std::lock_guard g(s.locals_mu);
  pd->devices = s.devices;
  std::vector<Local*> late_locals;  // whose launches now point into pd
  auto take = [&](Local& l) {
    std::lock_guard lg(l.lock);
    ThreadPhase old = std::move(l.data);
    l.data = ThreadPhase{};
    l.data.thread = old.thread;
    Tree& t = l.data.tree;
    // As sync_path built them: frames past kMaxScopeDepth share the deepest node (a child per frame here made every
    // phase after the first as deep as the leak, and a writer's recursion overflowed the stack).
    for (std::size_t i = 0; i < l.path.size(); ++i)
      l.path[i] = i >= kMaxScopeDepth ? l.path[i - 1] : t.child(i == 0 ? 0 : l.path[i - 1], old.tree.nodes[l.path[i]].name);
    if (std::uint32_t op = l.op_node.load(std::memory_order_relaxed); op != kNoNode) {
      const std::uint32_t moved_op = t.copy_path(old.tree, op);
      // Fails when the launch has just ended (launch_exit clears it unlocked): it stays closed.
      l.op_node.compare_exchange_strong(op, moved_op, std::memory_order_relaxed);
    }
    std::unordered_map<std::uint32_t, std::uint32_t> moved;
    bool stays = false;  // a launch of this phase keeps pointing into `old`
    l.pending.erase_if([&](std::uint64_t, PendingLaunch& p) {
      // Launched in an earlier closed phase the writer has not sealed: it waits
      // for the writer's backend flush, however many phases close meanwhile
      // (phases of 100 tiny launches close every 0.5 ms, faster than a GPU's
      // records come back). It ages once the seal has moved it on.
      if (p.closed) return false;
      if (++p.age > 2) return true;  // its record never came: stop waiting
      if (late && !p.graph) {
        p.closed = pd.get();  // part index set below, once parts are sorted
        ++pd->outstanding;
        stays = true;
        return false;
      }
      auto [m, fresh] = moved.try_emplace(p.node, 0);
      if (fresh) m->second = t.copy_path(old.tree, p.node);
      p.node = m->second;
      return false;
    });
    if (stays) late_locals.push_back(&l);
    if (!old.empty() || stays) pd->parts.push_back(std::move(old));
  };
  for (auto& l : s.locals) take(*l);
  take(*s.detached);
  // A thread that exited leaves its Local behind until nothing of it is left — including what it recorded after
  // take() above and before it exited (dropping that lost metrics when threads ended during advance_phase).
  std::erase_if(s.locals, [](const std::shared_ptr<Local>& l) {
    std::lock_guard lg(l->lock);
    return l->thread_gone.load() && l->data.empty() && l->path.empty() && l->pending.empty() &&
           l->op_node.load(std::memory_order_relaxed) == kNoNode;
  });
  std::sort(pd->parts.begin(), pd->parts.end(),
            [](const ThreadPhase& a, const ThreadPhase& b) { return a.thread < b.thread; });
  for (Local* l : late_locals) {  // threads are unique per session: find each one's part
    auto part = std::lower_bound(pd->parts.begin(), pd->parts.end(), l->data.thread,
                                 [](const ThreadPhase& p, std::uint32_t th) { return p.thread < th; });
    std::lock_guard lg(l->lock);
    l->pending.for_each([&](std::uint64_t, PendingLaunch& p) {
      if (p.closed == pd.get()) p.part = static_cast<std::uint32_t>(part - pd->parts.begin());
    });
  }
  pd->sealed = pd->outstanding == 0;
  return pd;
}

/// No more records into `pd` (idempotent; any thread; not under locals_mu):
/// launches of it still pending move to the open phase, under the same path.
void seal(Session& s, PhaseData& pd) {
  std::lock_guard g(s.locals_mu);
  {
    std::lock_guard lm(pd.late_mu);
    if (pd.sealed) return;
    pd.sealed = true;
    pd.outstanding = 0;
  }
  for (auto& lp : s.locals) {
    Local& l = *lp;
    std::lock_guard lg(l.lock);
    l.pending.for_each([&](std::uint64_t, PendingLaunch& p) {
      if (p.closed == &pd) {
        p.node = l.data.tree.copy_path(pd.parts[p.part].tree, p.node);
        p.closed = nullptr;
        p.age = 0;  // from now on it ages with the phases, as any launch
      }
    });
  }
}

/// A copy of the open phase (state_mu held).
std::shared_ptr<PhaseData> snapshot(Session& s) {
  auto pd = std::make_shared<PhaseData>();
  pd->phase = s.phase;
  std::lock_guard g(s.locals_mu);
  pd->devices = s.devices;
  auto copy = [&](Local& l) {
    std::lock_guard lg(l.lock);
    if (!l.data.empty()) pd->parts.push_back(l.data);
  };
  for (auto& l : s.locals) copy(*l);
  copy(*s.detached);
  std::sort(pd->parts.begin(), pd->parts.end(),
            [](const ThreadPhase& a, const ThreadPhase& b) { return a.thread < b.thread; });
  return pd;
}

std::string part_file(const Session& s, std::size_t phase) {
  return fmt::format("{}.part_{}.{}", s.name, phase, s.ext);
}
std::string final_file(const Session& s) { return fmt::format("{}.{}", s.name, s.ext); }

struct PhaseWrite {
  WriteResult result;
  double serialise_ms = 0, write_ms = 0;
  std::size_t bytes = 0;
};

PhaseWrite write_phase(const Session& s, const PhaseData& pd, const std::string& path) {
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  PhaseWrite w;
  auto t0 = clock::now();
  std::string bytes;
  try {
    bytes = encode(to_json(pd, s), s.format);
  } catch (const std::exception& e) {
    w.result = {EINVAL, std::string("cannot serialise: ") + e.what()};
    return w;
  }
  auto t1 = clock::now();
  w.result = write_atomic(path, bytes, s.options.fsync);
  auto t2 = clock::now();
  w.serialise_ms = ms(t1 - t0);
  w.write_ms = ms(t2 - t1);
  w.bytes = bytes.size();
  return w;
}

/// Record a failed write (state_mu held): one entry per phase and file, holding its latest failure (a path that
/// stays unwritable is retried at every advance_phase; its entries must not grow with the retries). Printed once per
/// session.
void record_error(Session& s, std::size_t phase, const std::string& path, const WriteResult& r) {
  auto it = std::find_if(s.errors.begin(), s.errors.end(), [&](const FlushError& e) { return e.phase == phase && e.path == path; });
  if (it != s.errors.end()) {
    it->message = r.message;
    it->error_code = r.error;
  } else {
    s.errors.push_back({phase, path, r.message, r.error});
  }
  if (!s.printed_error) {
    s.printed_error = true;
    if (s.finalizing.load())
      warn("session '{}': phase {} not written to {}: {}. finalize drops it (FinalizeReport::errors)", s.name, phase, path,
           r.message);
    else
      warn("session '{}': phase {} not written to {}: {}. The phase stays in memory; the oldest such phase is retried "
           "at each advance_phase (the others once it is written) and all at finalize; later failures are only kept "
           "(profiler::flush_errors)",
           s.name, phase, path, r.message);
  }
}

void print_timing(const Session& s, std::size_t phase, const PhaseWrite& w, double clear_ms) {
  fmt::print(stderr,
             "[tilejit.profiler] flush '{}' phase {}: serialise {:.3f} ms, write {:.3f} ms "
             "({} bytes{}), clear {:.3f} ms\n",
             s.name, phase, w.serialise_ms, w.write_ms, w.bytes,
             w.result.error ? ", FAILED" : "", clear_ms);
}

/// The writer: takes every phase queued so far as one batch — one backend
/// flush (the records of all of them), one round of fsyncs — so that its
/// cost per phase falls as phases come faster, and advance_phase only waits
/// for it when max_pending_phases are queued behind a batch.
void worker_main(Session* s) {
  std::unique_lock lk(s->state_mu);
  for (;;) {
    s->cv.wait(lk, [&] { return !s->queue.empty() || s->stop_worker; });
    if (s->queue.empty()) return;  // asked to stop, nothing left
    struct Item {
      std::size_t phase;
      std::shared_ptr<PhaseData> pd;
      bool waiting;  // launches of it still wait for their records: flush, then seal
      bool retry;    // its write failed before
      double serialise_ms = 0;
      std::string bytes;
      bool encoded = false;
      WriteResult error;
    };
    std::vector<Item> batch;
    bool flush = false;
    while (!s->queue.empty()) {
      const std::size_t n = s->queue.front();
      s->queue.pop_front();
      auto it = s->closed.find(n);
      if (it == s->closed.end()) continue;  // cleared meanwhile
      bool waiting;
      {
        std::lock_guard lm(it->second->late_mu);
        waiting = !it->second->sealed;
      }
      // One backend flush serves every phase closed before it began.
      flush |= waiting && s->kernel_records && n >= s->flushed_below;
      batch.push_back({n, it->second, waiting, s->failed.count(n) != 0});
      s->writing.push_back(n);
    }
    s->cv.notify_all();  // the queue is empty: advance_phase need not wait for this batch
    if (batch.empty()) continue;
    ++s->writer_batches;
    const std::size_t open_at_flush = s->phase;
    lk.unlock();
    if (flush) {
      try {
        s->backend->flush();  // on this thread: the caller of advance_phase does not wait for it
      } catch (...) {
      }
    }
    using clock = std::chrono::steady_clock;
    std::vector<BatchFile> files;
    files.reserve(batch.size());
    for (Item& b : batch) {
      if (b.waiting) seal(*s, *b.pd);
      const auto t0 = clock::now();
      try {
        b.bytes = encode(to_json(*b.pd, *s), s->format);
        b.encoded = true;
      } catch (const std::exception& e) {
        b.error = {EINVAL, std::string("cannot serialise: ") + e.what()};
      }
      b.serialise_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      if (b.encoded) files.push_back({part_file(*s, b.phase), b.bytes, {}, 0});
    }
    write_atomic_batch(files, s->options.fsync);
    lk.lock();
    if (flush) {
      s->flushed_below = open_at_flush;
      ++s->writer_flushes;
    }
    std::vector<PhaseWrite> results;
    std::size_t f = 0;
    bool retry_written = false;  // a phase that had failed was written: the path works again
    for (Item& b : batch) {
      PhaseWrite w;
      w.serialise_ms = b.serialise_ms;
      if (b.encoded) {
        const BatchFile& bf = files[f++];
        w.result = bf.result;
        w.write_ms = bf.write_ms;
        w.bytes = b.bytes.size();
      } else {
        w.result = b.error;
      }
      const std::string path = part_file(*s, b.phase);
      if (w.result.error == 0) {
        retry_written |= b.retry;
        s->written.insert(b.phase);
        s->failed.erase(b.phase);
        s->files.push_back(path);
        auto jt = s->closed.find(b.phase);
        if (jt != s->closed.end() && jt->second == b.pd) s->closed.erase(jt);
      } else {
        s->failed.insert(b.phase);
        record_error(*s, b.phase, path, w.result);
      }
      results.push_back(std::move(w));
    }
    if (retry_written) {  // advance_phase retried only the oldest failed phase: now the rest
      for (std::size_t p : s->failed)
        if (std::find(s->queue.begin(), s->queue.end(), p) == s->queue.end()) s->queue.push_back(p);
    }
    lk.unlock();
    for (std::size_t i = 0; i < batch.size(); ++i) {
      auto t0 = clock::now();
      batch[i].pd.reset();  // frees the phase unless a get() holds it (or the write failed)
      batch[i].bytes = std::string();
      const double clear_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
      if (s->timing) print_timing(*s, batch[i].phase, results[i], clear_ms);
    }
    lk.lock();
    s->writing.clear();  // only now: wait_for_flush() returns after the phases are freed
    s->cv.notify_all();
  }
}

}  // namespace

// ---- the sink a backend delivers to -------------------------------------------

namespace {

// ---- capture sites of CUDA-graph nodes (process-wide) ----

/// More capture sites than this are not recorded (their kernels are then
/// attributed flat): a bound on memory if a backend never reports destroys.
constexpr std::size_t kMaxCaptureSites = 1u << 20;

struct CaptureSites {
  std::mutex mu;
  std::unordered_map<std::uint64_t, std::shared_ptr<const CaptureSite>> sites;
  bool warned_full = false;
};
CaptureSites& capture_sites() {
  static auto* c = new CaptureSites;  // never destroyed: backend threads may call in at exit
  return *c;
}
std::shared_ptr<const CaptureSite> find_site(std::uint64_t node) {
  auto& c = capture_sites();
  std::lock_guard g(c.mu);
  auto it = c.sites.find(node);
  return it == c.sites.end() ? nullptr : it->second;
}
void put_site(std::uint64_t node, std::shared_ptr<const CaptureSite> site) {
  auto& c = capture_sites();
  std::lock_guard g(c.mu);
  if (c.sites.size() >= kMaxCaptureSites && !c.sites.count(node)) {
    if (!std::exchange(c.warned_full, true))
      warn("{} CUDA-graph capture sites are held (nodes never reported destroyed?); kernels of further "
           "graph nodes are attributed to their replay site only",
           kMaxCaptureSites);
    return;
  }
  c.sites[node] = std::move(site);
}

std::uint32_t graph_replays_metric() {
  static const std::uint32_t id = metric_id("graph_replays", MetricType::int64, MetricKind::exclusive, false);
  return id;
}
NameId captured_at_name() {
  static const NameId id = intern(kCapturedAtFrame);
  return id;
}

/// The four metrics of a kernel record at a node, in one pass over its slots:
/// "time (ns)" and "count" added, "device_id" and "device_type" set.
void add_kernel_slots(std::vector<MetricSlot>& m, std::int64_t dur, std::int64_t device_id, std::int64_t device_type) {
  static_assert(kTimeNs == 0 && kCount == 1 && kDeviceId == 2 && kDeviceType == 3);
  unsigned seen = 0;
  for (MetricSlot& x : m) {
    switch (x.id) {
      case kTimeNs: x.i = saturating_add(x.i, dur); break;
      case kCount: x.i = saturating_add(x.i, 1); break;
      case kDeviceId: x.i = device_id; break;
      case kDeviceType: x.i = device_type; break;
      default: continue;
    }
    seen |= 1u << x.id;
  }
  if (seen == 0xf) return;
  if (!(seen & 1u)) m.push_back(MetricSlot::of_int(kTimeNs, MetricKind::inclusive, dur));
  if (!(seen & 2u)) m.push_back(MetricSlot::of_int(kCount, MetricKind::inclusive, 1));
  if (!(seen & 4u)) m.push_back(MetricSlot::of_int(kDeviceId, MetricKind::property, device_id));
  if (!(seen & 8u)) m.push_back(MetricSlot::of_int(kDeviceType, MetricKind::property, device_type));
}

void attribute(ThreadPhase& d, bool trace, std::uint32_t node, NameId kernel, const KernelRecord& r,
               std::uint64_t launch_ts, bool has_launch, const CaptureSite* site = nullptr) {
  Tree& t = d.tree;
  std::uint32_t target = (node != 0 && t.nodes[node].name == kernel) ? node : t.child(node, kernel);
  auto& m = t.nodes[target].metrics;
  if (site)
    for (const auto& s : site->metrics) add_slot(m, s);
  const std::uint64_t dur = r.end_ns >= r.start_ns ? r.end_ns - r.start_ns : 0;
  add_kernel_slots(m, static_cast<std::int64_t>(dur), r.device_id, static_cast<int>(r.device_type));
  if (trace)
    d.kernels.push_back({target, r.start_ns, r.start_ns + dur, launch_ts, r.correlation_id, r.device_id,
                         r.stream_id, r.device_type, has_launch && launch_ts != 0, r.graph_node_id});
}
void attribute(Local& l, std::uint32_t node, NameId kernel, const KernelRecord& r, std::uint64_t launch_ts,
               bool has_launch, const CaptureSite* site = nullptr) {
  attribute(l.data, l.session->trace, node, kernel, r, launch_ts, has_launch, site);
}

/// Below `node`: <captured_at> / the capture site's path. Adds a replay at
/// <captured_at> when `count_replay`.
std::uint32_t captured_path(Tree& t, std::uint32_t node, const CaptureSite& site, bool count_replay) {
  std::uint32_t at = t.child(node, captured_at_name());
  if (count_replay)
    add_slot(t.nodes[at].metrics, MetricSlot::of_int(graph_replays_metric(), MetricKind::exclusive, 1));
  for (NameId n : site.path) at = t.child(at, n);
  return at;
}

/// A kernel replayed from a graph (the session's locals_mu held; `l` locked).
void attribute_graph(Session& s, Local& l, PendingLaunch* p, NameId kn, const KernelRecord& r) {
  const auto site = find_site(r.graph_node_id);
  std::uint32_t node = p ? p->node : 0;
  if (site) {
    const bool first = p && !p->replay_counted;
    if (p) p->replay_counted = true;
    node = captured_path(l.data.tree, node, *site, first);
    // The kernel lands on the op node of its capture site (same name) or under it.
    attribute(l, node, kn, r, p ? p->ts : 0, p != nullptr, site.get());
  } else {
    attribute(l, node, kn, r, p ? p->ts : 0, p != nullptr);
    s.graph_kernels_flat.fetch_add(1, std::memory_order_relaxed);
    if (!s.reported_flat.exchange(true))
      warn("session '{}': kernel '{}' was replayed from a CUDA graph whose capture the profiler did not see "
           "(captured before profiling began); it and any like it are attributed to the scope that launched "
           "the graph, without their capture site (stats().graph_kernels_flat). Start the session before "
           "capturing to see capture sites",
           s.name, r.name);
  }
}
}  // namespace

namespace {
/// `r` to its launch in `l` (locked), if `l` has one bound to its correlation id.
bool attribute_pending(Session& s, Local& l, NameId kn, const KernelRecord& r) {
  PendingLaunch* p = l.pending.find(r.correlation_id);
  if (!p) return false;
  if (p->closed) {  // launched in a closed phase the writer has not sealed: it lands there
    PhaseData& pd = *p->closed;
    std::lock_guard lm(pd.late_mu);
    attribute(pd.parts[p->part], s.trace, p->node, kn, r, p->ts, true);
    --pd.outstanding;
    l.pending.erase(p);
    return true;
  }
  if (r.graph_node_id != 0) attribute_graph(s, l, p, kn, r);
  else attribute(l, p->node, kn, r, p->ts, true);
  // A graph launch of unknown size keeps its binding until it ages out.
  if (!p->graph || (p->remaining != 0 && --p->remaining == 0)) l.pending.erase(p);
  return true;
}

/// Records one thread attributes under one hold of a Local's lock, at most:
/// the launching thread waits for the lock for no longer than this many.
constexpr std::size_t kRecordsPerHold = 32;
}  // namespace

void SessionSink::kernel(const KernelRecord& r) noexcept { kernels({&r, 1}); }

void SessionSink::kernels(std::span<const KernelRecord> records) noexcept {
  if (records.empty() || s_.finalized.load()) return;
  try {
    std::lock_guard g(s_.locals_mu);
    // The Local whose launch took the last record stays locked for the next
    // ones (a backend's batch mostly holds one thread's launches, in order).
    Local* held = nullptr;
    std::size_t held_for = 0;
    auto release = [&] {
      if (held) held->lock.unlock();
      held = nullptr;
    };
    std::string_view last_name;  // a batch mostly repeats one kernel's name
    NameId last_kn = 0;
    for (const KernelRecord& r : records) {
      try {
        if (last_name.data() == nullptr || r.name != last_name) {
          last_kn = intern(r.name);
          last_name = r.name;
        }
        const NameId kn = last_kn;
        bool done = false;
        if (r.correlation_id != 0) {
          if (held && ++held_for < kRecordsPerHold) done = attribute_pending(s_, *held, kn, r);
          if (!done) {
            Local* skip = held_for < kRecordsPerHold ? held : nullptr;  // just looked there
            release();
            for (auto& l : s_.locals) {
              if (l.get() == skip) continue;
              l->lock.lock();
              held = l.get();
              held_for = 0;
              if ((done = attribute_pending(s_, *l, kn, r))) break;
              release();
            }
          }
        }
        if (done) continue;
        release();
        if (!s_.active.load()) continue;  // launched while paused (or unknown): nothing to record
        std::lock_guard lg(s_.detached->lock);
        if (r.graph_node_id != 0) attribute_graph(s_, *s_.detached, nullptr, kn, r);
        else attribute(*s_.detached, 0, kn, r, 0, false);
      } catch (...) {
        // out of memory while recording: drop the record rather than take down the backend
        release();
      }
    }
    release();
  } catch (...) {
  }
}

void SessionSink::device(DeviceType type, std::uint32_t id, const DeviceInfo& info) noexcept {
  try {
    std::lock_guard g(s_.locals_mu);
    s_.devices[{type, id}] = info;
  } catch (...) {
  }
}

// ---- launch hook ------------------------------------------------------------

void launch_enter(const LaunchInfo& info) noexcept {
  try {
    ThreadState& ts = current();
    NameId n = intern(info.kernel);
    int fm = -1;
    if (info.flops != 0) {
      fm = flops_metric(info.flops_width);
      if (fm < 0) {
        static std::atomic<bool> once{false};
        if (!once.exchange(true))
          warn("launch hook: flops_width {} of kernel '{}' is not 8, 16, 32 or 64; its flops are "
               "not recorded",
               info.flops_width, info.kernel);
      }
    }
    const std::uint64_t t = ts.need_time ? now_ns() : 0;
    MetricSlot* slots = ts.op_slots;  // no allocation per launch
    int count = 0;
    if (fm >= 0)
      slots[count++] = MetricSlot::of_int(static_cast<std::uint32_t>(fm), MetricKind::inclusive, info.flops);
    if (info.bytes != 0) slots[count++] = MetricSlot::of_int(kBytes, MetricKind::inclusive, info.bytes);
    ts.op_open = true;
    ts.op_name = n;
    ts.op_n = count;
    for (Local* l : ts.active) {
      if (!l->session->hook) continue;
      std::lock_guard g(l->lock);
      sync_path(*l, ts);
      std::uint32_t node = l->data.tree.child(top(*l), n);
      for (int i = 0; i < count; ++i) add_slot(l->data.tree.nodes[node].metrics, slots[i]);
      l->op_node.store(node, std::memory_order_relaxed);
      if (l->session->trace) {
        l->op_start = std::max(t, l->session->start_mono);
        l->op_grid = info.grid;
        l->op_metrics.assign(slots, slots + count);
      }
    }
  } catch (...) {
  }
}

void launch_exit() noexcept {
  try {
    ThreadState& ts = tls();
    ts.op_open = false;
    std::uint64_t t = 0;
    for (auto& lp : ts.known) {
      Local& l = *lp;
      if (l.op_node.load(std::memory_order_relaxed) == kNoNode) continue;  // only this thread opens it
      if (!l.session->trace) {  // nothing to write: no lock (see Local::op_node)
        l.op_node.store(kNoNode, std::memory_order_relaxed);
        continue;
      }
      std::lock_guard g(l.lock);
      const std::uint32_t op = l.op_node.load(std::memory_order_relaxed);
      if (op == kNoNode) continue;  // finalized meanwhile
      if (l.session->active.load(std::memory_order_relaxed)) {
        if (t == 0) t = now_ns();
        l.data.scopes.push_back({op, EventCat::launch, l.op_start, t, std::move(l.op_metrics), l.op_grid});
      }
      l.op_metrics.clear();
      l.op_node.store(kNoNode, std::memory_order_relaxed);
    }
  } catch (...) {
  }
}

}  // namespace detail

using namespace detail;

// ---- backends -----------------------------------------------------------------

void register_backend(std::string name, BackendFactory factory) {
  if (name.empty() || name == "none")
    throw InvalidArgument("profiler::register_backend: '" + name + "' is reserved (no backend)");
  if (!factory) throw InvalidArgument("profiler::register_backend: empty factory for '" + name + "'");
  std::lock_guard g(reg().backends_mu);
  reg().backends[std::move(name)] = std::move(factory);
}

std::vector<std::string> registered_backends() {
  std::lock_guard g(reg().backends_mu);
  std::vector<std::string> out;
  for (auto& [n, f] : reg().backends) out.push_back(n);
  return out;
}

namespace {
/// Binds `correlation_id` to the calling thread's innermost open node (or op) in every active session that
/// records kernels; `kernels` > 0 marks a graph launch of that many kernels.
void correlate(std::uint64_t correlation_id, std::uint32_t kernels, bool graph) noexcept {
  try {
    ThreadState& ts = current();
    const std::uint64_t t = ts.need_time ? now_ns() : 0;
    for (Local* l : ts.active) {
      if (!l->session->kernel_records) continue;
      std::lock_guard g(l->lock);
      sync_path(*l, ts);
      const std::uint32_t op = l->op_node.load(std::memory_order_relaxed);
      const std::uint32_t node = op != kNoNode ? op : top(*l);
      if (graph)
        l->pending.put(correlation_id, {.ts = t, .node = node, .remaining = kernels, .graph = true});
      else
        l->pending.put(correlation_id, {.ts = t, .node = node});
    }
  } catch (...) {
  }
}
}  // namespace

void correlate_launch(std::uint64_t correlation_id) noexcept { correlate(correlation_id, 0, false); }

void correlate_graph_launch(std::uint64_t correlation_id, std::uint32_t kernels) noexcept { correlate(correlation_id, kernels, true); }

namespace {
/// Metric ids of one batch of PC samples: "pc_samples", then per line its stalls.
struct PcIds {
  std::uint32_t samples;
  std::vector<std::vector<std::uint32_t>> stalls;
};
PcIds pc_ids(const PcSamples& samples) {
  static const std::uint32_t k_samples = metric_id("pc_samples", MetricType::int64, MetricKind::inclusive, false);
  PcIds ids{k_samples, std::vector<std::vector<std::uint32_t>>(samples.lines.size())};
  for (std::size_t i = 0; i < samples.lines.size(); ++i)
    for (const auto& [reason, n] : samples.lines[i].stalls)
      ids.stalls[i].push_back(metric_id("stall:" + reason, MetricType::int64, MetricKind::inclusive, false));
  return ids;
}
/// Add `samples` as <at>/<kernel>/<location> (the kernel node is `at` itself
/// when it has the kernel's name, as launch-hook ops do). `l` locked.
void add_pc_samples(Local& l, std::uint32_t at, NameId kn, const PcSamples& samples, const PcIds& ids) {
  Tree& t = l.data.tree;
  const std::uint32_t kernel = (at != 0 && t.nodes[at].name == kn) ? at : t.child(at, kn);
  for (std::size_t i = 0; i < samples.lines.size(); ++i) {
    const PcSampleLine& line = samples.lines[i];
    const std::uint32_t node = t.child(kernel, intern(line.location));
    auto& m = t.nodes[node].metrics;
    add_slot(m, MetricSlot::of_int(ids.samples, MetricKind::inclusive, static_cast<std::int64_t>(line.samples)));
    for (std::size_t k = 0; k < line.stalls.size(); ++k)
      add_slot(m, MetricSlot::of_int(ids.stalls[i][k], MetricKind::inclusive,
                                     static_cast<std::int64_t>(line.stalls[k].second)));
  }
}
}  // namespace

void detail::device_events(const DeviceEvents& e) noexcept {
  try {
    static const std::uint32_t k_pairs = metric_id("async_pairs", MetricType::int64, MetricKind::exclusive, false);
    static const std::uint32_t k_ns = metric_id("async_ns", MetricType::int64, MetricKind::exclusive, false);
    static const std::uint32_t k_dropped = metric_id("device_events_dropped", MetricType::int64, MetricKind::exclusive, false);
    ThreadState& ts = current();
    if (ts.active.empty()) return;
    const DevicePairing pairing = pair_device_events(e.events);
    std::vector<NameId> names;
    for (const std::string& n : e.sites) names.push_back(intern(n));
    // Per site: pairs and the sum of their begin -> end times (what the viewer shows under the launch).
    std::vector<std::int64_t> count(names.size()), ns(names.size());
    for (const auto& p : pairing.pairs) {
      const DeviceEvent &b = e.events[p.begin], &x = e.events[p.end];
      if (b.site >= names.size()) continue;
      count[b.site] += 1;
      ns[b.site] += x.time_ns >= b.time_ns ? static_cast<std::int64_t>(x.time_ns - b.time_ns) : 0;
    }
    const std::uint64_t t = ts.need_time ? now_ns() : 0;
    for (Local* l : ts.active) {
      if (!l->session->hook) continue;
      std::lock_guard g(l->lock);
      sync_path(*l, ts);
      const std::uint32_t op = l->op_node.load(std::memory_order_relaxed);
      const std::uint32_t at = op != kNoNode ? op : top(*l);
      Tree& tree = l->data.tree;
      for (std::size_t i = 0; i < names.size(); ++i) {
        if (count[i] == 0) continue;
        const std::uint32_t node = tree.child(at, names[i]);
        add_slot(tree.nodes[node].metrics, MetricSlot::of_int(k_pairs, MetricKind::exclusive, count[i]));
        add_slot(tree.nodes[node].metrics, MetricSlot::of_int(k_ns, MetricKind::exclusive, ns[i]));
      }
      if (e.dropped > 0)
        add_slot(tree.nodes[at].metrics, MetricSlot::of_int(k_dropped, MetricKind::exclusive, static_cast<std::int64_t>(e.dropped)));
      if (l->session->trace)
        l->data.device.push_back({at, op != kNoNode ? l->op_start : t, t, names, {e.events.begin(), e.events.end()}, e.dropped});
    }
  } catch (...) {
  }
}

void record_pc_samples(const PcSamples& samples) noexcept {
  try {
    const PcIds ids = pc_ids(samples);
    const NameId kn = intern(samples.kernel);
    ThreadState& ts = current();
    for (Local* l : ts.active) {
      if (!l->session->kernel_records) continue;
      std::lock_guard g(l->lock);
      sync_path(*l, ts);
      const std::uint32_t op = l->op_node.load(std::memory_order_relaxed);
      add_pc_samples(*l, op != kNoNode ? op : top(*l), kn, samples, ids);
    }
  } catch (...) {
  }
}

void detail::SessionSink::pc_samples(const PcSamples& samples) noexcept {
  try {
    // Paused sessions take nothing; a finalizing one takes what its backend reads at the end.
    if (s_.finalized.load() || (!s_.active.load() && !s_.finalizing.load())) return;
    const PcIds ids = pc_ids(samples);
    const NameId kn = intern(samples.kernel);
    std::lock_guard g(s_.locals_mu);
    std::lock_guard lg(s_.detached->lock);
    add_pc_samples(*s_.detached, 0, kn, samples, ids);
  } catch (...) {
  }
}

void cancel_launch(std::uint64_t correlation_id) noexcept {
  ThreadState& ts = tls();
  for (auto& l : ts.known) {
    std::lock_guard g(l->lock);
    l->pending.erase(correlation_id);
  }
}

void graph_node_captured(std::uint64_t node_id) noexcept {
  try {
    ThreadState& ts = tls();
    auto site = std::make_shared<CaptureSite>();
    site->path.reserve(ts.stack.size() + 1);
    for (const Frame& f : ts.stack) site->path.push_back(f.name);
    if (ts.op_open) {
      site->path.push_back(ts.op_name);
      site->metrics.assign(ts.op_slots, ts.op_slots + ts.op_n);
    }
    put_site(node_id, std::move(site));
  } catch (...) {
  }
}

void graph_node_cloned(std::uint64_t original_id, std::uint64_t clone_id) noexcept {
  try {
    if (auto site = find_site(original_id)) put_site(clone_id, std::move(site));
  } catch (...) {
  }
}

void graph_node_destroyed(std::uint64_t node_id) noexcept {
  auto& c = capture_sites();
  std::shared_ptr<const CaptureSite> dropped;  // freed outside the lock
  std::lock_guard g(c.mu);
  if (auto it = c.sites.find(node_id); it != c.sites.end()) {
    dropped = std::move(it->second);
    c.sites.erase(it);
  }
}

void clear_graph_nodes() noexcept {
  auto& c = capture_sites();
  decltype(c.sites) dropped;
  std::lock_guard g(c.mu);
  dropped.swap(c.sites);
  c.warned_full = false;
}

std::size_t graph_nodes() noexcept {
  auto& c = capture_sites();
  std::lock_guard g(c.mu);
  return c.sites.size();
}

std::uint64_t now_ns() noexcept {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// ---- sessions --------------------------------------------------------------------

namespace {
/// The file stem a session named `name` writes under, as one absolute, normalised path ("run", "./run" and
/// "d/../run" are one stem), so running_conflict compares files, not spellings.
std::string file_key(const std::string& name) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(name, ec), ec);
  return ec ? std::filesystem::path(name).lexically_normal().string() : p.string();
}

/// Whether `key` is `stem` + ".part_<digits>": the name of a part file's stem of a session whose stem is `stem`.
bool part_of(const std::string& key, const std::string& stem) {
  const std::string prefix = stem + ".part_";
  if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) return false;
  return std::all_of(key.begin() + static_cast<std::ptrdiff_t>(prefix.size()), key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/// Why a new session named `name` (file stem `key`) may not start (empty: it may): two running sessions that write
/// the same files — one stem however spelled, or one's stem a part file of the other's ("x" and "x.part_0") — would
/// silently replace each other's files. Called with reg().mu held.
std::string running_conflict(const std::string& name, const std::string& key) {
  for (const auto& [id, other] : reg().sessions) {
    if (!other || other->finalizing.load()) continue;
    if (other->file_key == key)
      return fmt::format("profiler::start: a session writing '{}' is already running (session {}, named '{}'); its files "
                         "would be overwritten: finalize it first or choose another name",
                         key, id, other->name);
    if (part_of(key, other->file_key) || part_of(other->file_key, key))
      return fmt::format("profiler::start: session name '{}' collides with the part files of running session {} (named "
                         "'{}': <name>.part_<N>.<format>); finalize it first or choose another name",
                         name, id, other->name);
  }
  return {};
}
}  // namespace

SessionId start(std::string_view name, const Options& options) {
  if (name.empty()) throw InvalidArgument("profiler::start: empty session name");
  if (name.find('\0') != std::string_view::npos)
    throw InvalidArgument("profiler::start: the session name contains a NUL byte; it names files, which cannot hold one");
  load_env_plugins();
  auto s = std::make_shared<Session>();
  s->options = options;

  std::string format = options.format;
  std::string backend_mode = options.mode;
  if (options.mode.rfind("periodic_flushing", 0) == 0) {
    std::string_view rest = std::string_view(options.mode).substr(17);
    if (!rest.empty()) {
      if (rest.rfind(":format=", 0) != 0)
        throw InvalidArgument("profiler::start: mode '" + options.mode +
                              "' is not \"periodic_flushing\" or \"periodic_flushing:format=<format>\"");
      format = std::string(rest.substr(8));
    }
    s->periodic = true;
    backend_mode.clear();
  } else if (!options.mode.empty() && (options.backend.empty() || options.backend == "none")) {
    // Other text is the backend's; with no backend nothing would read it (a typo would pass silently).
    throw InvalidArgument("profiler::start: mode '" + options.mode +
                          "' is not \"\", \"periodic_flushing\" or \"periodic_flushing:format=<format>\"; other modes "
                          "are passed to a backend and need Options::backend (e.g. \"cupti\")");
  }
  if (format == "hatchet") s->format = Format::hatchet;
  else if (format == "hatchet_msgpack") s->format = Format::hatchet_msgpack;
  else if (format == "chrome_trace") s->format = Format::chrome_trace;
  else
    throw InvalidArgument("profiler::start: format '" + format +
                          "' is not one of hatchet, hatchet_msgpack, chrome_trace");
  s->ext = format;
  s->trace = s->format == Format::chrome_trace;
  if (options.hook == "launch") s->hook = true;
  else if (!options.hook.empty())
    throw InvalidArgument("profiler::start: hook '" + options.hook + "' is not \"\" or \"launch\"");
  if (options.buffer_size == 0) throw InvalidArgument("profiler::start: buffer_size must be > 0 bytes");
  if (options.max_pending_phases == 0)
    throw InvalidArgument("profiler::start: max_pending_phases must be >= 1");
  if (const auto& pc = options.pc_sampling; pc.enabled) {
    if (options.backend.empty() || options.backend == "none")
      throw InvalidArgument("profiler::start: pc_sampling needs a backend (e.g. backend = \"cupti\")");
    if (pc.period != 0 && (pc.period < 5 || pc.period > 31))
      throw InvalidArgument(fmt::format("profiler::start: pc_sampling.period {} is not 0 (default) or 5..31 "
                                        "(log2 of the sampling interval in cycles)",
                                        pc.period));
    if (pc.max_pcs == 0) throw InvalidArgument("profiler::start: pc_sampling.max_pcs must be > 0");
  }

  s->name = std::string(name);
  const std::string suffix = "." + s->ext;
  if (s->name.size() > suffix.size() && s->name.ends_with(suffix))
    s->name.resize(s->name.size() - suffix.size());
  // The files are "<name>.<format>" and "<name>.part_<N>.<format>": the last path component names them.
  if (const std::string last = std::filesystem::path(s->name).filename().string(); last.empty() || last == "." || last == "..")
    throw InvalidArgument(fmt::format("profiler::start: session name '{}' ends in a directory ('{}'); the name's last "
                                      "path component names the files (e.g. '{}{}profile')",
                                      std::string(name), last, s->name, s->name.ends_with('/') ? "" : "/"));
  s->file_key = file_key(s->name);
  const char* timing = std::getenv("TILEJIT_PROFILE_FLUSH_TIMING");
  s->timing = timing && std::string_view(timing) == "1";
  s->detached = std::make_shared<Local>();
  s->detached->session = s.get();
  s->detached->data.thread = 0;
  s->start_mono = now_ns();
  s->start_real = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count());

  {
    std::lock_guard g(reg().mu);
    if (const std::string why = running_conflict(s->name, s->file_key); !why.empty()) throw InvalidArgument(why);
  }
  if (!options.backend.empty() && options.backend != "none") {
    BackendFactory factory;
    {
      std::lock_guard g(reg().backends_mu);
      auto it = reg().backends.find(options.backend);
      if (it == reg().backends.end()) {
        std::string known = "none";
        for (auto& [n, f] : reg().backends) known += ", " + n;
        throw InvalidArgument("profiler::start: unknown backend '" + options.backend +
                              "'; registered: " + known);
      }
      factory = it->second;
    }
    try {
      s->backend = factory();
      if (!s->backend) throw DeviceUnavailable("the backend factory returned no backend");
      s->backend->start(s->sink, {s->name, backend_mode, options.buffer_size, options.pc_sampling});
      s->kernel_records = true;
    } catch (const std::exception& e) {
      warn("backend '{}' unavailable: {}. Session '{}' records scopes and metrics without kernel "
           "records",
           options.backend, e.what(), s->name);
      s->backend.reset();
    }
  }

  std::lock_guard g(reg().mu);
  if (const std::string why = running_conflict(s->name, s->file_key); !why.empty()) {  // started meanwhile on another thread
    if (s->backend) s->backend->stop();
    throw InvalidArgument(why);
  }
  s->id = reg().next++;
  reg().sessions[s->id] = s;
  bump_locked();
  return s->id;
}

namespace {
void set_active(SessionId id, bool on, const char* what) {
  auto s = find(id, what);
  if (s->finalizing.load()) {
    warn("{}: session {} ('{}') is finalized; nothing to do", what, id, s->name);
    return;
  }
  {
    std::lock_guard g(reg().mu);
    s->active.store(on);
    bump_locked();
  }
  std::lock_guard g(s->state_mu);
  if (s->kernel_records && !s->finalizing.load()) {  // finalize stops the backend under state_mu
    if (on) s->backend->activate();
    else s->backend->deactivate();
  }
}
}  // namespace

void activate(SessionId session) { set_active(session, true, "activate"); }
void deactivate(SessionId session) { set_active(session, false, "deactivate"); }

FinalizeReport finalize(SessionId id) {
  auto s = find(id, "finalize");
  FinalizeReport rep;
  if (s->finalizing.exchange(true)) {
    warn("finalize: session {} ('{}') was already finalized; nothing to do", id, s->name);
    rep.already_finalized = true;
    return rep;
  }
  {
    std::lock_guard g(reg().mu);
    s->active.store(false);
    bump_locked();
  }
  std::unique_lock lk(s->state_mu);
  // The writer first: it may flush the backend for the phases it still has.
  s->stop_worker = true;
  s->cv.notify_all();
  if (s->worker.joinable()) {
    lk.unlock();
    s->worker.join();
    lk.lock();
  }
  if (s->kernel_records) {
    // Apart: a flush that throws must not skip stop() (CUPTI's unsubscribe and detach).
    try {
      s->backend->flush();
    } catch (const std::exception& e) {
      warn("finalize: backend of session '{}' failed to flush (its last records are lost): {}", s->name, e.what());
    } catch (...) {
      warn("finalize: backend of session '{}' failed to flush (its last records are lost): an exception that is not a std::exception", s->name);
    }
    try {
      s->backend->stop();
    } catch (const std::exception& e) {
      warn("finalize: backend of session '{}' failed to stop: {}", s->name, e.what());
    } catch (...) {
      warn("finalize: backend of session '{}' failed to stop: an exception that is not a std::exception", s->name);
    }
  }

  for (auto& [n, pd] : s->closed) seal(*s, *pd);  // failed writes kept in memory: complete

  // Scopes still open: end them now, report them.
  const std::uint64_t t = now_ns();
  {
    std::lock_guard g(s->locals_mu);
    for (auto& l : s->locals) {
      std::lock_guard lg(l->lock);
      if (!l->path.empty()) {
        std::string path;
        for (std::uint32_t n : l->path) {
          if (!path.empty()) path += '/';
          path += name_of(l->data.tree.nodes[n].name);
        }
        rep.open_scopes.push_back({l->data.thread, std::move(path)});
        if (s->trace)
          for (std::size_t i = l->path.size(); i-- > 0;)
            l->data.scopes.push_back(
                {l->path[i], EventCat::scope, l->path_start[i], t, std::move(l->path_metrics[i]), {}});
        l->path.clear();
        l->path_start.clear();
        l->path_metrics.clear();
      }
      if (const std::uint32_t op = l->op_node.load(std::memory_order_relaxed); op != kNoNode && s->trace)
        l->data.scopes.push_back({op, EventCat::launch, l->op_start, t, std::move(l->op_metrics), l->op_grid});
      l->op_node.store(kNoNode, std::memory_order_relaxed);
      l->pending.clear();
    }
  }
  const std::size_t open_phase = s->phase;
  s->closed[open_phase] = collect(*s);

  // Let the worker finish what it has, then write whatever is still in memory.
  s->stop_worker = true;
  s->cv.notify_all();
  if (s->worker.joinable()) {
    lk.unlock();
    s->worker.join();
    lk.lock();
  }
  const bool single = open_phase == 0 && s->written.empty();
  for (auto& [n, pd] : s->closed) {
    const std::string path = (single && n == open_phase) ? final_file(*s) : part_file(*s, n);
    PhaseWrite w = write_phase(*s, *pd, path);
    if (w.result.error == 0) {
      s->written.insert(n);
      s->files.push_back(path);
    } else {
      record_error(*s, n, path, w.result);
    }
    if (s->timing) print_timing(*s, n, w, 0.0);
  }
  s->closed.clear();
  s->queue.clear();
  s->failed.clear();
  rep.files = s->files;
  rep.errors = s->errors;
  lk.unlock();

  {
    std::lock_guard g(reg().mu);
    s->finalized.store(true);
    bump_locked();
  }
  {
    std::lock_guard g(s->state_mu);
    s->backend.reset();  // stopped above; the session stays as a tombstone for later calls
  }
  {
    std::lock_guard g(s->locals_mu);
    for (auto& l : s->locals) l->closed.store(true);
    s->locals.clear();
  }
  {
    std::lock_guard g(s->async_mu);
    s->async_names.clear();
  }
  for (const auto& o : rep.open_scopes) {
    // The path's last 256 bytes at most (scopes leaked in a loop nest thousands deep); FinalizeReport has it whole.
    constexpr std::size_t kShown = 256;
    const std::string shown = o.path.size() > kShown ? "..." + o.path.substr(o.path.size() - kShown) : o.path;
    warn("finalize: session '{}': scope '{}' on CPU thread {} was still open; closed at finalize", s->name, shown,
         o.thread);
  }
  return rep;
}

void finalize_all() {
  std::vector<SessionId> ids;
  {
    std::lock_guard g(reg().mu);
    for (auto& [id, s] : reg().sessions)
      if (!s->finalizing.load()) ids.push_back(id);
  }
  for (SessionId id : ids) finalize(id);
}

// ---- scopes and metrics --------------------------------------------------------------

Name::Name(std::string_view text) : id_(intern(text)) {}

Scope::Scope(std::string_view name) noexcept : depth_(static_cast<std::uint32_t>(tls().stack.size())), thread_(t_state->index) {
  try {
    enter(intern(name));
  } catch (...) {
  }
}

Scope::Scope(Name name) noexcept : depth_(static_cast<std::uint32_t>(tls().stack.size())), thread_(t_state->index) {
  enter(name.id());
}

Scope::Scope(std::string_view name, std::initializer_list<Metric> metrics)
    : depth_(static_cast<std::uint32_t>(tls().stack.size())), thread_(t_state->index) {
  std::vector<MetricSlot> slots;
  slots.reserve(metrics.size());
  for (const auto& m : metrics) slots.push_back(slot_of(m));  // may throw: not entered
  enter(intern(name));
  add_slots(slots.data(), slots.size());
}

Scope::~Scope() {
  if (t_state && t_state->index == thread_) {
    exit_to(depth_);
    return;
  }
  // Another thread: unwinding its stack to depth_ would end that thread's own, unrelated scopes.
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    std::fprintf(stderr, "[tilejit.profiler] a Scope was destroyed on another thread than the one that entered it: it "
                         "ends nothing there; it stays open on its own thread (said once)\n");
}

void enter_scope(std::string_view name) noexcept {
  try {
    enter(intern(name));
  } catch (...) {
  }
}
void enter_scope(Name name) noexcept { enter(name.id()); }

void exit_scope() noexcept {
  std::size_t d = tls().stack.size();
  if (d != 0) exit_to(d - 1);
}

void add_metric(const Metric& metric) {
  MetricSlot s = slot_of(metric);
  add_slots(&s, 1);
}

void add_metrics(std::initializer_list<Metric> metrics) {
  std::vector<MetricSlot> slots;
  slots.reserve(metrics.size());
  for (const auto& m : metrics) slots.push_back(slot_of(m));
  add_slots(slots.data(), slots.size());
}

// ---- async events ----------------------------------------------------------------------

namespace {
void async_event(std::uint64_t id, std::string_view name, bool begin) noexcept {
  try {
    ThreadState& ts = current();
    if (!ts.need_time) return;  // no active trace session
    const std::uint64_t t = now_ns();
    const NameId fallback = begin ? intern(name) : intern("async");
    for (Local* l : ts.active) {
      if (!l->session->trace) continue;
      NameId n = fallback;
      {
        std::lock_guard g(l->session->async_mu);
        auto& names = l->session->async_names;
        if (begin) {
          names[id] = n;
        } else if (auto it = names.find(id); it != names.end()) {
          n = it->second;
          names.erase(it);
        }
      }
      std::lock_guard g(l->lock);
      sync_path(*l, ts);
      l->data.asyncs.push_back({id, n, std::max(t, l->session->start_mono), top(*l), begin});
    }
  } catch (...) {
  }
}
}  // namespace

void async_begin(std::uint64_t id, std::string_view name) noexcept { async_event(id, name, true); }
void async_end(std::uint64_t id) noexcept { async_event(id, {}, false); }

// ---- phases ----------------------------------------------------------------------------

std::size_t advance_phase(SessionId id) {
  auto s = find(id, "advance_phase");
  std::unique_lock lk(s->state_mu);
  if (s->finalizing.load())
    throw InvalidArgument(fmt::format("profiler::advance_phase: session {} is finalized", id));
  // Periodic flushing: no backend flush here; the writer flushes and seals
  // the phase in the background (late records land in it by correlation id).
  if (s->kernel_records && !s->periodic) s->backend->flush();
  const std::size_t closing = s->phase;
  s->closed[closing] = collect(*s, /*late=*/s->periodic && s->kernel_records);
  const std::size_t opened = ++s->phase;  // returned below: other threads may advance while this one waits
  if (s->periodic) {
    // Retry the oldest failed phase first, alone: while the path stays unwritable each call costs one phase's
    // serialisation, not one per failed phase. Once it is written the writer queues the rest.
    if (!s->failed.empty()) {
      const std::size_t f = *s->failed.begin();
      if (std::find(s->writing.begin(), s->writing.end(), f) == s->writing.end() &&
          std::find(s->queue.begin(), s->queue.end(), f) == s->queue.end())
        s->queue.push_back(f);
    }
    s->queue.push_back(closing);
    if (!s->worker.joinable()) s->worker = std::thread(worker_main, s.get());
    s->cv.notify_all();
    if (s->queue.size() >= s->options.max_pending_phases) {  // the writer is that far behind: wait for it
      const std::uint64_t t0 = now_ns();
      s->cv.wait(lk, [&] { return s->queue.size() < s->options.max_pending_phases; });
      ++s->advance_waits;
      s->advance_wait_ns += now_ns() - t0;
    }
  }
  return opened;
}

std::size_t current_phase(SessionId id) {
  auto s = find(id, "current_phase");
  std::lock_guard g(s->state_mu);
  return s->phase;
}

bool is_phase_complete(SessionId id, std::size_t phase) {
  auto s = find(id, "is_phase_complete");
  std::lock_guard g(s->state_mu);
  return phase < s->phase || (s->finalized.load() && phase == s->phase);
}

bool is_phase_flushed(SessionId id, std::size_t phase) {
  auto s = find(id, "is_phase_flushed");
  std::lock_guard g(s->state_mu);
  return s->written.count(phase) != 0;
}

bool wait_for_flush(SessionId id, std::size_t phase) {
  auto s = find(id, "wait_for_flush");
  std::unique_lock lk(s->state_mu);
  s->cv.wait(lk, [&] {
    if (std::any_of(s->writing.begin(), s->writing.end(), [&](std::size_t w) { return w <= phase; })) return false;
    return std::none_of(s->queue.begin(), s->queue.end(), [&](std::size_t q) { return q <= phase; });
  });
  return s->written.count(phase) != 0;
}

namespace {
/// The data of `phase` for get()/get_msgpack(): the open phase (its backend
/// flushed first) or a closed one still in memory; null when neither.
std::shared_ptr<PhaseData> phase_data(detail::Session& s, std::size_t phase) {
  std::lock_guard g(s.state_mu);
  if (s.finalizing.load()) return nullptr;
  if (phase == s.phase) {
    if (s.kernel_records) s.backend->flush();
    return snapshot(s);
  }
  if (auto it = s.closed.find(phase); it != s.closed.end()) {
    bool waiting;
    {
      std::lock_guard lm(it->second->late_mu);
      waiting = !it->second->sealed;
    }
    if (waiting) {  // periodic flushing, not written yet: a read completes it first
      if (s.kernel_records) s.backend->flush();
      seal(s, *it->second);
    }
    return it->second;
  }
  return nullptr;
}
}  // namespace

std::optional<std::string> get(SessionId id, std::size_t phase) {
  auto s = find(id, "get");
  auto pd = phase_data(*s, phase);
  if (!pd) return std::nullopt;
  return dump(to_json(*pd, *s));
}

std::optional<std::vector<std::uint8_t>> get_msgpack(SessionId id, std::size_t phase) {
  auto s = find(id, "get_msgpack");
  auto pd = phase_data(*s, phase);
  if (!pd) return std::nullopt;
  return nlohmann::json::to_msgpack(to_json(*pd, *s));
}

void clear(SessionId id, std::size_t phase, bool clear_up_to_phase) {
  auto s = find(id, "clear");
  std::vector<std::shared_ptr<PhaseData>> dropped;  // freed outside the lock
  std::lock_guard g(s->state_mu);
  if (s->finalizing.load()) return;
  auto hit = [&](std::size_t p) { return clear_up_to_phase ? p <= phase : p == phase; };
  for (auto it = s->closed.begin(); it != s->closed.end();) {
    if (!hit(it->first)) {
      ++it;
      continue;
    }
    s->failed.erase(it->first);
    std::erase(s->queue, it->first);
    seal(*s, *it->second);  // no launch may point into a dropped phase
    dropped.push_back(std::move(it->second));
    it = s->closed.erase(it);
  }
  if (hit(s->phase)) dropped.push_back(collect(*s));
  s->cv.notify_all();
}

std::vector<FlushError> flush_errors(SessionId id) {
  auto s = find(id, "flush_errors");
  std::lock_guard g(s->state_mu);
  return s->errors;
}

SessionStats stats(SessionId id) {
  auto s = find(id, "stats");
  SessionStats st;
  std::lock_guard g(s->state_mu);
  st.phase = s->phase;
  st.phases_in_memory = s->closed.size();
  st.phases_written = s->written.size();
  st.kernel_records = s->kernel_records;
  st.graph_kernels_flat = s->graph_kernels_flat.load();
  st.writer_batches = s->writer_batches;
  st.writer_flushes = s->writer_flushes;
  st.advance_waits = s->advance_waits;
  st.advance_wait_ns = s->advance_wait_ns;
  for (auto& [n, pd] : s->closed) {
    std::lock_guard lm(pd->late_mu);
    st.nodes_in_memory += pd->nodes();
    st.events_in_memory += pd->events();
  }
  std::lock_guard lg(s->locals_mu);
  auto count = [&](Local& l) {
    std::lock_guard g2(l.lock);
    st.nodes_in_memory += l.data.tree.size();
    st.events_in_memory += l.data.events();
    st.pending_launches += l.pending.size();
  };
  for (auto& l : s->locals) count(*l);
  count(*s->detached);
  return st;
}

std::string part_path(SessionId id, std::size_t phase) { return part_file(*find(id, "part_path"), phase); }
std::string final_path(SessionId id) { return final_file(*find(id, "final_path")); }

}  // namespace tilejit::profiler
