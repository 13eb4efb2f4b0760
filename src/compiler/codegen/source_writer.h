// Builds generated source text line by line; it owns the indentation, so emitters never count
// spaces. Open("def f():") writes the header and indents until the matching Close(); Indent()
// returns a guard that does the same for a C++ scope.
#pragma once

#include <string>
#include <string_view>

namespace kforge::codegen {

class SourceWriter {
 public:
  explicit SourceWriter(int indent_width = 4) : indent_width_(indent_width) {}

  // One line at the current indentation; an empty `text` writes an empty line.
  void Line(std::string_view text);
  void Blank() { Line(""); }
  // Each line of `block` at the current indentation (for text another writer produced).
  void Lines(std::string_view block);
  // Writes `header` and indents the lines that follow.
  void Open(std::string_view header);
  // Ends the innermost Open or Indent; checked: closing nothing is a bug in the caller.
  void Close();

  class Scope {
   public:
    explicit Scope(SourceWriter& writer) : writer_(&writer) { ++writer_->depth_; }
    Scope(Scope&& other) noexcept : writer_(other.writer_) { other.writer_ = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope() {
      if (writer_ != nullptr) writer_->Close();
    }

   private:
    SourceWriter* writer_;
  };
  // Indents until the returned guard goes out of scope.
  [[nodiscard]] Scope Indent() { return Scope(*this); }

  int depth() const { return depth_; }
  const std::string& text() const { return text_; }

 private:
  int indent_width_;
  int depth_ = 0;
  std::string text_;
};

}  // namespace kforge::codegen
