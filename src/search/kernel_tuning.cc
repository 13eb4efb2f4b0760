#include "search/kernel_tuning.h"

#include <optional>
#include <regex>

#include "core/log.h"

namespace kforge {
namespace {

bool PowerOfTwoUpTo(int64_t value, int64_t limit) { return value >= 1 && value <= limit && (value & (value - 1)) == 0; }

std::optional<codegen::TileChoice> TileFromJson(const Json& config) {
  const Json kwargs = JsonField(config, "kwargs");
  auto number = [](const Json& object, const char* key) -> int64_t {
    const Json value = JsonField(object, key);
    return value.is_number_integer() ? value.get<int64_t>() : -1;
  };
  // An attention kernel tunes only BLOCK_M and BLOCK_N (codegen::TileParameters::kAttention).
  const bool rows_and_columns = kwargs.is_object() && kwargs.size() == 2;
  const int64_t m = number(kwargs, "BLOCK_M"), n = number(kwargs, "BLOCK_N"),
                k = rows_and_columns ? codegen::TileChoice{}.block_k : number(kwargs, "BLOCK_K"),
                group = rows_and_columns ? codegen::TileChoice{}.group_m : number(kwargs, "GROUP_M"),
                warps = number(config, "num_warps"), stages = number(config, "num_stages");
  if (!kwargs.is_object() || (kwargs.size() != 4 && !rows_and_columns)) return std::nullopt;
  if (!PowerOfTwoUpTo(m, 256) || !PowerOfTwoUpTo(n, 256) || !PowerOfTwoUpTo(k, 256) || group < 1 || group > 64) return std::nullopt;
  if (!PowerOfTwoUpTo(warps, 32) || stages < 1 || stages > 8) return std::nullopt;
  return codegen::TileChoice{static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), static_cast<int>(group),
                             static_cast<int>(warps), static_cast<int>(stages)};
}

Json TileToJson(const codegen::TileChoice& c) {
  return {{"kwargs", {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"BLOCK_K", c.block_k}, {"GROUP_M", c.group_m}}},
          {"num_warps", c.warps},
          {"num_stages", c.stages}};
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
    measured[key] = *tile;
    if (store == nullptr) continue;
    if (Status recorded = store->RecordTuning(key, gpu, TileToJson(*tile)); !recorded.ok()) {
      LogInfo("store: recording the tuning of {}: {}", name, recorded.ToString());
    }
  }
  return measured;
}

}  // namespace kforge
