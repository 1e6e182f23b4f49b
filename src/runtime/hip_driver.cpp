// src/runtime/hip_driver.cpp — see hip_driver.hpp.
#include "hip_driver.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <type_traits>

#include "dl.hpp"
#include "tilejit/core/error.hpp"

namespace tilejit::runtime::detail {

std::string HipDriver::describe(hipError_t r) const {
  const char* name = get_error_name ? get_error_name(r) : nullptr;
  const char* text = get_error_string ? get_error_string(r) : nullptr;
  return fmt::format("{} ({})", name ? name : fmt::format("HIP error {}", int(r)), text ? text : "no description");
}

void HipDriver::check(hipError_t r, const char* call) const {
  if (r != hipSuccess) throw DriverError(fmt::format("{} failed: {}", call, describe(r)), call, int(r));
}

namespace {

struct Loaded {
  HipDriver drv;
  std::string error;
};

Loaded load() {
  Loaded out;
  if (::access("/dev/kfd", R_OK | W_OK) != 0) {
    out.error = "no AMD GPU driver: /dev/kfd is missing or not accessible";
    return out;
  }
  const Library& so = open_library({"libamdhip64.so.5", "libamdhip64.so.6", "libamdhip64.so"});
  if (!so) {
    out.error = "the HIP runtime (libamdhip64) is not installed: " + so.error;
    return out;
  }
  std::string missing;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(so.symbol(name));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  HipDriver& d = out.drv;
  get(d.get_error_name, "hipGetErrorName");
  get(d.get_error_string, "hipGetErrorString");
  get(d.init, "hipInit");
  get(d.driver_get_version, "hipDriverGetVersion");
  get(d.runtime_get_version, "hipRuntimeGetVersion");
  get(d.get_device_count, "hipGetDeviceCount");
  get(d.set_device, "hipSetDevice");
  get(d.get_device_properties, "hipGetDeviceProperties");  // the old ABI, also in ROCm 6
  get(d.device_synchronize, "hipDeviceSynchronize");
  get(d.module_load_data, "hipModuleLoadData");
  get(d.module_get_function, "hipModuleGetFunction");
  get(d.module_launch_kernel, "hipModuleLaunchKernel");
  get(d.mem_alloc, "hipMalloc");
  get(d.mem_free, "hipFree");
  get(d.mem_copy, "hipMemcpy");
  get(d.mem_copy_async, "hipMemcpyAsync");
  get(d.mem_set, "hipMemset");
  get(d.stream_create, "hipStreamCreate");
  get(d.stream_destroy, "hipStreamDestroy");
  get(d.event_create, "hipEventCreate");
  get(d.event_record, "hipEventRecord");
  get(d.event_synchronize, "hipEventSynchronize");
  get(d.event_elapsed_time, "hipEventElapsedTime");
  get(d.event_destroy, "hipEventDestroy");
  if (!missing.empty()) {
    out.error = fmt::format("the HIP runtime {} lacks {}", so.path, missing);
    return out;
  }
  if (hipError_t r = d.init(0); r != hipSuccess) out.error = "hipInit failed: " + d.describe(r);
  return out;
}

}  // namespace

const HipDriver* hip_driver(std::string* why) {
  static const Loaded loaded = load();
  if (why) *why = loaded.error;
  return loaded.error.empty() ? &loaded.drv : nullptr;
}

}  // namespace tilejit::runtime::detail
