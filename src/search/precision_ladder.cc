#include "search/precision_ladder.h"

namespace kforge {

std::string DotPrecisionStep::Label() const {
  return gemm == attention ? gemm : gemm + ", attention " + attention;
}

std::vector<DotPrecisionStep> DotPrecisionLadder(Precision precision, bool on_cpu) {
  if (precision == Precision::kTf32) return {{"tf32", "tf32"}};
  if (on_cpu) return {{"ieee", "ieee"}};
  return {{"tf32x3", "tf32x3"}, {"tf32x3", "ieee"}, {"ieee", "ieee"}};
}

bool WorthTheNextStep(bool wrong_output, bool uses_dot) { return wrong_output && uses_dot; }

}  // namespace kforge
