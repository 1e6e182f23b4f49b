// tilejit/runtime/device.hpp — devices: CUDA (driver API, dlopen'ed libcuda),
// HIP (dlopen'ed libamdhip64) and the CPU interpreter.
//
// Nothing here links against a GPU library: a program built with tilejit
// starts on a machine with no GPU, and Device::best() then returns the
// interpreter. Device memory of the interpreter is ordinary host memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tilejit/runtime/jit.hpp"

namespace tilejit::runtime {

enum class Backend { cuda, hip, interpreter };
std::string to_string(Backend b);

/// Loaded module + kernel function handle (opaque; owned by the Device).
struct Function {
  void* handle = nullptr;   // CUfunction / hipFunction_t
  void* module = nullptr;   // CUmodule / hipModule_t
};

/// A stream of the device; `handle == nullptr` is the default stream.
struct Stream {
  void* handle = nullptr;
};

/// Launch geometry: grid in programs (CTAs), block in threads, dynamic shared memory in bytes.
struct LaunchDims {
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned shared_bytes = 0;
};

class Device {
 public:
  /// TILEJIT_INTERPRET=1 -> interpreter; else the first CUDA GPU; else the
  /// first HIP GPU; else the interpreter. Never throws.
  static Device best();
  /// Throws DeviceUnavailable (no libcuda, no GPU, bad ordinal) with the reason.
  static Device cuda(int ordinal = 0);
  /// Throws DeviceUnavailable (no libamdhip64, no AMD GPU, bad ordinal) with the reason.
  static Device hip(int ordinal = 0);
  /// The CPU interpreter: runs the IR directly (no JIT, no GPU); always available.
  static Device interpreter();
  /// Why no CUDA GPU is usable ("" when one is).
  static std::string cuda_unavailable_reason();

  Backend backend() const;
  int ordinal() const;
  std::string name() const;        // "NVIDIA H200", "CPU interpreter"
  std::string arch() const;        // JIT target: "sm_90a" for cc 9.0, "sm_80", "gfx942"; "" for the interpreter
  int compute_capability() const;  // 90 for sm_90; 0 otherwise
  int warp_size() const;           // 32 (NVIDIA), 64 (CDNA), 32 for the interpreter
  int num_sms() const;             // multiprocessors / compute units (CPU threads for the interpreter)
  std::size_t max_shared_bytes_per_block() const;  // bytes a program may use with opt-in (227 KiB on the H200)
  std::string driver_version() const;  // part of cache keys

  // Memory, sizes in bytes. Throws DriverError on failure, InvalidArgument on
  // bad arguments (a null pointer for a non-empty copy, a memset byte outside
  // 0..255). alloc(0) returns nullptr and free(nullptr) does nothing, on every
  // backend; interpreter allocations are 64-byte aligned host memory, and its
  // free throws InvalidArgument for a pointer alloc did not return or that was
  // freed already.
  void* alloc(std::size_t bytes) const;
  void free(void* p) const;
  void copy_to_device(void* dst, const void* src, std::size_t bytes) const;
  void copy_to_host(void* dst, const void* src, std::size_t bytes) const;
  /// Asynchronous on stream `s` (the interpreter copies at once).
  void copy_device_to_device(void* dst, const void* src, std::size_t bytes, Stream s = {}) const;
  void memset(void* p, int byte, std::size_t bytes) const;
  void synchronize() const;

  // Streams and timing events. The interpreter runs synchronously: its stream
  // is the null default stream and its events read the host clock.
  /// A new stream (CU_STREAM_DEFAULT: ordered with the legacy default stream); throws DriverError on failure.
  /// destroy_stream(s) after its work is done.
  Stream create_stream() const;
  void destroy_stream(Stream s) const;
  /// Runs `n` back-to-back copies of `bytes` on `s` and returns the time in ms measured with events.
  float time_copies(void* dst, const void* src, std::size_t bytes, int n) const;

  // Modules and launches (GPU backends; the interpreter throws Unsupported
  // after validating arguments, since it executes IR, not machine code).
  Function load(const Binary& bin, const std::string& kernel_name) const;
  /// Raise the dynamic shared memory limit of `f` when `bytes` > 48 KiB.
  /// InvalidArgument when `bytes` > max_shared_bytes_per_block().
  void set_max_dynamic_shared(Function f, unsigned bytes) const;
  /// `args` is the usual array of pointers to each argument value. Throws
  /// InvalidArgument (naming the value) for a grid or block dimension of 0, a
  /// block of more than 1024 threads, too much shared memory or an empty `f`.
  void launch(Function f, const LaunchDims& d, Stream s, void** args) const;

  // Event timing helpers for benchmarks.
  struct Timer;
  /// Records start on `s`, runs fn(), records stop, synchronizes; returns ms.
  template <class F>
  float time_ms(Stream s, F&& fn) const;
  /// Timing events (opaque handles): create, record on a stream, read the milliseconds between two recorded
  /// events (waits for `stop`), destroy. DriverError on failure.
  void* event_create() const;
  void event_destroy(void* e) const;
  void event_record(void* e, Stream s) const;
  float event_elapsed_ms(void* start, void* stop) const;  // synchronizes on stop

  struct Impl;
  explicit Device(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  bool operator==(const Device& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

template <class F>
float Device::time_ms(Stream s, F&& fn) const {
  void* a = event_create();
  void* b = event_create();
  event_record(a, s);
  fn();
  event_record(b, s);
  float ms = event_elapsed_ms(a, b);
  event_destroy(a);
  event_destroy(b);
  return ms;
}

}  // namespace tilejit::runtime
