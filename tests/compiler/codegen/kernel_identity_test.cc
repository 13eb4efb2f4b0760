// Kernels that differ only in their own names and comments are one kernel; anything else they
// compute differently keeps them apart.
#include "compiler/codegen/kernel_identity.h"

#include <gtest/gtest.h>

#include <string>

namespace kforge::codegen {
namespace {

std::string Kernel(const std::string& name, const std::string& out, const std::string& op, int size,
                   const std::string& comment) {
  return "# Tuning key of " + name + ": " + comment + "\n@triton.jit\ndef " + name + "(x_ptr, " + out +
         "_ptr, BLOCK: tl.constexpr):\n    # Computes %" + out + ".\n    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    " +
         out + " = tl." + op + "(tl.load(x_ptr + i, mask=i < " + std::to_string(size) + "), 0.0)  # " + comment +
         "\n    tl.store(" + out + "_ptr + i, " + out + ", mask=i < " + std::to_string(size) + ")\n";
}

TEST(KernelIdentityTest, KernelsDifferingInNamesAndCommentsAreOne) {
  EXPECT_EQ(CanonicalKernel(Kernel("pointwise_relu", "relu", "maximum", 4096, "abc"), "pointwise_relu"),
            CanonicalKernel(Kernel("pointwise_relu_7", "relu_7", "maximum", 4096, "xyz"), "pointwise_relu_7"));
}

TEST(KernelIdentityTest, AnotherSizeOrOperationIsAnotherKernel) {
  const std::string relu = CanonicalKernel(Kernel("k", "relu", "maximum", 4096, ""), "k");
  EXPECT_NE(relu, CanonicalKernel(Kernel("k2", "relu_2", "maximum", 2048, ""), "k2"));
  EXPECT_NE(relu, CanonicalKernel(Kernel("k3", "relu_3", "minimum", 4096, ""), "k3"));
}

// Names the kernel does not bind (helpers, attributes) are what they are, not placeholders.
TEST(KernelIdentityTest, CalledHelpersAreKept) {
  const std::string a = "@triton.jit\ndef k(x_ptr):\n    y = _kf_tanh(tl.load(x_ptr))\n    tl.store(x_ptr, y)\n";
  const std::string b = "@triton.jit\ndef k(x_ptr):\n    y = _kf_expm1(tl.load(x_ptr))\n    tl.store(x_ptr, y)\n";
  EXPECT_NE(CanonicalKernel(a, "k"), CanonicalKernel(b, "k"));
  EXPECT_NE(CanonicalKernel(a, "k").find("_kf_tanh"), std::string::npos);
}

// A '#' inside a string literal is not a comment.
TEST(KernelIdentityTest, HashInsideAStringIsKept) {
  const std::string a = "def k(x):\n    y = f(\"a#b\")\n";
  const std::string b = "def k(x):\n    y = f(\"a#c\")\n";
  EXPECT_NE(CanonicalKernel(a, "k"), CanonicalKernel(b, "k"));
}

}  // namespace
}  // namespace kforge::codegen
