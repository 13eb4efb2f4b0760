// Internal invariant checks for the IR. A failing check is a bug in kforge (a pass misused the
// API), never a user error: user input is validated into Status before it reaches these.
#pragma once

namespace kforge::ir {

// Prints the failed condition with its location to stderr and aborts.
[[noreturn]] void IrCheckFailed(const char* condition, const char* message, const char* file, int line);

}  // namespace kforge::ir

#define KFORGE_IR_CHECK(condition, message) \
  ((condition) ? (void)0 : ::kforge::ir::IrCheckFailed(#condition, message, __FILE__, __LINE__))
