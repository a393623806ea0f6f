// An RFC 4180 reader for CSV (and TSV, the same rules with a tab): quoted fields, "" inside
// quotes, delimiters and line breaks inside quotes, CRLF, LF or CR line ends, a UTF-8 BOM
// ignored. Strict like upstream's csv-parse: a stray quote is an error, not a guess.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace oe::dataset {

class DelimitedReader {
 public:
  enum class Status { kRecord, kEnd, kError };

  // `text` must outlive the reader.
  DelimitedReader(std::string_view text, char delimiter) noexcept;

  // Reads the next record into `fields`, skipping empty lines. kError leaves the reason in
  // error() and line(); the reader then stays at kError.
  Status next(std::vector<std::string>& fields);

  // 1-based line on which the last record starts, or where the error is.
  [[nodiscard]] size_t line() const noexcept { return record_line_; }
  [[nodiscard]] const std::string& error() const noexcept { return error_; }

 private:
  Status fail(size_t line, std::string message);
  // Consumes a line end at pos_ (CRLF, LF or CR) if there is one.
  bool consumeLineEnd() noexcept;
  [[nodiscard]] bool atLineEnd() const noexcept {
    return pos_ < text_.size() && (text_[pos_] == '\n' || text_[pos_] == '\r');
  }

  std::string_view text_;
  char delimiter_;
  size_t pos_ = 0;
  size_t line_ = 1;  // line of pos_
  size_t record_line_ = 0;
  bool failed_ = false;
  std::string error_;
};

}  // namespace oe::dataset
