// libFuzzer target: an event log, as `oe inspect --html` reads it (one JSON object per line,
// other lines dropped as readEventLog drops them), drawn by runReportHtml. Whatever the log
// holds (ids, errors, timestamps out of order, calls that never end, retries without a call),
// the page is built and none of its values becomes markup.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "oe/report/run_report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  oe::report::RunReportInput input;
  input.run_id = "fuzz";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    auto event = oe::Json::parse(text.substr(start, end - start), nullptr, false);
    if (!event.is_discarded() && event.is_object()) {
      // A log's nested runs are read from other files; here, a line naming one is its own log.
      if (auto sub = event.find("sub_event_log"); sub != event.end() && sub->is_string()) {
        input.nested[sub->get<std::string>()] = input.events;
      }
      input.events.push_back(std::move(event));
    }
    start = end + 1;
  }
  const std::string html = oe::report::runReportHtml(input);
  for (const char* tag : {"<script", "<img", "<iframe", "<a "}) {
    if (html.find(tag) != std::string::npos) {
      std::fprintf(stderr, "run_report_fuzz: the page holds %s\n", tag);
      std::abort();
    }
  }
  return 0;
}
