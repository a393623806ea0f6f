// The state store's value rules without a database: upstream's type checks (kAny and kNull never
// checked) and type names, error values cut on a UTF-8 boundary, a value that cannot be stored
// refused with the node and field named, and the append encoding of history rows (D17).
#include "oe/state/value_codec.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace oe::state {
namespace {

TEST(ValueCodec, TypeChecksFollowUpstream) {
  EXPECT_TRUE(typeMatches(spec::FieldType::kNumber, Json(1.5)));
  EXPECT_TRUE(typeMatches(spec::FieldType::kNumber, Json(2)));
  EXPECT_FALSE(typeMatches(spec::FieldType::kString, Json(1)));
  EXPECT_FALSE(typeMatches(spec::FieldType::kArray, Json::object()));
  EXPECT_TRUE(typeMatches(spec::FieldType::kAny, Json::array()));
  EXPECT_TRUE(typeMatches(spec::FieldType::kNull, Json(1)));
  EXPECT_STREQ(valueTypeName(Json(3)), "number");
  EXPECT_STREQ(valueTypeName(Json(3.5)), "number");
  EXPECT_STREQ(valueTypeName(Json("s")), "string");
  EXPECT_STREQ(valueTypeName(Json()), "null");
  EXPECT_STREQ(typeName(spec::FieldType::kBoolean), "boolean");
}

TEST(ValueCodec, ALongValueIsCutOnACharacterBoundary) {
  EXPECT_EQ(shortJson(Json("short")), "\"short\"");
  std::string text = "x";
  for (int i = 0; i < 200; ++i) {
    text += "\xC3\xA9";  // é: its second byte falls on the cut
  }
  const std::string cut = shortJson(Json(text));
  ASSERT_TRUE(cut.ends_with("..."));
  EXPECT_EQ(cut.size(), 196U + 3U);
  EXPECT_EQ(static_cast<unsigned char>(cut[195]), 0xA9U);  // ends after a whole é
}

TEST(ValueCodec, AValueThatIsNotJsonTextIsRefusedNamingNodeAndField) {
  EXPECT_EQ(toText(Json({1, 2}), "n", "f").value(), "[1,2]");
  const auto bad = toText(Json(std::string("\xFF")), "n", "f");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("Node \"n\" wrote a value to field \"f\""),
            std::string::npos)
      << bad.error().message;
}

struct AppendRow {
  std::string new_text;
};

TEST(ValueCodec, AppendsAreEncodedAndAppliedInOrder) {
  EXPECT_EQ(appendedOnto(Json::parse(appendMarker(3))), 3U);
  EXPECT_EQ(appendedOnto(Json::object({{"$oe_append", 1}})), std::nullopt);
  EXPECT_EQ(appendedOnto(Json::array()), std::nullopt);

  const AppendRow a{"[3]"};
  const AppendRow none{"[]"};
  const AppendRow b{"[4,5]"};
  const std::vector<const AppendRow*> rows{&a, &none, &b};
  std::string value = "[1,2] \n";
  appendItems(value, rows);
  EXPECT_EQ(value, "[1,2,3,4,5]");
  std::string empty = "[]";
  appendItems(empty, rows);
  EXPECT_EQ(empty, "[3,4,5]");
  std::string not_array = "{\"a\":1}";  // counts as [] (the merge rule)
  appendItems(not_array, rows);
  EXPECT_EQ(not_array, "[3,4,5]");
}

TEST(ValueCodec, AStoredRowThatIsNotJsonIsShownAsItsText) {
  EXPECT_EQ(parseStored("{\"a\":1}"), Json::object({{"a", 1}}));
  EXPECT_EQ(parseStored("not json"), Json("not json"));
}

}  // namespace
}  // namespace oe::state
