// GET /api/runs/{id}/events, .../events/stream and /api/events/stream.
#include "oe/service/event_routes.hpp"

#include <charconv>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "oe/spec/workspace.hpp"

namespace oe::service {
namespace {

namespace fs = std::filesystem;
using httpd::Request;
using httpd::Response;

// A seq (a line number), or nullopt for text that is not one.
std::optional<uint64_t> parseSeq(std::string_view text) {
  uint64_t value = 0;
  const auto* end = text.data() + text.size();
  const auto parsed = std::from_chars(text.data(), end, value);
  if (text.empty() || parsed.ec != std::errc() || parsed.ptr != end) {
    return std::nullopt;
  }
  return value;
}

// Where a client resumes: Last-Event-ID (its reconnection) over ?after= (its first request).
Found<uint64_t> resumeAfter(const Request& request) {
  for (const char* name : {"last-event-id", "after"}) {
    const auto text = name[0] == 'l' ? request.header(name) : request.queryParam(name);
    if (!text) {
      continue;
    }
    if (auto seq = parseSeq(*text)) {
      return *seq;
    }
    return httpd::problem(400, "bad-after", "Bad event position",
                          std::string(name[0] == 'l' ? "Last-Event-ID: " : "after=") +
                              std::string(*text) +
                              " is not a line number of the run's log; give the `seq` (the SSE "
                              "`id:`) of the last event you have, or 0 for all of them");
  }
  return uint64_t{0};
}

class RunEvents final : public httpd::EventSource {
 public:
  RunEvents(std::shared_ptr<LogHub> hub, fs::path log, uint64_t after)
      : hub_(std::move(hub)), log_(std::move(log)), after_(after) {}
  void start(std::shared_ptr<httpd::EventSink> sink) override {
    hub_->subscribeRun(log_, after_, std::move(sink));
  }

 private:
  std::shared_ptr<LogHub> hub_;
  fs::path log_;
  uint64_t after_;
};

class AllEvents final : public httpd::EventSource {
 public:
  AllEvents(std::shared_ptr<LogHub> hub, std::shared_ptr<const ReadContext> context)
      : hub_(std::move(hub)), context_(std::move(context)) {}
  void start(std::shared_ptr<httpd::EventSink> sink) override {
    auto context = context_;
    hub_->subscribeAll(
        [context] {
          std::vector<fs::path> dirs;
          for (const auto& experience : listExperiences(*context)) {
            const fs::path dir = spec::workspaceDir(experience.yaml) / "runs";
            if (confinedTo(dir, context->root)) {
              dirs.push_back(dir);
            }
          }
          return dirs;
        },
        std::move(sink));
  }

 private:
  std::shared_ptr<LogHub> hub_;
  std::shared_ptr<const ReadContext> context_;
};

Response streamResponse(std::shared_ptr<httpd::EventSource> source) {
  Response response;
  response.content_type = "text/event-stream";
  response.headers.emplace_back("Cache-Control", "no-store");
  response.events = std::move(source);
  return response;
}

}  // namespace

void addEventRoutes(httpd::Router& router, std::shared_ptr<const ReadContext> context,
                    std::shared_ptr<LogHub> hub) {
  router.add("GET", "/api/runs/{id}/events", httpd::Scope::kRead,
             [context](const Request& request) -> Response {
               auto run = findRunUnderRoot(*context, request.params.at("id"));
               if (!run.ok()) {
                 return std::move(run.problem());
               }
               auto after = resumeAfter(request);
               auto limit = listLimit(request);
               if (!after.ok() || !limit.ok()) {
                 return std::move(!after.ok() ? after.problem() : limit.problem());
               }
               LogCursor cursor(run->record.log);
               Json events = Json::array();
               bool more = false;
               for (bool done = false; !done;) {
                 auto lines = cursor.next(size_t{4} * 1024 * 1024);
                 done = lines.empty();
                 for (auto& line : lines) {
                   if (line.seq <= *after) {
                     continue;
                   }
                   if (events.size() == *limit) {
                     more = true;
                     done = true;
                     break;
                   }
                   Json event = Json::parse(line.text, nullptr, /*allow_exceptions=*/false);
                   if (!event.is_object()) {
                     // A torn or edited line: shown as text rather than hidden, so seq stays
                     // the line number.
                     event = Json{{"type", "oe.unparsed"}, {"line", std::move(line.text)}};
                   }
                   Json out = {{"seq", line.seq}};
                   out.update(event);
                   events.push_back(std::move(out));
                 }
               }
               Json body = {{"run_id", run->record.id}, {"events", std::move(events)}};
               if (more) {
                 body["next_after"] = body["events"].back()["seq"];
               }
               return httpd::jsonResponse(200, body);
             });
  router.add("GET", "/api/runs/{id}/events/stream", httpd::Scope::kRead,
             [context, hub](const Request& request) -> Response {
               auto run = findRunUnderRoot(*context, request.params.at("id"));
               if (!run.ok()) {
                 return std::move(run.problem());
               }
               auto after = resumeAfter(request);
               if (!after.ok()) {
                 return std::move(after.problem());
               }
               return streamResponse(std::make_shared<RunEvents>(hub, run->record.log, *after));
             });
  router.add("GET", "/api/events/stream", httpd::Scope::kRead,
             [context, hub](const Request&) -> Response {
               return streamResponse(std::make_shared<AllEvents>(hub, context));
             });
}

}  // namespace oe::service
