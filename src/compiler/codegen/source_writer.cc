#include "compiler/codegen/source_writer.h"

#include "compiler/ir/ir_check.h"

namespace kforge::codegen {

void SourceWriter::Line(std::string_view text) {
  if (!text.empty()) text_.append(static_cast<size_t>(depth_ * indent_width_), ' ');
  text_.append(text);
  text_.push_back('\n');
}

void SourceWriter::Lines(std::string_view block) {
  while (!block.empty()) {
    size_t end = block.find('\n');
    Line(block.substr(0, end));
    if (end == std::string_view::npos) break;
    block.remove_prefix(end + 1);
  }
}

void SourceWriter::Open(std::string_view header) {
  Line(header);
  ++depth_;
}

void SourceWriter::Close() {
  KFORGE_IR_CHECK(depth_ > 0, "SourceWriter::Close: nothing is open");
  --depth_;
}

}  // namespace kforge::codegen
