#include "serve/access_tokens.h"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/files.h"
#include "core/hash.h"

namespace kforge {
namespace {

constexpr size_t kMinTokenLength = 16;

// Equal length strings compared without an early exit.
bool SameInConstantTime(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ |= static_cast<unsigned char>(a[i] ^ b[i]);
  return differ == 0;
}

}  // namespace

Result<AccessTokens> AccessTokens::Parse(const std::string& text, const std::string& what) {
  AccessTokens tokens;
  std::set<std::string> names;
  std::set<std::string> hashes;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream fields(line);
    std::string name, token, extra;
    if (!(fields >> name) || name[0] == '#') continue;
    if (!(fields >> token) || (fields >> extra)) {
      return Status::InvalidArgument(fmt::format("{} line {}: expected \"<client-name> <token>\"", what, number));
    }
    if (token.size() < kMinTokenLength) {
      return Status::InvalidArgument(fmt::format("{} line {}: the token is shorter than {} characters", what, number,
                                                 kMinTokenLength));
    }
    std::string hash = Sha256Hex(token);
    if (!names.insert(name).second || !hashes.insert(hash).second) {
      return Status::InvalidArgument(fmt::format("{} line {}: client name or token used twice", what, number));
    }
    tokens.clients_.push_back({name, std::move(hash)});
  }
  if (tokens.clients_.empty()) return Status::InvalidArgument(what + ": no \"<client-name> <token>\" line");
  return tokens;
}

Result<AccessTokens> AccessTokens::Load(const std::filesystem::path& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return Parse(text, path.string());
}

std::optional<std::string> AccessTokens::ClientOf(const std::string& authorization_header) const {
  const std::string prefix = "Bearer ";
  if (authorization_header.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string hash = Sha256Hex(authorization_header.substr(prefix.size()));
  std::optional<std::string> found;
  for (const Client& client : clients_) {  // every entry is compared: the time does not say which matched
    if (SameInConstantTime(client.token_hash, hash)) found = client.name;
  }
  return found;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace kforge
