// src/runtime/launch_check.hpp — launch-argument validation shared by every
// backend (private to the runtime; tests include it directly).
#pragma once
#include "tilejit/runtime/device.hpp"

namespace tilejit::runtime::detail {

/// Throws InvalidArgument naming the offending value unless every grid and
/// block dimension is at least 1 and the block has at most `max_threads` threads.
void validate_launch(const LaunchDims& d, unsigned max_threads = 1024);

}  // namespace tilejit::runtime::detail
