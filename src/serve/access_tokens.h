// Who may call a server: the clients named in a token file, each with its bearer token. A server
// bound to anything but the loopback address must have them; one on localhost may. Tokens are
// compared in constant time and never logged.
//
// File format: one client per line, "<name> <token>" or "<name> <token> worker"; blank lines and
// lines starting with '#' are skipped. A token is at least 16 characters. Only a "worker" may
// take jobs from the evaluation service's queue (remote workers, eval_service.h).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace kforge {

class AccessTokens {
 public:
  // InvalidArgument (naming the line) for a malformed file, a short or repeated token, or none.
  static Result<AccessTokens> Parse(const std::string& text, const std::string& what);
  static Result<AccessTokens> Load(const std::filesystem::path& path);

  // The client whose token the "Authorization: Bearer <token>" header carries; nullopt when it
  // carries none or an unknown one.
  std::optional<std::string> ClientOf(const std::string& authorization_header) const;
  bool IsWorker(const std::string& client) const;
  size_t size() const { return clients_.size(); }
  // Adds a client (e.g. the token the service makes for the workers it places); InvalidArgument
  // for a short token or a name already used.
  Status Add(const std::string& name, const std::string& token, bool worker);

 private:
  struct Client {
    std::string name;
    std::string token_hash;  // sha256: compared instead of the token itself
    bool worker = false;
  };
  std::vector<Client> clients_;
};

// Makes every request to `server` carry one of `tokens` (which must outlive it): others get 401
// before any route sees them. Installing it again replaces it.
void RequireTokens(httplib::Server& server, const AccessTokens& tokens);

// Whether `host` (as given to --bind) is a loopback address.
bool IsLoopback(const std::string& host);
// A fresh random token (64 hex digits from the kernel's random source).
Result<std::string> NewToken();

}  // namespace kforge
