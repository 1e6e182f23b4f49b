// src/runtime/cuda_driver.cpp — see cuda_driver.hpp.
#include "cuda_driver.hpp"

#include <fmt/format.h>
#include <type_traits>

#include "dl.hpp"
#include "tilejit/core/error.hpp"

namespace tilejit::runtime::detail {

std::string CudaDriver::describe(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (get_error_name) get_error_name(r, &name);
  if (get_error_string) get_error_string(r, &text);
  return fmt::format("{} ({})", name ? name : fmt::format("CUDA error {}", int(r)),
                     text ? text : "no description");
}

void CudaDriver::check(CUresult r, const char* call) const {
  if (r != CUDA_SUCCESS) throw DriverError(fmt::format("{} failed: {}", call, describe(r)), call, int(r));
}

namespace {

struct Loaded {
  CudaDriver drv;
  std::string error;
};

Loaded load() {
  Loaded out;
  const Library& so = open_library({"libcuda.so.1", "libcuda.so"});
  if (!so) {
    out.error = "the CUDA driver (libcuda.so.1) is not installed: " + so.error;
    return out;
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto get_proc = reinterpret_cast<GetProc>(so.symbol("cuGetProcAddress_v2"));
  std::string missing;
  // `symbol` is what cuda.h maps the name to (cuMemAlloc -> cuMemAlloc_v2):
  // the exported symbol whose signature the member's type was taken from.
  auto get = [&](auto& fn, const char* name, const char* symbol, bool required = true) {
    void* p = nullptr;
    CUdriverProcAddressQueryResult status{};
    if (get_proc && get_proc(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) p = nullptr;
    if (!p) p = so.symbol(symbol);  // drivers older than cuGetProcAddress_v2
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    if (!p && required) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  CudaDriver& d = out.drv;
#define TJ_STR2(x) #x
#define TJ_STR(x) TJ_STR2(x)
#define TJ_GET(field, api) get(d.field, #api, TJ_STR(api))
  TJ_GET(get_error_name, cuGetErrorName);
  TJ_GET(get_error_string, cuGetErrorString);
  TJ_GET(init, cuInit);
  TJ_GET(driver_get_version, cuDriverGetVersion);
  TJ_GET(device_get_count, cuDeviceGetCount);
  TJ_GET(device_get, cuDeviceGet);
  TJ_GET(device_get_name, cuDeviceGetName);
  TJ_GET(device_get_attribute, cuDeviceGetAttribute);
  TJ_GET(primary_ctx_retain, cuDevicePrimaryCtxRetain);
  TJ_GET(ctx_set_current, cuCtxSetCurrent);
  TJ_GET(ctx_synchronize, cuCtxSynchronize);
  TJ_GET(module_load_data, cuModuleLoadData);
  TJ_GET(module_get_function, cuModuleGetFunction);
  TJ_GET(func_set_attribute, cuFuncSetAttribute);
  TJ_GET(launch_kernel, cuLaunchKernel);
  TJ_GET(mem_alloc, cuMemAlloc);
  TJ_GET(mem_free, cuMemFree);
  TJ_GET(memcpy_htod, cuMemcpyHtoD);
  TJ_GET(memcpy_dtoh, cuMemcpyDtoH);
  TJ_GET(memcpy_dtod_async, cuMemcpyDtoDAsync);
  TJ_GET(memset_d8, cuMemsetD8);
  TJ_GET(stream_create, cuStreamCreate);
  TJ_GET(stream_destroy, cuStreamDestroy);
  TJ_GET(event_create, cuEventCreate);
  TJ_GET(event_record, cuEventRecord);
  TJ_GET(event_synchronize, cuEventSynchronize);
  TJ_GET(event_elapsed_time, cuEventElapsedTime);
  TJ_GET(event_destroy, cuEventDestroy);
  get(d.tensor_map_encode_tiled, "cuTensorMapEncodeTiled", "cuTensorMapEncodeTiled", /*required=*/false);
  get(d.ctx_get_current, "cuCtxGetCurrent", "cuCtxGetCurrent", /*required=*/false);
#undef TJ_GET
#undef TJ_STR
#undef TJ_STR2
  if (!missing.empty()) {
    out.error = fmt::format("the CUDA driver {} lacks {}", so.path, missing);
    return out;
  }
  if (CUresult r = d.init(0); r != CUDA_SUCCESS) out.error = "cuInit failed: " + d.describe(r);
  return out;
}

}  // namespace

const CudaDriver* cuda_driver(std::string* why) {
  static const Loaded loaded = load();
  if (why) *why = loaded.error;
  return loaded.error.empty() ? &loaded.drv : nullptr;
}

}  // namespace tilejit::runtime::detail
