// Tile configurations measured on the GPU for generated kernels. A generated source names each
// autotuned kernel's tuning key in a comment; an evaluation reports which configuration each
// autotuned kernel chose; the store keeps them by tuning key and GPU; code generation bakes them
// in (KernelOptions::tuned), so a second compile of the same kernel costs no tuning.
#pragma once

#include <map>
#include <string>

#include "compiler/codegen/emitted_kernel.h"
#include "core/json.h"
#include "store/store.h"

namespace kforge {

// Kernel name -> tuning key, for each kernel `source` still autotunes.
std::map<std::string, std::string> TuningKeys(const std::string& source);

// The configurations `store` (may be null) holds for the tuning keys of `source` on `gpu`.
std::map<std::string, codegen::TileChoice> StoredTunings(Store* store, const std::string& gpu, const std::string& source);

// The configurations an evaluation's evidence (`tuning`: kernel name -> {"kwargs", "num_warps",
// "num_stages"}) reports for the kernels `source` autotunes, by tuning key; each is recorded in
// `store` when there is one. A report that is not one of the configurations the kernel's own
// @triton.autotune decorator in `source` offers is skipped: it comes from the candidate's process.
std::map<std::string, codegen::TileChoice> MeasuredTunings(Store* store, const std::string& gpu, const std::string& source,
                                                           const Json& tuning);

// Records `tunings` (tuning key -> configuration, measured on `gpu`) in `store` (may be null); a
// failure to record is logged, not returned: the configurations still serve this run.
void RecordTunings(Store* store, const std::string& gpu, const std::map<std::string, codegen::TileChoice>& tunings);

}  // namespace kforge
