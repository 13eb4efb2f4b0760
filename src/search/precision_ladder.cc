#include "search/precision_ladder.h"

#include "eval/verdict.h"

namespace kforge {

std::string DotPrecisionStep::Label(bool with_attention) const {
  std::string dots = gemm;
  if (with_attention && inputs() != gemm) {
    const std::string which = values() == inputs() ? "its inputs" : "its q and k inputs";
    dots += ", attention" + (inputs() == attention ? " and " + which + " " + attention : " " + attention + ", " + which + " " + inputs());
  } else if (with_attention && attention != gemm) {
    dots += ", attention " + attention;
  }
  return !cuda && (gemm == "ieee" || (with_attention && attention == "ieee")) ? dots + " (Triton)" : dots;
}

std::vector<DotPrecisionStep> DotPrecisionLadder(Precision precision, bool on_cpu) {
  if (precision == Precision::kTf32) return {{"tf32", "tf32"}};
  if (on_cpu) return {{"ieee", "ieee"}};
  return {{"tf32x3", "tf32x3"},
          {"tf32x3", "ieee"},
          {"bf16x6", "ieee"},
          {.gemm = "bf16x6", .attention = "ieee", .attention_inputs = "ieee"},
          {.gemm = "bf16x6", .attention = "ieee", .attention_inputs = "ieee", .attention_values = "ieee"},
          {"ieee", "ieee"},
          {"ieee", "ieee", /*cuda=*/false}};
}

bool WorthTheNextStep(VerdictKind verdict, bool uses_dot, bool first_step) {
  if (!uses_dot || verdict == VerdictKind::kAccepted) return false;
  return verdict == VerdictKind::kWrongOutput || !first_step;
}

}  // namespace kforge
