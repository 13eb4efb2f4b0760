// Content hashes: SHA-256 as lowercase hex, used to name candidates and cache entries.
#pragma once

#include <string>

namespace kforge {

std::string Sha256Hex(const std::string& data);

// Lowercase hexadecimal, two digits per byte.
std::string HexBytes(const std::string& bytes);

}  // namespace kforge
