// src/runtime/hip_driver.hpp — the HIP runtime API, dlopen'ed from
// libamdhip64 (private to the runtime).
#pragma once
#include <hip/hip_runtime_api.h>

#include <string>
#include <utility>

namespace tilejit::runtime::detail {

struct HipDriver {
  decltype(&::hipInit) init = nullptr;
  decltype(&::hipDriverGetVersion) driver_get_version = nullptr;
  decltype(&::hipRuntimeGetVersion) runtime_get_version = nullptr;
  decltype(&::hipGetDeviceCount) get_device_count = nullptr;
  decltype(&::hipSetDevice) set_device = nullptr;
  // The pre-ROCm-6 ABI of hipDeviceProp_t; callers pass a buffer larger than
  // sizeof(hipDeviceProp_t) in case a library fills a longer struct.
  hipError_t (*get_device_properties)(hipDeviceProp_t*, int) = nullptr;
  decltype(&::hipDeviceSynchronize) device_synchronize = nullptr;
  decltype(&::hipModuleLoadData) module_load_data = nullptr;
  decltype(&::hipModuleGetFunction) module_get_function = nullptr;
  decltype(&::hipModuleLaunchKernel) module_launch_kernel = nullptr;
  hipError_t (*mem_alloc)(void**, size_t) = nullptr;
  hipError_t (*mem_free)(void*) = nullptr;
  decltype(&::hipMemcpy) mem_copy = nullptr;
  decltype(&::hipMemcpyAsync) mem_copy_async = nullptr;
  decltype(&::hipMemset) mem_set = nullptr;
  decltype(&::hipStreamCreate) stream_create = nullptr;
  decltype(&::hipStreamDestroy) stream_destroy = nullptr;
  decltype(&::hipEventCreate) event_create = nullptr;
  decltype(&::hipEventRecord) event_record = nullptr;
  decltype(&::hipEventSynchronize) event_synchronize = nullptr;
  decltype(&::hipEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::hipEventDestroy) event_destroy = nullptr;
  decltype(&::hipGetErrorName) get_error_name = nullptr;
  decltype(&::hipGetErrorString) get_error_string = nullptr;

  /// "hipErrorOutOfMemory (out of memory)".
  std::string describe(hipError_t r) const;
  /// Throws DriverError "<call> failed: <name> (<string>)" unless r == hipSuccess.
  void check(hipError_t r, const char* call) const;
  template <class F, class... A>
  void call(const char* call_name, F fn, A&&... args) const {
    check(fn(std::forward<A>(args)...), call_name);
  }
};

/// The loaded HIP runtime with hipInit(0) done, or nullptr with the reason in
/// *why. Without /dev/kfd (no AMD GPU driver) the library is not even loaded:
/// initialising ROCm there is slow at best. Loads once; thread-safe.
const HipDriver* hip_driver(std::string* why = nullptr);

}  // namespace tilejit::runtime::detail
