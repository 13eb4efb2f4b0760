#include "llm/api_call.h"

#include <algorithm>

namespace kforge {
namespace {

constexpr size_t kQuoteLimit = 300;

std::string Quote(const std::string& text) {
  std::string quoted = text.substr(0, kQuoteLimit);
  if (text.size() > kQuoteLimit) quoted += "...";
  return quoted;
}

// The API's own explanation: {"error": {"message": ...}} in both OpenAI's and Anthropic's
// formats, or the start of the body when it is not that.
std::string ApiErrorMessage(const std::string& body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  const Json& error = JsonField(parsed, "error");
  if (error.is_string()) return Quote(error.get<std::string>());
  std::string message = JsonGet<std::string>(error, "message", "");
  if (message.empty()) message = JsonGet<std::string>(parsed, "message", "");
  return Quote(message.empty() ? body : message);
}

std::string Advice(CallOutcome outcome, const ApiCall& call) {
  switch (outcome) {
    case CallOutcome::kAuthError:
      return call.key_variable.empty() ? "check the API key" : "check " + call.key_variable;
    case CallOutcome::kRateLimited: return "wait and resume, or lower the provider's max_concurrency";
    case CallOutcome::kTimeout: return "raise the timeout, or ask for fewer max_tokens";
    case CallOutcome::kQuotaExceeded: return "add credit or raise the quota with the provider, then `kforge resume` the run";
    case CallOutcome::kUnknownModel: return "check the model name after the provider in --llm";
    case CallOutcome::kClientError: return "the server refused the request; check the base URL, the model name and settings";
    default: return "";
  }
}

std::string DescribeFailure(const HttpExchange& exchange, const ApiCall& call) {
  const HttpResponse& response = exchange.response;
  std::string text = response.status == 0
                         ? response.transport_error
                         : "HTTP " + std::to_string(response.status) + " from " + call.url + ": " +
                               ApiErrorMessage(response.body);
  if (exchange.attempts > 1) text += " (gave up after " + std::to_string(exchange.attempts) + " attempts)";
  std::string advice = Advice(exchange.outcome, call);
  if (!advice.empty()) text += "; " + advice;
  return text;
}

HttpRequest BuildRequest(const ApiCall& call, const Json& body) {
  HttpRequest request;
  request.url = call.url;
  request.headers = call.headers;
  request.headers.emplace_back("content-type", "application/json");
  request.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  request.timeout_s = call.timeout_s;
  return request;
}

Completion ParseReply(const HttpExchange& exchange, const ApiCall& call, const ReplyParser& parse_reply) {
  if (exchange.outcome != CallOutcome::kOk) return FailedCompletion(exchange.outcome, DescribeFailure(exchange, call));
  Json body = Json::parse(exchange.response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    return FailedCompletion(CallOutcome::kMalformedReply,
                            "the reply from " + call.url + " is not a JSON object: " + Quote(exchange.response.body));
  }
  return parse_reply(body);
}

constexpr double kCheckTimeoutS = 15;

// Attempts that were sent but gave no reply (a timeout, a broken connection) report no usage, yet a
// provider bills what it generated: counted at most as the prompt plus the whole output limit.
void EstimateUnreportedUse(const PriceTable& prices, int64_t prompt_tokens, Completion& completion) {
  int billed = 0;
  for (const CallAttempt& attempt : completion.attempt_log) billed += attempt.maybe_billed ? 1 : 0;
  if (billed == 0) return;
  completion.estimated_tokens = billed * (prompt_tokens + completion.max_tokens);
  if (std::optional<ModelPrice> price = FindPrice(prices, completion.model)) {
    completion.estimated_cost_usd =
        billed * (static_cast<double>(prompt_tokens) * price->input_usd_per_million +
                  static_cast<double>(completion.max_tokens) * price->output_usd_per_million) / 1e6;
  }
}

// The model ids of a listing ({"data": [{"id": ...}, ...]} in OpenAI's and Anthropic's formats).
std::vector<std::string> ListedModels(const std::string& body) {
  std::vector<std::string> ids;
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  for (const Json& model : JsonField(parsed, "data")) {
    std::string id = JsonGet<std::string>(model, "id", "");
    if (!id.empty()) ids.push_back(id);
  }
  return ids;
}

std::string ListingNote(const std::vector<std::string>& ids, const std::string& model, const std::string& where) {
  if (ids.empty() || model.empty()) return "";
  for (const std::string& id : ids) {
    if (id == model) return "";
  }
  std::string some;
  for (size_t i = 0; i < ids.size() && i < 5; ++i) some += (i ? ", " : "") + ids[i];
  return where + " does not list the model \"" + model + "\" (it lists " + std::to_string(ids.size()) + ": " + some +
         (ids.size() > 5 ? ", ..." : "") + "); if the first call finds it unknown, the run stops there";
}

}  // namespace

Completion CallJsonApi(HttpTransport& transport, const RetryPolicy& retry, const Clock& clock,
                       const ApiCall& call, const Json& body, const ReplyParser& parse_reply) {
  double start = clock.NowSeconds();
  HttpExchange exchange = retry.Post(transport, BuildRequest(call, body));
  Completion completion = ParseReply(exchange, call, parse_reply);
  completion.error = Redact(std::move(completion.error), call.secret);
  completion.attempts = exchange.attempts;
  completion.attempt_log = exchange.history;
  for (CallAttempt& attempt : completion.attempt_log) attempt.error = Redact(std::move(attempt.error), call.secret);
  completion.latency_s = clock.NowSeconds() - start;
  return completion;
}

HostedApiProvider::HostedApiProvider(WireFormat format, ApiProviderOptions options,
                                     std::shared_ptr<HttpTransport> transport, RetryPolicy retry, const Clock& clock)
    : format_(std::move(format)), options_(std::move(options)), transport_(std::move(transport)),
      retry_(std::move(retry)), clock_(clock) {}

Completion HostedApiProvider::Complete(const CompletionRequest& original) {
  CompletionRequest request = WithDefaultModel(original, options_.default_model);
  const RequestShape shape = ShapeFor(options_.name, request.model, options_.shapes);
  const int64_t prompt_tokens = EstimatePromptTokens(request.messages);
  std::optional<int> max_tokens = OutputTokens(shape, request.max_tokens, prompt_tokens);
  if (!max_tokens) {
    Completion refused = FailedCompletion(
        CallOutcome::kPromptTooLong,
        "not sent: the prompt (about " + std::to_string(prompt_tokens) + " tokens) leaves no room for a reply in the " +
            std::to_string(*shape.context_tokens) + "-token context of " + request.model +
            "; if the server allows more, raise models." + request.model + ".context_tokens in the LLM config");
    refused.model = request.model;
    return refused;
  }
  request.max_tokens = *max_tokens;
  Json body = format_.body(request, shape);
  for (const auto& [key, value] : shape.extra_body.items()) body[key] = value;
  ApiCall call;
  call.url = JoinUrl(options_.base_url, format_.path);
  call.headers = format_.headers(options_.api_key);
  call.timeout_s = options_.timeout_s.value_or(request.timeout_s);
  call.secret = options_.api_key;
  call.key_variable = options_.key_variable;
  Completion completion = CallJsonApi(*transport_, retry_, clock_, call, body, format_.parse_reply);
  completion.model = request.model;
  completion.max_tokens = request.max_tokens;
  ApplyPrice(options_.prices, completion);
  EstimateUnreportedUse(options_.prices, prompt_tokens, completion);
  return completion;
}

ProviderCheck HostedApiProvider::Check() {
  ProviderCheck check;
  if (format_.models_path.empty()) return check;
  HttpRequest request;
  request.url = JoinUrl(options_.base_url, format_.models_path);
  request.headers = format_.headers(options_.api_key);
  request.timeout_s = std::min(kCheckTimeoutS, options_.timeout_s.value_or(kCheckTimeoutS));
  HttpResponse response = transport_->Get(request);
  const std::string where = options_.name + " at " + options_.base_url;
  const std::string said = response.status == 0 ? Redact(response.transport_error, options_.api_key)
                                                 : "HTTP " + std::to_string(response.status) + ": " +
                                                       Redact(ApiErrorMessage(response.body), options_.api_key);
  switch (CallOutcome outcome = OutcomeOf(response)) {
    case CallOutcome::kOk:
      if (std::string note = ListingNote(ListedModels(response.body), options_.default_model, where); !note.empty()) {
        check.notes.push_back(note);
      }
      break;
    case CallOutcome::kNetworkError:
    case CallOutcome::kTimeout:
      check.status = Status::Unavailable("cannot reach " + where + " (" + said + "); check " +
                                         (options_.url_variable.empty() ? "the base URL" : options_.url_variable) +
                                         " and that the server is running");
      break;
    case CallOutcome::kAuthError:
    case CallOutcome::kQuotaExceeded: {
      ApiCall call;
      call.key_variable = options_.key_variable;
      check.status = Status::Unavailable(where + " refused to serve (" + said + "); " + Advice(outcome, call));
      break;
    }
    default:
      check.notes.push_back(where + " has no model listing at " + request.url + " (" + said +
                            "); the first call will show whether the key and the model are good");
      break;
  }
  return check;
}

std::string JoinUrl(const std::string& base_url, const std::string& path) {
  std::string base = base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  size_t skip = path.find_first_not_of('/');
  return base + "/" + (skip == std::string::npos ? "" : path.substr(skip));
}

std::string Redact(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  const std::string mask = "[redacted]";
  for (size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at + mask.size())) {
    text.replace(at, secret.size(), mask);
  }
  return text;
}

}  // namespace kforge
