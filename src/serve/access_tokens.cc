#include "serve/access_tokens.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include <sstream>

#include <fmt/format.h>
#include <httplib.h>

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
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    std::istringstream fields(line);
    std::string name, token, role, extra;
    if (!(fields >> name) || name[0] == '#') continue;
    if (!(fields >> token) || ((fields >> role) && role != "worker") || (fields >> extra)) {
      return Status::InvalidArgument(fmt::format("{} line {}: expected \"<client-name> <token>\" or \"<client-name> <token> worker\"",
                                                 what, number));
    }
    if (Status added = tokens.Add(name, token, role == "worker"); !added.ok()) {
      return Status::InvalidArgument(fmt::format("{} line {}: {}", what, number, added.message()));
    }
  }
  if (tokens.clients_.empty()) return Status::InvalidArgument(what + ": no \"<client-name> <token>\" line");
  return tokens;
}

Status AccessTokens::Add(const std::string& name, const std::string& token, bool worker) {
  if (token.size() < kMinTokenLength) {
    return Status::InvalidArgument(fmt::format("the token is shorter than {} characters", kMinTokenLength));
  }
  std::string hash = Sha256Hex(token);
  for (const Client& client : clients_) {
    if (client.name == name || client.token_hash == hash) return Status::InvalidArgument("client name or token used twice");
  }
  clients_.push_back({name, std::move(hash), worker});
  return Status::Ok();
}

bool AccessTokens::IsWorker(const std::string& client) const {
  for (const Client& known : clients_) {
    if (known.name == client) return known.worker;
  }
  return false;
}

Result<std::string> NewToken() {
  std::string bytes(32, '\0');
  if (getrandom(bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size())) {
    return Status::Unavailable(std::string("no random bytes for a token: ") + std::strerror(errno));
  }
  return HexBytes(bytes);
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

void RequireTokens(httplib::Server& server, const AccessTokens& tokens) {
  server.set_pre_routing_handler([&tokens](const httplib::Request& request, httplib::Response& response) {
    if (tokens.ClientOf(request.get_header_value("Authorization"))) return httplib::Server::HandlerResponse::Unhandled;
    response.status = 401;
    response.set_header("WWW-Authenticate", "Bearer");
    response.set_content("{\"error\": \"this server needs \\\"Authorization: Bearer <token>\\\" with a token it knows\"}",
                         "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace kforge
