// RFC 4180 record reader (see delimited_reader.hpp).
#include "delimited_reader.hpp"

#include <utility>

#include "json_text.hpp"

namespace oe::dataset {

DelimitedReader::DelimitedReader(std::string_view text, char delimiter) noexcept
    : text_(withoutBom(text)), delimiter_(delimiter) {}

DelimitedReader::Status DelimitedReader::fail(size_t line, std::string message) {
  failed_ = true;
  record_line_ = line;
  error_ = std::move(message);
  return Status::kError;
}

bool DelimitedReader::consumeLineEnd() noexcept {
  if (pos_ >= text_.size()) {
    return false;
  }
  if (text_[pos_] == '\r') {
    ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') {
      ++pos_;
    }
  } else if (text_[pos_] == '\n') {
    ++pos_;
  } else {
    return false;
  }
  ++line_;
  return true;
}

DelimitedReader::Status DelimitedReader::next(std::vector<std::string>& fields) {
  fields.clear();
  if (failed_) {
    return Status::kError;
  }
  while (consumeLineEnd()) {
    // an empty line: skipped, as csv-parse's skip_empty_lines does
  }
  if (pos_ >= text_.size()) {
    return Status::kEnd;
  }
  record_line_ = line_;
  while (true) {
    std::string field;
    const size_t field_number = fields.size() + 1;
    if (pos_ < text_.size() && text_[pos_] == '"') {
      const size_t open_line = line_;
      ++pos_;
      while (true) {
        const size_t quote = text_.find('"', pos_);
        if (quote == std::string_view::npos) {
          return fail(open_line, "field " + std::to_string(field_number) +
                                     " opens a quote that is never closed; end it with \" (a " +
                                     "quote inside a quoted field is written \"\")");
        }
        // Line breaks inside quotes belong to the field but still move the line count.
        for (size_t k = pos_; k < quote; ++k) {
          if (text_[k] == '\n' || (text_[k] == '\r' && (k + 1 >= quote || text_[k + 1] != '\n'))) {
            ++line_;
          }
        }
        field.append(text_.substr(pos_, quote - pos_));
        pos_ = quote + 1;
        if (pos_ < text_.size() && text_[pos_] == '"') {
          field += '"';
          ++pos_;
          continue;
        }
        break;
      }
      if (pos_ < text_.size() && text_[pos_] != delimiter_ && !atLineEnd()) {
        return fail(line_, "field " + std::to_string(field_number) +
                               " has text after its closing quote; put the whole field in " +
                               "quotes and write a quote inside it as \"\"");
      }
    } else {
      size_t end = pos_;
      while (end < text_.size() && text_[end] != delimiter_ && text_[end] != '\n' &&
             text_[end] != '\r') {
        if (text_[end] == '"') {
          return fail(line_, "field " + std::to_string(field_number) +
                                 " has a quote inside an unquoted value; put the whole field " +
                                 "in quotes and write the quote as \"\"");
        }
        ++end;
      }
      field.assign(text_.substr(pos_, end - pos_));
      pos_ = end;
    }
    fields.push_back(std::move(field));
    if (pos_ < text_.size() && text_[pos_] == delimiter_) {
      ++pos_;
      continue;
    }
    consumeLineEnd();
    return Status::kRecord;
  }
}

}  // namespace oe::dataset
