#include "compiler/codegen/graph_replay.h"

namespace kforge::codegen {
namespace {

// The rule for kAuto, from bench/graph_probe.py on the H200 (bench/RESULTS.md): a launch from the
// generated forward costs the host about kHostLaunchUs (ResNet18: 4.9 ms a call for 159 launches
// of 1.5 ms of kernels; replayed, 1.64 ms), and even LeNet-5's 7 launches gained 1.47x; a replay
// adds a copy of every input and output on the GPU, at about kCopyBytesPerUs (ShuffleNet's unit,
// 481 MB in and out, lost 0.65 ms a call to them and ran 0.90x of direct launches). A forward
// replays when it launches at least kMinLaunches times and its copies cost less than a quarter
// of the host time the graph saves. Below kMinLaunches, down to kMinMeasuredLaunches, whether a
// replay pays depends on whether the host or the GPU bounds the call: relpos attention at T = 256
// (four launches, 0.115 ms of kernels) took 0.302 ms a call with direct launches and 0.129 ms
// replayed (bench/RESULTS.md, fifteenth session); a forward whose kernels take milliseconds hides
// the same host work behind them. Those are measured (kMeasure).
constexpr int kMinLaunches = 6;
constexpr int kMinMeasuredLaunches = 2;
constexpr double kHostLaunchUs = 30.0;
constexpr double kCopyBytesPerUs = 1.5e6;  // read and write at about 3 TB/s

}  // namespace

bool ParseGraphReplay(const std::string& text, GraphReplay& out) {
  if (text == "auto") out = GraphReplay::kAuto;
  else if (text == "always") out = GraphReplay::kAlways;
  else if (text == "never") out = GraphReplay::kNever;
  else return false;
  return true;
}

const char* ToString(GraphReplay mode) {
  switch (mode) {
    case GraphReplay::kAuto: return "auto";
    case GraphReplay::kAlways: return "always";
    case GraphReplay::kNever: return "never";
  }
  return "auto";
}

ReplayChoice ChooseReplay(GraphReplay mode, const ForwardShape& shape) {
  if (mode != GraphReplay::kAuto) return mode == GraphReplay::kAlways ? ReplayChoice::kReplay : ReplayChoice::kDirect;
  if (shape.launches < kMinMeasuredLaunches) return ReplayChoice::kDirect;
  const double copy_us = static_cast<double>(shape.copy_bytes) / kCopyBytesPerUs;
  if (copy_us * 4 >= shape.launches * kHostLaunchUs) return ReplayChoice::kDirect;
  return shape.launches >= kMinLaunches ? ReplayChoice::kReplay : ReplayChoice::kMeasure;
}

bool ReplaysAsGraph(GraphReplay mode, const ForwardShape& shape) {
  return ChooseReplay(mode, shape) == ReplayChoice::kReplay;
}

void EmitGraphReplayHelper(SourceWriter& out) {
  out.Lines(R"PY(class KfGraphReplay:
    """Replays a module's forward as one CUDA graph on the current stream.

    For each input signature (shapes, strides, dtypes, devices and non-tensor values) the first
    call runs the kernels directly (Triton compiles and tunes them then), the second captures
    them into a graph over static copies of the inputs, and every call copies its inputs into
    those, replays the graph on the current stream and returns clones of its outputs: fresh
    inputs give fresh results, and no call's outputs are overwritten by a later one. A graph
    reads parameters and buffers where they were at capture; when one has moved (module.to(),
    an assigned .data) the graph is captured again. Off the GPU, or inside another capture,
    forward runs directly."""

    def __init__(self):
        self.entries = {}  # signature -> None once warmed up, then (replay, inputs, outputs, state addresses)
        self.state = None  # the module's parameters and buffers, listed at the first capture

    def capturable(self, inputs):
        tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
        return bool(tensors) and all(x.is_cuda for x in tensors) and not torch.cuda.is_current_stream_capturing()

    def capture(self, forward, inputs):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, capture_error_mode="thread_local"):
            outputs = forward(*inputs)
        return graph.replay, outputs

    def __call__(self, module, forward, inputs):
        if not self.capturable(inputs):
            return forward(*inputs)
        key = tuple((tuple(x.shape), x.stride(), x.dtype, x.device) if isinstance(x, torch.Tensor) else (type(x), x)
                    for x in inputs)
        if key not in self.entries:
            self.entries[key] = None
            return forward(*inputs)
        if self.state is None:
            self.state = list(module.parameters()) + list(module.buffers())
        addresses = [t.data_ptr() for t in self.state]
        entry = self.entries[key]
        if entry is None or entry[3] != addresses:
            static = [torch.empty_like(x).copy_(x) if isinstance(x, torch.Tensor) else x for x in inputs]
            replay, outputs = self.capture(forward, static)
            entry = self.entries[key] = (replay, static, outputs, addresses)
        replay, static, outputs, _ = entry
        for target, x in zip(static, inputs):
            if isinstance(x, torch.Tensor):
                target.copy_(x)
        replay()
        if isinstance(outputs, torch.Tensor):
            return outputs.clone()
        return type(outputs)(y.clone() if isinstance(y, torch.Tensor) else y for y in outputs))PY");
  out.Blank();
  out.Blank();
}

}  // namespace kforge::codegen
