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
  if (!kwargs.is_object()) return std::nullopt;
  // An attention kernel tunes only BLOCK_M and BLOCK_N (codegen::TileParameters::kAttention); a
  // convolution that may run by FMAs also DIRECT (kConvolution).
  const bool rows_and_columns = kwargs.size() == 2, with_direct = kwargs.size() == 5;
  const int64_t m = number(kwargs, "BLOCK_M"), n = number(kwargs, "BLOCK_N"),
                k = rows_and_columns ? codegen::TileChoice{}.block_k : number(kwargs, "BLOCK_K"),
                group = rows_and_columns ? codegen::TileChoice{}.group_m : number(kwargs, "GROUP_M"),
                direct = with_direct ? number(kwargs, "DIRECT") : 0, warps = number(config, "num_warps"),
                stages = number(config, "num_stages");
  if (kwargs.size() != 4 && !rows_and_columns && !with_direct) return std::nullopt;
  if (!PowerOfTwoUpTo(m, 512) || !PowerOfTwoUpTo(n, 256) || !PowerOfTwoUpTo(k, 256) || group < 1 || group > 64) return std::nullopt;
  if (!PowerOfTwoUpTo(warps, 32) || stages < 1 || stages > 8 || (direct != 0 && direct != 1)) return std::nullopt;
  codegen::TileChoice tile{static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), static_cast<int>(group),
                           static_cast<int>(warps), static_cast<int>(stages)};
  tile.direct = direct == 1;
  return tile;
}

Json TileToJson(const codegen::TileChoice& c) {
  Json kwargs = {{"BLOCK_M", c.block_m}, {"BLOCK_N", c.block_n}, {"BLOCK_K", c.block_k}, {"GROUP_M", c.group_m}};
  if (c.direct) kwargs["DIRECT"] = 1;
  return {{"kwargs", kwargs}, {"num_warps", c.warps}, {"num_stages", c.stages}};
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
