#include "agents/check_explanations.h"

#include <map>

namespace kforge {
namespace {

// check -> why the rule exists and what an honest candidate does instead.
const std::map<std::string, std::string>& Explanations() {
  static const std::map<std::string, std::string> explanations = {
      {"memoization",
       "Every call must compute its output from the values of its inputs. The evaluator rewrites input tensors in "
       "place and calls again; a cache keyed on addresses, shapes or sampled values returns a stale answer. Do not "
       "keep outputs or input-dependent results between calls."},
      {"nondeterministic",
       "The same inputs must give the same (correct) result every time. Avoid races: no unsynchronised atomics whose "
       "order changes the result beyond tolerance, no reads of memory another program may still be writing."},
      {"timed_output_mismatch",
       "Timed calls are checked too: they must compute the same function as the checked calls. Do not change "
       "behaviour after the first calls or depending on how often forward ran."},
      {"library_compute",
       "Strict mode measures the candidate's own kernels: every FLOP of the forward pass must run in kernels you "
       "wrote (Triton or CUDA). Replace the torch/cuBLAS/cuDNN/ATen compute calls on the hot path with your own "
       "kernels; torch may only allocate outputs (torch.empty, empty_like) and reshape views."},
      {"roofline",
       "The measured time is below what moving the required bytes (or doing the required FLOPs) at the GPU's peak "
       "could take, so the work cannot all have been done inside the timed call. Compute everything inside forward, "
       "on the current stream."},
      {"side_stream",
       "Work launched on another stream (or left running past the end of forward) escapes the timer. Launch every "
       "kernel on the current stream and make no other streams."},
      {"timer_tamper",
       "Timing is the evaluator's job; a candidate that touches timers, events or the profiler makes every "
       "measurement worthless. Remove anything that reads or replaces clocks or CUDA events."},
      {"timer",
       "A kernel has no business measuring time; timing is the evaluator's job. Remove the clock, timer, event or "
       "profiler use (triton.testing included)."},
      {"threads",
       "Work on another thread, process or stream can escape the timer. Launch kernels on the current stream from "
       "the calling thread; a CUDA graph (torch.cuda.CUDAGraph) replayed on the current stream is allowed."},
      {"background_thread",
       "Threads left running after forward returns can keep working outside the timer. Start no threads."},
      {"input_mutation",
       "Inputs must be unchanged after the call: the caller may reuse them. Write results into fresh output "
       "tensors, never into an input."},
      {"output_aliasing",
       "Each output must be a fresh tensor: not an input, a parameter, a view of one, or a buffer reused from an "
       "earlier call. Allocate outputs inside forward (torch.empty / empty_like)."},
      {"output_type",
       "Outputs must be plain dense torch.Tensors on the task's device with the reference's layout: no tensor "
       "subclasses, lazy proxies or strided views."},
      {"global_state",
       "Precision flags, RNG state, default dtype and device, the current stream and thread counts must stay as "
       "the evaluator set them: changing them changes what the reference and the timer see. Leave them alone; "
       "seeding is the evaluator's job."},
      {"monkeypatch",
       "Patching code or attributes the candidate does not own changes what the evaluator or the reference "
       "computes. Keep state on self or on your own classes."},
      {"reference_model",
       "A candidate computes the result itself; it never sees the reference Model, the task file or its "
       "get_inputs()."},
      {"fallback_handler",
       "A failing kernel must fail visibly: an exception handler may re-raise or retry your own kernel, never fall "
       "back to PyTorch compute."},
      {"process_exit",
       "forward must return its output; exiting, killing or signalling the process is not allowed."},
      {"frame_inspection",
       "Inspecting frames, modules or builtins, or running dynamically built code, reaches state outside the "
       "candidate or hides code from review; kernels need none of it."},
      {"subprocess", "Candidates may not run other programs or talk to the network."},
      {"file_io",
       "Outputs must be computed, not loaded: a candidate may not read or write files (the task, cached results, "
       "anything)."},
      {"file_tamper",
       "A candidate may not touch files outside its own folder: the inputs, the reference and the evaluator's "
       "files are off limits."},
      {"result_tamper",
       "The evaluator's report of the candidate's outputs must reach it as the harness wrote it: every checked "
       "call's outputs, well described. Dropping or rewriting them hides the calls that would fail."},
  };
  return explanations;
}

}  // namespace

std::string WhyNotAllowed(const std::string& check) {
  auto it = Explanations().find(check);
  if (it != Explanations().end()) return it->second;
  return "The evaluator only accepts a program that computes the task's outputs honestly inside forward, with its "
         "own kernels, on fresh inputs every call; this check found something that breaks that.";
}

}  // namespace kforge
