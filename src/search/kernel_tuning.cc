#include "search/kernel_tuning.h"

#include <algorithm>
#include <optional>
#include <regex>
#include <set>
#include <vector>

#include "compiler/codegen/gemm_tiles.h"
#include "core/log.h"

namespace kforge {
namespace {

bool PowerOfTwoUpTo(int64_t value, int64_t limit) { return value >= 1 && value <= limit && (value & (value - 1)) == 0; }

std::optional<codegen::TileChoice> TileFromJson(const Json& config) {
  const Json kwargs = JsonField(config, "kwargs");
  auto number = [](const Json& object, const char* key, int64_t absent) -> int64_t {
    if (!object.contains(key)) return absent;
    const Json& value = object.at(key);
    return value.is_number_integer() ? value.get<int64_t>() : -1;
  };
  if (!kwargs.is_object()) return std::nullopt;
  const int64_t warps = number(config, "num_warps", -1), stages = number(config, "num_stages", -1);
  if (!PowerOfTwoUpTo(warps, 32) || stages < 1 || stages > 8) return std::nullopt;
  if (kwargs.size() == 1 && kwargs.contains("R_BLOCK")) {
    // A folded reduction's block (codegen::kFoldedRowSpace).
    const int64_t r_block = number(kwargs, "R_BLOCK", -1);
    if (!PowerOfTwoUpTo(r_block, 65536)) return std::nullopt;
    codegen::TileChoice tile;
    tile.r_block = static_cast<int>(r_block);
    tile.warps = static_cast<int>(warps);
    tile.stages = static_cast<int>(stages);
    return tile;
  }
  // BLOCK_M and BLOCK_N always; BLOCK_K and GROUP_M but in attention kernels
  // (codegen::TileParameters::k_and_group); DIRECT in convolutions that may run by FMAs; SPLIT_K in
  // GEMMs that may split their K loop. Nothing else.
  for (const auto& [key, value] : kwargs.items()) {
    static const std::set<std::string> kKnown = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "DIRECT", "SPLIT_K"};
    if (!kKnown.count(key)) return std::nullopt;
  }
  const codegen::TileChoice defaults;
  const int64_t m = number(kwargs, "BLOCK_M", -1), n = number(kwargs, "BLOCK_N", -1), k = number(kwargs, "BLOCK_K", defaults.block_k),
                group = number(kwargs, "GROUP_M", defaults.group_m), direct = number(kwargs, "DIRECT", 0),
                split = number(kwargs, "SPLIT_K", 1);
  if (!PowerOfTwoUpTo(m, 512) || !PowerOfTwoUpTo(n, 256) || !PowerOfTwoUpTo(k, 256) || group < 1 || group > 64) return std::nullopt;
  if (direct != 0 && direct != 1) return std::nullopt;
  if (!PowerOfTwoUpTo(split, codegen::kMaxSplitK)) return std::nullopt;
  codegen::TileChoice tile{static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), static_cast<int>(group),
                           static_cast<int>(warps), static_cast<int>(stages)};
  tile.direct = direct == 1;
  tile.split_k = static_cast<int>(split);
  return tile;
}

Json TileToJson(const codegen::TileChoice& c) {
  if (c.r_block > 0) return {{"kwargs", {{"R_BLOCK", c.r_block}}}, {"num_warps", c.warps}, {"num_stages", c.stages}};
  Json kwargs = {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"BLOCK_K", c.block_k}, {"GROUP_M", c.group_m}};
  if (c.direct) kwargs["DIRECT"] = 1;
  if (c.split_k > 1) kwargs["SPLIT_K"] = c.split_k;
  return {{"kwargs", kwargs}, {"num_warps", c.warps}, {"num_stages", c.stages}};
}

// The configurations the @triton.autotune decorator of kernel `name` in `source` offers, as tiles.
std::vector<codegen::TileChoice> OfferedTiles(const std::string& source, const std::string& name) {
  std::vector<codegen::TileChoice> offered;
  const size_t start = source.find("# Tuning key of " + name + ":");
  if (start == std::string::npos) return offered;
  // To its def; a CUDA kernel's key (no decorator, no def) offers nothing up to the next key.
  const size_t end = std::min(source.find("def " + name + "(", start), source.find("# Tuning key of ", start + 1));
  const std::string decorator = source.substr(start, end == std::string::npos ? std::string::npos : end - start);
  static const std::regex kConfig(R"re(triton\.Config\(\{([^}]*)\}, num_warps=(\d{1,2}), num_stages=(\d{1,2})\))re");
  static const std::regex kMeta(R"re("(\w+)": (-?\d{1,9}))re");
  for (auto it = std::sregex_iterator(decorator.begin(), decorator.end(), kConfig); it != std::sregex_iterator(); ++it) {
    Json kwargs = Json::object();
    const std::string metas = (*it)[1].str();
    for (auto meta = std::sregex_iterator(metas.begin(), metas.end(), kMeta); meta != std::sregex_iterator(); ++meta) {
      kwargs[(*meta)[1].str()] = std::stoll((*meta)[2].str());
    }
    Json config = {{"kwargs", kwargs}, {"num_warps", std::stoll((*it)[2].str())}, {"num_stages", std::stoll((*it)[3].str())}};
    if (std::optional<codegen::TileChoice> tile = TileFromJson(config)) offered.push_back(*tile);
  }
  return offered;
}

}  // namespace

std::map<std::string, std::string> TuningKeys(const std::string& source) {
  static const std::regex kKey("# Tuning key of (\\w+): ([0-9a-f]{64})");
  std::map<std::string, std::string> keys;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), kKey); it != std::sregex_iterator(); ++it) {
    keys[(*it)[1].str()] = (*it)[2].str();
  }
  return keys;
}

std::map<std::string, codegen::TileChoice> StoredTunings(Store* store, const std::string& gpu, const std::string& source) {
  std::map<std::string, codegen::TileChoice> tuned;
  if (store == nullptr) return tuned;
  for (const auto& [name, key] : TuningKeys(source)) {
    Result<std::optional<Json>> stored = store->GetTuning(key, gpu);
    if (!stored.ok()) {
      LogInfo("store: reading the tuning of {}: {}", name, stored.status().ToString());
      continue;
    }
    if (!stored->has_value()) continue;
    if (std::optional<codegen::TileChoice> tile = TileFromJson(**stored)) tuned[key] = *tile;
  }
  return tuned;
}

std::map<std::string, codegen::TileChoice> MeasuredTunings(Store* store, const std::string& gpu, const std::string& source,
                                                           const Json& tuning) {
  std::map<std::string, codegen::TileChoice> measured;
  for (const auto& [name, key] : TuningKeys(source)) {
    std::optional<codegen::TileChoice> tile = TileFromJson(JsonField(tuning, name.c_str()));
    if (!tile) continue;
    const std::vector<codegen::TileChoice> offered = OfferedTiles(source, name);
    if (std::find(offered.begin(), offered.end(), *tile) == offered.end()) {
      LogInfo("tuning: {} reported a configuration its decorator does not offer; not kept", name);
      continue;
    }
    measured[key] = *tile;
  }
  RecordTunings(store, gpu, measured);
  return measured;
}

void RecordTunings(Store* store, const std::string& gpu, const std::map<std::string, codegen::TileChoice>& tunings) {
  if (store == nullptr) return;
  for (const auto& [key, tile] : tunings) {
    if (Status recorded = store->RecordTuning(key, gpu, TileToJson(tile)); !recorded.ok()) {
      LogInfo("store: recording the tuning under {}: {}", key, recorded.ToString());
    }
  }
}

}  // namespace kforge
