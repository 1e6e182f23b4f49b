// Must NOT compile: a constexpr layout mapping a radix-3 input digit onto a
// radix-2 output digit (fact 13) is rejected during constant evaluation.
#include <tilejit/layout/linear_layout.hpp>
namespace L = tilejit::layout;
constexpr L::LinearLayout bad = L::LinearLayout::from_images(
    {{"register", L::DigitSystem{3}, {L::Image{1, 0, 0, 0}}}},
    {{"dim0", L::DigitSystem{2, 2}}});
int main() { return bad.num_in_dims(); }
