// tilejit — fast GPU tile kernels written in C++ (Triton's model, C++ types).
// One include for users: the DSL, tracing, compilation and launch.
#pragma once
#include "tilejit/core/dtype.hpp"
#include "tilejit/core/error.hpp"
#include "tilejit/lang/control.hpp"
#include "tilejit/lang/descriptor.hpp"
#include "tilejit/lang/events.hpp"
#include "tilejit/lang/ops.hpp"
#include "tilejit/lang/tile.hpp"
#include "tilejit/lang/trace.hpp"
#include "tilejit/runtime/device.hpp"
#include "tilejit/runtime/kernel.hpp"
#include "tilejit/profiler/profiler.hpp"
