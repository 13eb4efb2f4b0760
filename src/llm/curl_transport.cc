#include "llm/curl_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <mutex>

namespace kforge {
namespace {

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Capture {
  HttpResponse* response;
  size_t max_body_bytes;
  bool body_too_large = false;
};

size_t OnBody(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  size_t bytes = size * count;
  if (capture->response->body.size() + bytes > capture->max_body_bytes) {
    capture->body_too_large = true;
    return 0;  // makes curl stop with CURLE_WRITE_ERROR
  }
  capture->response->body.append(data, bytes);
  return bytes;
}

std::string Trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

// Called once per header line; a status line starts a new block (after a 100 Continue or a
// redirect), so only the final reply's headers are kept.
size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* capture = static_cast<Capture*>(user);
  std::string line(data, size * count);
  if (line.rfind("HTTP/", 0) == 0) {
    capture->response->headers.clear();
    return line.size();
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return line.size();
  std::string name = Trim(line.substr(0, colon));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  capture->response->headers.emplace_back(name, Trim(line.substr(colon + 1)));
  return line.size();
}

CallOutcome FailureOf(CURLcode code) {
  return code == CURLE_OPERATION_TIMEDOUT ? CallOutcome::kTimeout : CallOutcome::kNetworkError;
}

struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
};

void ConfigureHandle(CURL* handle, const HttpRequest& request, bool post, const HeaderList& headers, Capture& capture,
                     char* error_buffer) {
  curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.list);
  if (post) {
    curl_easy_setopt(handle, CURLOPT_POST, 1L);
    curl_easy_setopt(handle, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else {
    curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
  }
  curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, std::max(1L, static_cast<long>(request.timeout_s * 1000)));
  curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);  // timeouts must not raise SIGALRM in a threaded process
  curl_easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(handle, CURLOPT_WRITEDATA, &capture);
  curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(handle, CURLOPT_HEADERDATA, &capture);
  curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_buffer);
}

HttpResponse NoReply(CallOutcome failure, std::string error, bool request_sent = false) {
  HttpResponse response;
  response.transport_failure = failure;
  response.transport_error = std::move(error);
  response.request_sent = request_sent;
  return response;
}

// Whether a failed transfer got as far as sending the request.
bool Sent(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      return false;
    default:
      return true;
  }
}

}  // namespace

CurlTransport::CurlTransport(size_t max_body_bytes) : max_body_bytes_(max_body_bytes) { InitCurlOnce(); }

HttpResponse CurlTransport::Post(const HttpRequest& request) { return Perform(request, /*post=*/true); }

HttpResponse CurlTransport::Get(const HttpRequest& request) { return Perform(request, /*post=*/false); }

HttpResponse CurlTransport::Perform(const HttpRequest& request, bool post) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), &curl_easy_cleanup);
  if (!curl) return NoReply(CallOutcome::kNetworkError, "cannot start an HTTP client (curl_easy_init failed)");
  HeaderList headers;
  for (const auto& [name, value] : request.headers) {
    headers.list = curl_slist_append(headers.list, (name + ": " + value).c_str());
  }
  headers.list = curl_slist_append(headers.list, "Expect:");  // no 100-continue round trip
  HttpResponse response;
  Capture capture{&response, max_body_bytes_};
  char error_buffer[CURL_ERROR_SIZE] = {0};
  ConfigureHandle(curl.get(), request, post, headers, capture, error_buffer);

  CURLcode code = curl_easy_perform(curl.get());
  if (code != CURLE_OK) {
    std::string detail = error_buffer[0] ? error_buffer : curl_easy_strerror(code);
    if (capture.body_too_large) detail = "the reply exceeded " + std::to_string(max_body_bytes_) + " bytes";
    return NoReply(FailureOf(code), (post ? "POST " : "GET ") + request.url + " failed: " + detail, Sent(code));
  }
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  return response;
}

}  // namespace kforge
