// source.type file: json (a top-level array), jsonl (one value per line), csv/tsv (a header row
// then string values), read whole at invoke time so a file written earlier in the run is seen.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "delimited_reader.hpp"
#include "json_text.hpp"
#include "sources.hpp"

namespace oe::dataset {
namespace {

constexpr size_t kCancelPollRows = 4096;

Expected<std::string> readWhole(const FileSource& source, const std::string& who) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(source.path, ec)) {
    return fail(OE_NOT_FOUND,
                "Dataset file not found: " + source.path + " (declared as \"" + source.uri + "\")");
  }
  if (fs::is_directory(source.path, ec)) {
    return fail(OE_INVALID_ARGUMENT,
                who + ": " + source.path + " is a directory; source.uri must name a file");
  }
  std::ifstream in(source.path, std::ios::binary);
  if (!in) {
    return fail(OE_PERMISSION_DENIED,
                who + ": cannot read " + source.path + ": " + std::strerror(errno));
  }
  std::string text;
  if (const auto size = fs::file_size(source.path, ec); !ec) {
    text.reserve(static_cast<size_t>(size));
  }
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) {
    return fail(OE_DATA_LOSS, who + ": reading " + source.path + " failed");
  }
  return text;
}

Expected<std::string> jsonRows(std::string_view text, const FileSource& source,
                               const std::string& who) {
  OrderedJson doc;
  try {
    doc = OrderedJson::parse(withoutBom(text));
  } catch (const nlohmann::json::parse_error& error) {
    return fail(OE_INVALID_ARGUMENT,
                who + ": " + source.uri + " is not valid JSON: " + parseProblem(error, true));
  }
  if (!doc.is_array()) {
    return fail(
        OE_INVALID_ARGUMENT,
        "File \"" + source.uri + "\" must contain a top-level JSON array; got " + jsTypeOf(doc));
  }
  return doc.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

Expected<std::string> jsonlRows(std::string_view text, const FileSource& source,
                                const std::string& who, const CancelCheck& cancelled) {
  std::string out = "[";
  bool first = true;
  size_t line_number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = jsTrim(text.substr(pos, end - pos));
    ++line_number;
    pos = end + 1;
    if (line.empty()) {
      continue;
    }
    if (line_number % kCancelPollRows == 0 && cancelled()) {
      return fail(OE_CANCELLED, "cancelled");
    }
    OrderedJson value;
    try {
      value = OrderedJson::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      return fail(OE_INVALID_ARGUMENT, who + ": " + source.uri + " line " +
                                           std::to_string(line_number) +
                                           " is not valid JSON: " + parseProblem(error, false));
    }
    if (!first) {
      out += ',';
    }
    first = false;
    out += value.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  }
  out += ']';
  return out;
}

Expected<std::string> delimitedRows(std::string_view text, char delimiter, const FileSource& source,
                                    const std::string& who, const CancelCheck& cancelled) {
  DelimitedReader reader(text, delimiter);
  const auto parseError = [&] {
    return fail(OE_INVALID_ARGUMENT, who + ": " + source.uri + " line " +
                                         std::to_string(reader.line()) + ": " + reader.error());
  };
  std::vector<std::string> header;
  const auto first = reader.next(header);
  if (first == DelimitedReader::Status::kError) {
    return parseError();
  }
  if (first == DelimitedReader::Status::kEnd) {
    return std::string("[]");
  }
  const size_t header_line = reader.line();
  // A repeated column name keeps its first position and its last value, as assigning the
  // values to a JavaScript object in column order does.
  std::vector<std::pair<std::string, size_t>> columns;  // JSON-quoted key, value index
  for (size_t i = 0; i < header.size(); ++i) {
    std::string key;
    appendJsonString(key, header[i]);
    auto same = std::find_if(columns.begin(), columns.end(),
                             [&](const auto& c) { return header[c.second] == header[i]; });
    if (same != columns.end()) {
      same->second = i;
    } else {
      columns.emplace_back(std::move(key), i);
    }
  }
  const char* separator_name = delimiter == '\t' ? "tab" : "comma";
  std::string out = "[";
  std::vector<std::string> fields;
  size_t rows = 0;
  while (true) {
    const auto status = reader.next(fields);
    if (status == DelimitedReader::Status::kEnd) {
      break;
    }
    if (status == DelimitedReader::Status::kError) {
      return parseError();
    }
    if (fields.size() != header.size()) {
      return fail(
          OE_INVALID_ARGUMENT,
          who + ": " + source.uri + " line " + std::to_string(reader.line()) + " has " +
              std::to_string(fields.size()) + " fields but the header (line " +
              std::to_string(header_line) + ") has " + std::to_string(header.size()) +
              (fields.size() > header.size()
                   ? std::string("; put quotes around values that contain a ") + separator_name
                   : std::string("; every row needs a value for every column")));
    }
    if (++rows % kCancelPollRows == 0 && cancelled()) {
      return fail(OE_CANCELLED, "cancelled");
    }
    out += rows == 1 ? "{" : ",{";
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) {
        out += ',';
      }
      out += columns[c].first;
      out += ':';
      appendJsonString(out, fields[columns[c].second]);
    }
    out += '}';
  }
  out += ']';
  return out;
}

}  // namespace

Expected<std::string> readFileSource(const FileSource& source, const std::string& who,
                                     const CancelCheck& cancelled) {
  auto text = readWhole(source, who);
  if (!text) {
    return std::move(text).failure();
  }
  switch (source.format) {
    case FileFormat::kJson:
      return jsonRows(*text, source, who);
    case FileFormat::kJsonl:
      return jsonlRows(*text, source, who, cancelled);
    case FileFormat::kCsv:
      return delimitedRows(*text, ',', source, who, cancelled);
    case FileFormat::kTsv:
      return delimitedRows(*text, '\t', source, who, cancelled);
    default:
      return fail(OE_INTERNAL, who + ": unknown file format");
  }
}

}  // namespace oe::dataset
