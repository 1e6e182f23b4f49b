// src/profiler/cupti_buffers.cpp — the activity buffers the "cupti" backend
// hands to CUPTI (BufferPool, cupti_backend.hpp explains why it exists).
//
// Buffers are anonymous private mappings: their pages read as zero until
// written, MAP_POPULATE faults them in up front, and MADV_DONTNEED gives a
// buffer's pages back to the system and leaves it zero-filled again.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "cupti_backend.hpp"

namespace tilejit::profiler::cupti {

namespace {

std::size_t page_size() {
  static const std::size_t p = [] {
    const long v = ::sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{4096};
  }();
  return p;
}

std::size_t mapped_bytes(std::size_t size) {
  const std::size_t p = page_size();
  return (size + p - 1) / p * p;
}

std::uint8_t* map(std::size_t bytes, bool populate) {
  int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
  if (populate) flags |= MAP_POPULATE;
#endif
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
#ifndef MAP_POPULATE
  if (populate)
    for (std::size_t i = 0; i < bytes; i += page_size()) static_cast<volatile std::uint8_t*>(p)[i] = 0;
#endif
  return static_cast<std::uint8_t*>(p);
}

bool all_zero(const std::uint8_t* p, std::size_t n) {
  // Word at a time: buffers are page aligned and n is a multiple of 8 here or tiny.
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (w != 0) return false;
  }
  for (; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

void zero_used(std::uint8_t* buffer, std::size_t size, std::size_t used) noexcept {
  if (!buffer) return;
  used = std::min(used, size);
  std::memset(buffer, 0, used);
  // Beyond `used`: CUPTI reports the bytes of complete records; anything it
  // wrote past them (a record cut short) is cleared a page at a time, until a
  // page that is already all zero.
  const std::size_t p = page_size();
  std::size_t at = used;
  while (at < size) {
    const std::size_t end = std::min(size, (at / p + 1) * p);
    if (all_zero(buffer + at, end - at)) break;
    std::memset(buffer + at, 0, end - at);
    at = end;
  }
}

BufferPool::~BufferPool() {
  std::lock_guard g(mu_);
  for (auto& [p, e] : known_) unmap(p, e.bytes);
  known_.clear();
  free_.clear();
}

void BufferPool::unmap(std::uint8_t* p, std::size_t bytes) { ::munmap(p, bytes); }

bool BufferPool::reserve(std::size_t size, std::size_t resident) {
  std::lock_guard g(mu_);
  if (size != size_) {
    // Another size: drop what is pooled; buffers still out are unmapped as they come back.
    for (std::uint8_t* p : free_) {
      unmap(p, known_.at(p).bytes);
      known_.erase(p);
    }
    free_.clear();
    size_ = size;
  }
  std::size_t have = 0;
  for (const auto& [p, e] : known_)
    if (e.resident && mapped_bytes(size_) == e.bytes) ++have;
  bool ok = true;
  const std::size_t bytes = mapped_bytes(size_);
  for (; have < resident; ++have) {
    std::uint8_t* p = map(bytes, /*populate=*/true);
    if (!p) {
      ok = false;
      break;
    }
    known_[p] = {bytes, true, false};
    free_.push_back(p);  // resident ones at the back: take() prefers them
  }
  return ok;
}

std::uint8_t* BufferPool::take(std::size_t* size) {
  std::lock_guard g(mu_);
  if (size) *size = 0;
  if (size_ == 0) return nullptr;
  std::uint8_t* p = nullptr;
  if (!free_.empty()) {
    p = free_.back();
    free_.pop_back();
  } else {
    const std::size_t bytes = mapped_bytes(size_);
    p = map(bytes, /*populate=*/false);
    if (!p) return nullptr;
    known_[p] = {bytes, false, false};
    ++extra_;
  }
  known_.at(p).out = true;
  ++takes_;
  if (size) *size = size_;
  return p;
}

void BufferPool::give(std::uint8_t* buffer, std::size_t size, std::size_t used) {
  if (!buffer) return;
  std::lock_guard g(mu_);
  auto it = known_.find(buffer);
  if (it == known_.end()) return;  // not one of ours (never: CUPTI returns what it was given)
  Entry& e = it->second;
  e.out = false;
  const bool keep = e.bytes == mapped_bytes(size_) && size == size_ && free_.size() < kMaxPooled;
  if (!keep) {
    unmap(buffer, e.bytes);
    known_.erase(it);
    return;
  }
  if (e.resident) {
    zero_used(buffer, e.bytes, used);  // stays touched: no page fault when CUPTI writes it again
    free_.push_back(buffer);
  } else {
    // Not one of the reserved buffers: give its pages back (they read as zero
    // again), keep the address range for the next time CUPTI needs one.
    if (::madvise(buffer, e.bytes, MADV_DONTNEED) != 0) zero_used(buffer, e.bytes, used);
    free_.insert(free_.begin(), buffer);  // behind the resident ones
  }
}

void BufferPool::clear() {
  std::lock_guard g(mu_);
  for (std::uint8_t* p : free_) {
    unmap(p, known_.at(p).bytes);
    known_.erase(p);
  }
  free_.clear();
  size_ = 0;  // buffers still out no longer match: unmapped when they come back
}

std::size_t BufferPool::size() const {
  std::lock_guard g(mu_);
  return size_;
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard g(mu_);
  Stats s;
  s.size = size_;
  s.mapped = known_.size();
  for (const auto& [p, e] : known_) {
    s.resident += e.resident ? 1 : 0;
    s.out += e.out ? 1 : 0;
  }
  s.takes = takes_;
  s.extra = extra_;
  return s;
}

}  // namespace tilejit::profiler::cupti
