// Who may call a server: the clients named in a token file, each with its bearer token. A server
// bound to anything but the loopback address must have them; one on localhost may. Tokens are
// compared in constant time and never logged.
//
// File format: one client per line, "<name> <token>"; blank lines and lines starting with '#'
// are skipped. A token is at least 16 characters.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace kforge {

class AccessTokens {
 public:
  // InvalidArgument (naming the line) for a malformed file, a short or repeated token, or none.
  static Result<AccessTokens> Parse(const std::string& text, const std::string& what);
  static Result<AccessTokens> Load(const std::filesystem::path& path);

  // The client whose token the "Authorization: Bearer <token>" header carries; nullopt when it
  // carries none or an unknown one.
  std::optional<std::string> ClientOf(const std::string& authorization_header) const;
  size_t size() const { return clients_.size(); }

 private:
  struct Client {
    std::string name;
    std::string token_hash;  // sha256: compared instead of the token itself
  };
  std::vector<Client> clients_;
};

// Whether `host` (as given to --bind) is a loopback address.
bool IsLoopback(const std::string& host);

}  // namespace kforge
