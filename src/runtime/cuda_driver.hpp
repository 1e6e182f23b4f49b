// src/runtime/cuda_driver.hpp — the CUDA driver API, dlopen'ed from
// libcuda.so.1 (private to the runtime). Entry points come from
// cuGetProcAddress with the CUDA 12.0 ABI, so the versioned (_v2 ...) symbol a
// name stood for in 12.0 is used whatever the installed driver.
#pragma once
#include <cuda.h>

#include <string>
#include <utility>

namespace tilejit::runtime::detail {

struct CudaDriver {
  // Members are named apart from the API so that cuda.h's macros
  // (cuMemAlloc -> cuMemAlloc_v2 ...) do not rename them.
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuMemAlloc) mem_alloc = nullptr;
  decltype(&::cuMemFree) mem_free = nullptr;
  decltype(&::cuMemcpyHtoD) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH) memcpy_dtoh = nullptr;
  decltype(&::cuMemcpyDtoDAsync) memcpy_dtod_async = nullptr;
  decltype(&::cuMemsetD8) memset_d8 = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy) stream_destroy = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;  // optional: may stay null
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;  // optional: may stay null

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
  std::string describe(CUresult r) const;
  /// Throws DriverError "<call> failed: <name> (<string>)" unless r == CUDA_SUCCESS.
  void check(CUresult r, const char* call) const;
  /// check(fn(args...), call).
  template <class F, class... A>
  void call(const char* call_name, F fn, A&&... args) const {
    check(fn(std::forward<A>(args)...), call_name);
  }
};

/// The loaded driver with cuInit(0) done, or nullptr with the reason in *why
/// (no libcuda.so.1, missing entry points, cuInit failed e.g. no GPU). Loads
/// once per process; thread-safe; never throws except std::bad_alloc.
const CudaDriver* cuda_driver(std::string* why = nullptr);

}  // namespace tilejit::runtime::detail
