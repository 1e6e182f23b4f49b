// src/runtime/device.cpp — Device: argument checks, backend choice and the
// interpreter backend (host memory, host-clock events).
#include "tilejit/runtime/device.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <mutex>
#include <thread>
#include <map>
#include <optional>
#include <utility>

#include "device_impl.hpp"
#include "launch_check.hpp"

namespace tilejit::runtime {

std::string to_string(Backend b) {
  switch (b) {
    case Backend::cuda: return "cuda";
    case Backend::hip: return "hip";
    case Backend::interpreter: return "interpreter";
  }
  return "unknown";
}

namespace detail {

void validate_launch(const LaunchDims& d, unsigned max_threads) {
  static constexpr char kAxis[] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; ++i) {
    if (d.grid[i] < 1)
      throw InvalidArgument(fmt::format("launch grid.{} is {}: every grid dimension must be >= 1", kAxis[i], d.grid[i]));
    if (d.block[i] < 1)
      throw InvalidArgument(fmt::format("launch block.{} is {}: every block dimension must be >= 1", kAxis[i], d.block[i]));
  }
  const std::uint64_t threads = std::uint64_t(d.block[0]) * d.block[1] * d.block[2];
  if (threads > max_threads)
    throw InvalidArgument(fmt::format("launch block {}x{}x{} has {} threads: at most {} are allowed", d.block[0],
                                      d.block[1], d.block[2], threads, max_threads));
}

}  // namespace detail

namespace {

// Host-memory device. alloc(0) returns nullptr (as on every backend); other
// allocations are 64-byte aligned.
struct InterpreterImpl final : Device::Impl {
  using Clock = std::chrono::steady_clock;
  struct Event {
    Clock::time_point t;
  };

  InterpreterImpl() {
    name = "CPU interpreter";
    driver_version = "interpreter";
    num_sms = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  void* alloc(std::size_t bytes) override {
    constexpr std::size_t align = 64;
    if (bytes > SIZE_MAX - align)
      throw InvalidArgument(fmt::format("alloc of {} bytes is larger than the address space", bytes));
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw DriverError(fmt::format("aligned_alloc of {} bytes failed: out of host memory", bytes),
                              "aligned_alloc", ENOMEM);
    try {
      std::lock_guard lock(mu_);
      live_.emplace(reinterpret_cast<std::uintptr_t>(p), bytes);
    } catch (...) {
      std::free(p);
      throw;
    }
    return p;
  }
  /// Frees only what alloc returned and has not freed (std::free of anything else is undefined: glibc aborts);
  /// the GPU drivers refuse such a pointer too.
  void free(void* p) override {
    {
      std::lock_guard lock(mu_);
      if (live_.erase(reinterpret_cast<std::uintptr_t>(p)) == 0)
        throw InvalidArgument(fmt::format("free of {}: not a live allocation of the CPU interpreter (freed twice, or memory "
                                          "alloc did not return)", p));
    }
    std::free(p);
  }
  void copy_to_device(void* dst, const void* src, std::size_t n) override {
    within(dst, n, "copy_to_device destination");
    std::memmove(dst, src, n);
  }
  void copy_to_host(void* dst, const void* src, std::size_t n) override {
    within(src, n, "copy_to_host source");
    std::memmove(dst, src, n);
  }
  void copy_device_to_device(void* dst, const void* src, std::size_t n, Stream) override {
    within(dst, n, "copy_device_to_device destination");
    within(src, n, "copy_device_to_device source");
    std::memmove(dst, src, n);
  }
  void memset(void* p, int byte, std::size_t n) override {
    within(p, n, "memset destination");
    std::memset(p, byte, n);
  }
  /// Throws InvalidArgument when [p, p + n) starts inside one of alloc's allocations and runs past its end (a GPU
  /// driver refuses such a copy; here it would overwrite the host heap). Memory alloc did not return (host memory
  /// the interpreter is handed directly, as kernels may be) is the caller's to size.
  void within(const void* p, std::size_t n, const char* what) {
    const auto a = allocation_of(reinterpret_cast<std::uintptr_t>(p));
    if (!a) return;
    const std::size_t offset = reinterpret_cast<std::uintptr_t>(p) - a->first;
    if (n > a->second - offset)
      throw InvalidArgument(fmt::format("{}: {} bytes at byte offset {} of an interpreter allocation of {} bytes ({}) run {} bytes "
                                        "past its end", what, n, offset, a->second, reinterpret_cast<const void*>(a->first),
                                        n - (a->second - offset)));
  }
  void synchronize() override {}
  Stream create_stream() override { return {}; }  // everything runs synchronously
  void destroy_stream(Stream) override {}
  void* event_create() override { return new Event{Clock::now()}; }
  void event_destroy(void* e) override { delete static_cast<Event*>(e); }
  void event_record(void* e, Stream) override { static_cast<Event*>(e)->t = Clock::now(); }
  float event_elapsed_ms(void* a, void* b) override {
    return std::chrono::duration<float, std::milli>(static_cast<Event*>(b)->t - static_cast<Event*>(a)->t).count();
  }
  Function load(const Binary& bin, const std::string&) override {
    throw Unsupported(fmt::format("the interpreter cannot load a {} binary: it executes traced IR, not machine code",
                                  bin.format));
  }
  void set_max_dynamic_shared(Function, unsigned) override {}
  void launch(Function, const LaunchDims&, Stream, void**) override {
    throw Unsupported("the interpreter cannot launch compiled kernels: it executes traced IR, not machine code");
  }

  /// The live allocation holding `addr` (begin, bytes asked for), if any.
  std::optional<std::pair<std::uintptr_t, std::size_t>> allocation_of(std::uintptr_t addr) {
    std::lock_guard lock(mu_);
    auto it = live_.upper_bound(addr);
    if (it == live_.begin()) return std::nullopt;
    --it;
    if (addr - it->first >= it->second) return std::nullopt;
    return *it;
  }

  std::mutex mu_;
  std::map<std::uintptr_t, std::size_t> live_;  // alloc's allocations not yet freed: begin -> bytes asked for
};

void check_ptr(const void* p, const char* what, std::size_t bytes) {
  if (!p && bytes > 0) throw InvalidArgument(fmt::format("{} is null for a {}-byte operation", what, bytes));
}

bool interpret_requested() {
  const char* e = std::getenv("TILEJIT_INTERPRET");
  return e && *e && std::string_view(e) != "0";
}

}  // namespace

namespace {
const std::shared_ptr<InterpreterImpl>& interpreter_impl() {
  static const auto impl = std::make_shared<InterpreterImpl>();
  return impl;
}
}  // namespace

Device Device::interpreter() { return Device(interpreter_impl()); }

std::optional<std::pair<std::uintptr_t, std::size_t>> detail::interpreter_allocation(std::uintptr_t addr) {
  return interpreter_impl()->allocation_of(addr);
}

Device Device::cuda(int ordinal) { return Device(detail::make_cuda_device(ordinal)); }
Device Device::hip(int ordinal) { return Device(detail::make_hip_device(ordinal)); }

Device Device::best() {
  try {
    if (interpret_requested()) return interpreter();
    try {
      return cuda(0);
    } catch (const std::exception&) {
    }
    try {
      return hip(0);
    } catch (const std::exception&) {
    }
    return interpreter();
  } catch (...) {
    // Only allocation failure can get here; the interpreter is a static singleton.
    return interpreter();
  }
}

std::string Device::cuda_unavailable_reason() {
  try {
    cuda(0);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

Backend Device::backend() const { return impl_->backend; }
int Device::ordinal() const { return impl_->ordinal; }
std::string Device::name() const { return impl_->name; }
std::string Device::arch() const { return impl_->arch; }
int Device::compute_capability() const { return impl_->compute_capability; }
int Device::warp_size() const { return impl_->warp_size; }
int Device::num_sms() const { return impl_->num_sms; }
std::size_t Device::max_shared_bytes_per_block() const { return impl_->max_shared_bytes_per_block; }
std::string Device::driver_version() const { return impl_->driver_version; }

void* Device::alloc(std::size_t bytes) const { return bytes == 0 ? nullptr : impl_->alloc(bytes); }

void Device::free(void* p) const {
  if (p) impl_->free(p);
}

void Device::copy_to_device(void* dst, const void* src, std::size_t bytes) const {
  check_ptr(dst, "copy_to_device destination", bytes);
  check_ptr(src, "copy_to_device source", bytes);
  if (bytes) impl_->copy_to_device(dst, src, bytes);
}

void Device::copy_to_host(void* dst, const void* src, std::size_t bytes) const {
  check_ptr(dst, "copy_to_host destination", bytes);
  check_ptr(src, "copy_to_host source", bytes);
  if (bytes) impl_->copy_to_host(dst, src, bytes);
}

void Device::copy_device_to_device(void* dst, const void* src, std::size_t bytes, Stream s) const {
  check_ptr(dst, "copy_device_to_device destination", bytes);
  check_ptr(src, "copy_device_to_device source", bytes);
  if (bytes) impl_->copy_device_to_device(dst, src, bytes, s);
}

void Device::memset(void* p, int byte, std::size_t bytes) const {
  check_ptr(p, "memset destination", bytes);
  if (byte < 0 || byte > 255) throw InvalidArgument(fmt::format("memset byte value {} is outside 0..255", byte));
  if (bytes) impl_->memset(p, byte, bytes);
}

void Device::synchronize() const { impl_->synchronize(); }
Stream Device::create_stream() const { return impl_->create_stream(); }

void Device::destroy_stream(Stream s) const {
  if (s.handle) impl_->destroy_stream(s);
}

float Device::time_copies(void* dst, const void* src, std::size_t bytes, int n) const {
  if (n < 1) throw InvalidArgument(fmt::format("time_copies count is {}: it must be >= 1", n));
  check_ptr(dst, "time_copies destination", bytes);
  check_ptr(src, "time_copies source", bytes);
  return time_ms({}, [&] {
    for (int i = 0; i < n; ++i) copy_device_to_device(dst, src, bytes, {});
  });
}

void* Device::event_create() const { return impl_->event_create(); }

void Device::event_destroy(void* e) const {
  if (e) impl_->event_destroy(e);
}

void Device::event_record(void* e, Stream s) const {
  if (!e) throw InvalidArgument("event_record: the event is null");
  impl_->event_record(e, s);
}

float Device::event_elapsed_ms(void* start, void* stop) const {
  if (!start || !stop) throw InvalidArgument("event_elapsed_ms: an event is null");
  return impl_->event_elapsed_ms(start, stop);
}

Function Device::load(const Binary& bin, const std::string& kernel_name) const {
  if (kernel_name.empty()) throw InvalidArgument("load: the kernel name is empty");
  if (bin.bytes.empty()) throw InvalidArgument(fmt::format("load of {}: the binary is empty", kernel_name));
  return impl_->load(bin, kernel_name);
}

void Device::set_max_dynamic_shared(Function f, unsigned bytes) const {
  if (bytes > impl_->max_shared_bytes_per_block)
    throw InvalidArgument(fmt::format("dynamic shared memory of {} bytes exceeds the device limit of {} bytes per block",
                                      bytes, impl_->max_shared_bytes_per_block));
  impl_->set_max_dynamic_shared(f, bytes);
}

void Device::launch(Function f, const LaunchDims& d, Stream s, void** args) const {
  detail::validate_launch(d);
  if (d.shared_bytes > impl_->max_shared_bytes_per_block)
    throw InvalidArgument(fmt::format("launch asks for {} bytes of dynamic shared memory: the limit is {}",
                                      d.shared_bytes, impl_->max_shared_bytes_per_block));
  if (impl_->backend != Backend::interpreter && !f.handle)
    throw InvalidArgument("launch: the Function is empty (load it first)");
  impl_->launch(f, d, s, args);
}

}  // namespace tilejit::runtime
