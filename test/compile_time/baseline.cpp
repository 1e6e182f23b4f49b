#include "tilejit/layout/blocked.hpp"
#include "tilejit/layout/conversion.hpp"
#include "tilejit/layout/encodings/encodings.hpp"
int main() { return 0; }
