// White-box tests of the RFC 4180 reader: records, line numbers across quoted line breaks, and
// the error state.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "delimited_reader.hpp"
#include "json_text.hpp"

namespace oe::dataset {
namespace {

using Fields = std::vector<std::string>;
using Status = DelimitedReader::Status;

TEST(DelimitedReader, RecordsCarryTheLineTheyStartOn) {
  DelimitedReader reader("h1,h2\r\n\"a\r\nb\",c\n\n\nd,\"e\"\"\"", ',');
  Fields fields;
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{"h1", "h2"}));
  EXPECT_EQ(reader.line(), 1U);
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{"a\r\nb", "c"}));
  EXPECT_EQ(reader.line(), 2U);
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{"d", "e\""}));
  EXPECT_EQ(reader.line(), 6U);
  EXPECT_EQ(reader.next(fields), Status::kEnd);
  EXPECT_EQ(reader.next(fields), Status::kEnd);
}

TEST(DelimitedReader, TrailingDelimiterMakesAnEmptyLastField) {
  DelimitedReader reader("a,\n,\n", ',');
  Fields fields;
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{"a", ""}));
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{"", ""}));
  EXPECT_EQ(reader.next(fields), Status::kEnd);
}

TEST(DelimitedReader, OnlyABomOrBlankLinesHoldsNoRecord) {
  Fields fields;
  DelimitedReader bom("\xEF\xBB\xBF", ',');
  EXPECT_EQ(bom.next(fields), Status::kEnd);
  DelimitedReader blank("\r\n\n\r", ',');
  EXPECT_EQ(blank.next(fields), Status::kEnd);
}

TEST(DelimitedReader, AnErrorIsSticky) {
  DelimitedReader reader("a\n\"x\ny\nz", ',');
  Fields fields;
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(reader.next(fields), Status::kError);
  EXPECT_EQ(reader.line(), 2U);
  EXPECT_NE(reader.error().find("never closed"), std::string::npos);
  EXPECT_EQ(reader.next(fields), Status::kError);
}

TEST(DelimitedReader, QuotedEmptyLineIsARecord) {
  DelimitedReader reader("h\n\"\"\n", ',');
  Fields fields;
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  ASSERT_EQ(reader.next(fields), Status::kRecord);
  EXPECT_EQ(fields, (Fields{""}));
}

TEST(JsonText, EscapesControlsAndRepairsUtf8) {
  std::string out;
  appendJsonString(out, "a\"b\\c\n\x01\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\\t\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"");
  out.clear();
  // A lone continuation byte, an overlong form, a surrogate and a truncated sequence.
  appendJsonString(out, "\x80|\xC0\xAF|\xED\xA0\x80|\xE2\x82");
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(),
            "\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|"
            "\xEF\xBF\xBD\xEF\xBF\xBD");
}

}  // namespace
}  // namespace oe::dataset
