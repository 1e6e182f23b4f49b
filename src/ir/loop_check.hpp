// src/ir/loop_check.hpp — for_range's overflow rule (lang/control.hpp) checked at launch, private to the library.
#pragma once
#include <optional>
#include <string>

#include "tilejit/ir/cost.hpp"

namespace tilejit::ir {

/// The first loop of `plan` whose bounds, evaluated for this launch (arguments, descriptor shapes, the grid,
/// constants; see CostInputs), break for_range's rule hi + step - 1 <= 2^31 - 1 — its i32 induction variable could
/// pass INT32_MAX and wrap, a loop that never ends on a GPU — described; nullopt when every loop whose bounds can be
/// evaluated keeps it. Bounds computed inside the kernel are not known here (the interpreter checks them as it runs).
std::optional<std::string> loop_overflow(const CostPlan& plan, const Kernel& k, const CostInputs& in);

}  // namespace tilejit::ir
