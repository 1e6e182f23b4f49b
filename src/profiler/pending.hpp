// Launches waiting for their kernel records, keyed by correlation id: one
// thread's pending launches in one session (guarded by its Local::lock).
//
// A ring of entries sorted by id. CUPTI's correlation ids grow with every
// launch of the process, so a thread binds them in increasing order: a launch
// is a push at the back (no allocation once the ring has grown to the backlog
// of the job) and a record, which mostly comes in launch order, is found at
// the front. Out-of-order ids (another backend, a test) are inserted in
// place; records that come out of order leave holes that are dropped from the
// ends at once and compacted away once they outnumber the live entries, so a
// launch whose record never comes holds no more than its own entry. The ring
// keeps the size of the largest backlog it has held (until clear()): giving it
// back and growing it again costs more, in time and in resident memory
// (allocator high-water marks), than keeping it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace tilejit::profiler::detail {

struct PhaseData;

struct PendingLaunch {  // 32 bytes: the ring holds one per launch in flight
  std::uint64_t ts = 0;
  // Launched in a closed phase (periodic flushing): `node` is in closed->parts[part].
  PhaseData* closed = nullptr;
  std::uint32_t node = 0;
  std::uint32_t remaining = 1;  // kernel records still expected; 0 = unknown (graph)
  std::uint32_t part = 0;
  std::uint8_t age = 0;         // phase boundaries survived
  bool graph = false;           // a graph launch: several kernel records share the id
  bool replay_counted = false;  // graph_replays added for this launch
};

class PendingLaunches {
 public:
  /// The live launch bound to `id`, or null. Valid until the next put/erase.
  PendingLaunch* find(std::uint64_t id) noexcept {
    if (count_ == 0) return nullptr;
    std::size_t i = 0;
    if (at(0).id != id) {  // records mostly come in launch order: the front
      if (id < at(0).id || id > at(count_ - 1).id) return nullptr;
      i = lower_bound(id);
      if (i == count_ || at(i).id != id) return nullptr;
    }
    Entry& e = at(i);
    return e.live ? &e.p : nullptr;
  }

  /// Bind `id` to `p`, replacing an earlier binding of the same id.
  void put(std::uint64_t id, const PendingLaunch& p) {
    if (count_ == 0 || id > at(count_ - 1).id) {
      push_back(id, p);
      return;
    }
    std::size_t i = lower_bound(id);
    if (at(i).id == id) {  // i < count_: id <= the back's id
      Entry& e = at(i);
      if (!e.live) ++live_;
      e.p = p;
      e.live = true;
      return;
    }
    if (count_ == buf_.size()) {  // grow first: rebuilding drops holes and moves entries
      rebuild(2 * buf_.size());
      i = lower_bound(id);
    }
    push_back(id, p);  // then move it down to its place
    for (std::size_t k = count_ - 1; k > i; --k) std::swap(at(k), at(k - 1));
  }

  /// Drop the launch `p` (a pointer from find()).
  void erase(PendingLaunch* p) noexcept {
    Entry* e = reinterpret_cast<Entry*>(p);  // p is the first member of a standard-layout Entry
    e->live = false;
    --live_;
    trim();
  }
  void erase(std::uint64_t id) noexcept {
    if (PendingLaunch* p = find(id)) erase(p);
  }

  /// f(id, PendingLaunch&) for every live launch, in id order.
  template <class F>
  void for_each(F&& f) {
    for (std::size_t i = 0; i < count_; ++i)
      if (Entry& e = at(i); e.live) f(e.id, e.p);
  }
  /// Drop every live launch for which f(id, PendingLaunch&) returns true.
  template <class F>
  void erase_if(F&& f) {
    for (std::size_t i = 0; i < count_; ++i)
      if (Entry& e = at(i); e.live && f(e.id, e.p)) {
        e.live = false;
        --live_;
      }
    trim();
  }

  std::size_t size() const noexcept { return live_; }
  bool empty() const noexcept { return live_ == 0; }
  /// Entries held, holes included (for tests).
  std::size_t held() const noexcept { return count_; }
  void clear() noexcept {
    buf_.clear();
    buf_.shrink_to_fit();
    head_ = count_ = live_ = 0;
  }

 private:
  struct Entry {
    PendingLaunch p;  // first: erase() gets the entry back from &p
    std::uint64_t id = 0;
    bool live = false;
  };
  static_assert(std::is_standard_layout_v<Entry>);
  static constexpr std::size_t kMinCapacity = 64;
  static constexpr std::size_t kMinHoles = 64;     // compact only above this many holes

  Entry& at(std::size_t i) noexcept { return buf_[(head_ + i) & (buf_.size() - 1)]; }

  std::size_t lower_bound(std::uint64_t id) noexcept {
    std::size_t lo = 0, hi = count_;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (at(mid).id < id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  void push_back(std::uint64_t id, const PendingLaunch& p) {
    if (count_ == buf_.size()) rebuild(std::max(kMinCapacity, 2 * buf_.size()));
    Entry& e = at(count_++);
    e.p = p;
    e.id = id;
    e.live = true;
    ++live_;
  }

  /// Copy the live entries, in order, into a ring of `capacity` (a power of two).
  void rebuild(std::size_t capacity) {
    std::vector<Entry> next(capacity);
    std::size_t n = 0;
    for (std::size_t i = 0; i < count_; ++i)
      if (Entry& e = at(i); e.live) next[n++] = e;
    buf_.swap(next);
    head_ = 0;
    count_ = n;
  }

  /// Drop holes at both ends; compact when holes outnumber live entries.
  void trim() noexcept {
    while (count_ > 0 && !at(0).live) {
      head_ = (head_ + 1) & (buf_.size() - 1);
      --count_;
    }
    while (count_ > 0 && !at(count_ - 1).live) --count_;
    const std::size_t holes = count_ - live_;
    if (holes > kMinHoles && holes > live_) {  // in place: live entries move towards the front
      std::size_t n = 0;
      for (std::size_t i = 0; i < count_; ++i)
        if (at(i).live) {
          if (n != i) at(n) = at(i);
          ++n;
        }
      count_ = n;
    }
  }

  std::vector<Entry> buf_;  // size 0 or a power of two
  std::size_t head_ = 0;    // index of the first entry
  std::size_t count_ = 0;   // entries from head_, holes included
  std::size_t live_ = 0;
};

}  // namespace tilejit::profiler::detail
