#include "compiler/ir/ir_check.h"

#include <cstdio>
#include <cstdlib>

namespace kforge::ir {

void IrCheckFailed(const char* condition, const char* message, const char* file, int line) {
  std::fprintf(stderr, "kforge internal error (IR): %s [%s] at %s:%d\n", message, condition, file, line);
  std::abort();
}

}  // namespace kforge::ir
