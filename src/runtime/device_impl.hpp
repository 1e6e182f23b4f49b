// src/runtime/device_impl.hpp — the backend interface behind Device (private
// to the runtime). Device validates arguments, then forwards here.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>

#include "tilejit/runtime/device.hpp"

namespace tilejit::runtime {

namespace detail {
/// The CPU interpreter's live allocation (Device::interpreter().alloc) that holds host address `addr`: its first
/// address and the bytes asked for; nullopt for memory alloc did not return (a std::vector, a stack array).
std::optional<std::pair<std::uintptr_t, std::size_t>> interpreter_allocation(std::uintptr_t addr);
}  // namespace detail

struct Device::Impl {
  virtual ~Impl() = default;

  // Fixed at construction.
  Backend backend = Backend::interpreter;
  int ordinal = 0;
  std::string name, arch, driver_version;
  int compute_capability = 0, warp_size = 32, num_sms = 1;
  std::size_t max_shared_bytes_per_block = 48 * 1024;

  // Arguments are already checked: sizes > 0, pointers non-null, dims valid.
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void memset(void* p, int byte, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  virtual Stream create_stream() = 0;
  virtual void destroy_stream(Stream s) = 0;
  virtual void* event_create() = 0;
  virtual void event_destroy(void* e) = 0;
  virtual void event_record(void* e, Stream s) = 0;
  virtual float event_elapsed_ms(void* start, void* stop) = 0;
  virtual Function load(const Binary& bin, const std::string& kernel_name) = 0;
  virtual void set_max_dynamic_shared(Function f, unsigned bytes) = 0;
  virtual void launch(Function f, const LaunchDims& d, Stream s, void** args) = 0;
};

namespace detail {
/// Backend constructors; throw DeviceUnavailable with the reason.
std::shared_ptr<Device::Impl> make_cuda_device(int ordinal);
std::shared_ptr<Device::Impl> make_hip_device(int ordinal);
}  // namespace detail

}  // namespace tilejit::runtime
