#include "intern.hpp"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <tilejit/core/error.hpp>

namespace tilejit::profiler::detail {
namespace {

struct Hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};
template <class V>
using StringMap = std::unordered_map<std::string, V, Hash, std::equal_to<>>;

// 4096 chunks x 4096 strings: 16M distinct names before intern() throws.
constexpr std::size_t kChunkBits = 12, kChunk = std::size_t{1} << kChunkBits, kChunks = 4096;

struct NameTable {
  std::mutex mu;
  StringMap<NameId> ids;
  std::array<std::atomic<std::string*>, kChunks> chunks{};
  std::size_t size = 0;
};
NameTable& names() {
  static auto* t = new NameTable;  // never destroyed: thread-local caches outlive statics
  return *t;
}

NameId intern_slow(std::string_view s) {
  auto& t = names();
  std::lock_guard g(t.mu);
  if (auto it = t.ids.find(s); it != t.ids.end()) return it->second;
  std::size_t id = t.size;
  std::size_t c = id >> kChunkBits;
  if (c >= kChunks) throw InvalidArgument("profiler: more than 16M distinct scope names");
  std::string* chunk = t.chunks[c].load(std::memory_order_relaxed);
  if (!chunk) {
    chunk = new std::string[kChunk];
    t.chunks[c].store(chunk, std::memory_order_release);
  }
  chunk[id & (kChunk - 1)] = std::string(s);
  ++t.size;
  t.ids.emplace(std::string(s), static_cast<NameId>(id));
  return static_cast<NameId>(id);
}

struct MetricTable {
  std::mutex mu;
  StringMap<std::uint32_t> ids;
  std::vector<MetricDesc> descs;
  MetricTable() {
    auto add = [&](std::string n, MetricType t, MetricKind k, bool r) {
      ids.emplace(n, static_cast<std::uint32_t>(descs.size()));
      descs.push_back({std::move(n), t, k, r});
    };
    add("time (ns)", MetricType::int64, MetricKind::inclusive, false);
    add("count", MetricType::int64, MetricKind::inclusive, false);
    add("device_id", MetricType::int64, MetricKind::property, true);
    add("device_type", MetricType::int64, MetricKind::property, true);
    add("flops8", MetricType::int64, MetricKind::inclusive, false);
    add("flops16", MetricType::int64, MetricKind::inclusive, false);
    add("flops32", MetricType::int64, MetricKind::inclusive, false);
    add("flops64", MetricType::int64, MetricKind::inclusive, false);
    add("bytes", MetricType::int64, MetricKind::inclusive, false);
  }
};
MetricTable& metrics() {
  static auto* t = new MetricTable;
  return *t;
}

std::string describe(MetricType t, MetricKind k) {
  return std::string(name(t)) + " " + std::string(name(k));
}

}  // namespace

NameId intern(std::string_view s) {
  // First a small direct-mapped cache keyed by where the text lives: the
  // launch hook passes the same kernel-name string on every launch, a backend
  // often the same record buffer. A hit is confirmed by comparing the text
  // with the interned string, so a buffer reused for another name is a miss,
  // never a wrong id. Then the thread's map (hashes the text), then the table.
  struct Recent {
    const char* data = nullptr;
    std::size_t size = 0;
    NameId id = 0;
  };
  thread_local std::array<Recent, 16> recent{};
  const auto addr = reinterpret_cast<std::uintptr_t>(s.data());
  Recent& r = recent[((addr >> 3) ^ (addr >> 9) ^ s.size()) & (recent.size() - 1)];
  if (r.data == s.data() && r.size == s.size() && s.data() != nullptr && name_of(r.id) == s) return r.id;
  thread_local StringMap<NameId> cache;
  NameId id;
  if (auto it = cache.find(s); it != cache.end()) {
    id = it->second;
  } else {
    id = intern_slow(s);
    cache.emplace(std::string(s), id);
  }
  r = {s.data(), s.size(), id};
  return id;
}

std::string_view name_of(NameId id) noexcept {
  std::string* chunk = names().chunks[id >> kChunkBits].load(std::memory_order_acquire);
  return chunk[id & (kChunk - 1)];
}

NameId root_name() noexcept {
  static const NameId id = intern("ROOT");
  return id;
}

std::uint32_t metric_id(std::string_view name, MetricType type, MetricKind kind, bool user) {
  if (user && name.ends_with(" (inc)"))
    throw InvalidArgument("metric '" + std::string(name) +
                          "': names ending in \" (inc)\" are reserved for the inclusive totals the writers derive "
                          "(hatchet's convention: metric 'x' of a node is written beside 'x (inc)'); choose another name");
  struct Cached {
    std::uint32_t id;
    MetricType type;
    MetricKind kind;
    bool reserved;
  };
  thread_local StringMap<Cached> cache;
  auto it = cache.find(name);
  if (it == cache.end()) {
    auto& t = metrics();
    std::lock_guard g(t.mu);
    auto jt = t.ids.find(name);
    std::uint32_t id;
    if (jt == t.ids.end()) {
      id = static_cast<std::uint32_t>(t.descs.size());
      t.descs.push_back({std::string(name), type, kind, false});
      t.ids.emplace(std::string(name), id);
    } else {
      id = jt->second;
    }
    const MetricDesc& d = t.descs[id];
    it = cache.emplace(std::string(name), Cached{id, d.type, d.kind, d.reserved}).first;
  }
  const Cached& c = it->second;
  if (user && c.reserved)
    throw InvalidArgument("metric '" + std::string(name) +
                          "' is reserved for kernel records; choose another name");
  if (c.type != type || c.kind != kind)
    throw MetricTypeError(std::string(name), describe(c.type, c.kind), describe(type, kind));
  return c.id;
}

std::vector<MetricDesc> metric_table() {
  auto& t = metrics();
  std::lock_guard g(t.mu);
  return t.descs;
}

int flops_metric(int width) noexcept {
  switch (width) {
    case 8: return kFlops8;
    case 16: return kFlops16;
    case 32: return kFlops32;
    case 64: return kFlops64;
    default: return -1;
  }
}

}  // namespace tilejit::profiler::detail

namespace tilejit::profiler {

Metric flops(int width, std::int64_t n) {
  switch (width) {
    case 8: return Metric("flops8", n);
    case 16: return Metric("flops16", n);
    case 32: return Metric("flops32", n);
    case 64: return Metric("flops64", n);
    default:
      throw InvalidArgument("profiler::flops: width " + std::to_string(width) +
                            " is not one of 8, 16, 32, 64");
  }
}

}  // namespace tilejit::profiler
