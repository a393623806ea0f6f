// types.h spells each status and log-level constant twice: as a cast, `((oe_status)3)`, for C and
// C++, and as a typed constant, `static const oe_status OE_X = 3;`, for binding generators that
// define OE_BINDGEN. The two must never drift apart. This file is compiled with -DOE_BINDGEN
// (sdk/tests/CMakeLists.txt): it captures that spelling, includes types.h a second time without
// it, inside a namespace, and static_asserts that the two agree constant by constant; a test then
// reads types.h to prove both spellings list the same constants as the list below.
#ifndef OE_BINDGEN
#error "compile bindgen_spelling_test.cpp with -DOE_BINDGEN"
#endif

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

#include <oe/types.h>

// Every constant with two spellings. types.h gaining one that is missing here fails
// BindgenSpelling.EveryConstantIsCheckedHere.
#define OE_TEST_SPELLED_CONSTANTS(X) \
  X(OE_OK)                           \
  X(OE_CANCELLED)                    \
  X(OE_UNKNOWN)                      \
  X(OE_INVALID_ARGUMENT)             \
  X(OE_DEADLINE_EXCEEDED)            \
  X(OE_NOT_FOUND)                    \
  X(OE_ALREADY_EXISTS)               \
  X(OE_PERMISSION_DENIED)            \
  X(OE_RESOURCE_EXHAUSTED)           \
  X(OE_FAILED_PRECONDITION)          \
  X(OE_ABORTED)                      \
  X(OE_OUT_OF_RANGE)                 \
  X(OE_UNIMPLEMENTED)                \
  X(OE_INTERNAL)                     \
  X(OE_UNAVAILABLE)                  \
  X(OE_DATA_LOSS)                    \
  X(OE_UNAUTHENTICATED)              \
  X(OE_LOG_DEBUG)                    \
  X(OE_LOG_INFO)                     \
  X(OE_LOG_WARN)                     \
  X(OE_LOG_ERROR)

// The OE_BINDGEN spelling: `static const` objects, usable in constant expressions.
namespace bindgen_spelling {
#define OE_TEST_CAPTURE(name) constexpr auto k_##name = name;
OE_TEST_SPELLED_CONSTANTS(OE_TEST_CAPTURE)
#undef OE_TEST_CAPTURE
}  // namespace bindgen_spelling

// The normal spelling: types.h again, without OE_BINDGEN. Its types land in this namespace (and
// are not used); its constants are macros from here on.
#undef OE_BINDGEN
#undef OE_TYPES_H
namespace cast_spelling {
#include <oe/types.h>  // NOLINT(bugprone-suspicious-include): included twice on purpose
}  // namespace cast_spelling

#define OE_TEST_COMPARE(name)                                                            \
  static_assert(bindgen_spelling::k_##name == (name),                                    \
                #name " has different values with and without OE_BINDGEN (oe/types.h)"); \
  static_assert(std::is_same_v<std::remove_cv_t<decltype(bindgen_spelling::k_##name)>,   \
                               std::remove_cv_t<decltype(name)>>,                        \
                #name " has different types with and without OE_BINDGEN (oe/types.h)");
OE_TEST_SPELLED_CONSTANTS(OE_TEST_COMPARE)
#undef OE_TEST_COMPARE

namespace {

std::string readTypesHeader() {
  std::ifstream in(std::string(OE_SDK_SOURCE_DIR) + "/include/oe/types.h", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// name -> "type value", for one spelling, from the header's text.
std::map<std::string, std::string> spelled(const std::string& text, const std::regex& pattern,
                                           int name_group, int type_group, int value_group) {
  std::map<std::string, std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    out[(*it)[name_group]] = std::string((*it)[type_group]) + " " + std::string((*it)[value_group]);
  }
  return out;
}

TEST(BindgenSpelling, BothSpellingsDeclareTheSameConstantsWithTheSameTypesAndValues) {
  const std::string text = readTypesHeader();
  ASSERT_FALSE(text.empty());
  const auto casts =
      spelled(text, std::regex(R"(#define (OE_[A-Z_]+) \(\((oe_[a-z_]+)\)(-?[0-9]+)\))"), 1, 2, 3);
  const auto constants =
      spelled(text, std::regex(R"(static const (oe_[a-z_]+) (OE_[A-Z_]+) = (-?[0-9]+);)"), 2, 1, 3);
  EXPECT_FALSE(casts.empty());
  EXPECT_EQ(casts, constants);
}

TEST(BindgenSpelling, EveryConstantIsCheckedHere) {
  const std::set<std::string> listed = {
#define OE_TEST_NAME(name) #name,
      OE_TEST_SPELLED_CONSTANTS(OE_TEST_NAME)
#undef OE_TEST_NAME
  };
  const std::string text = readTypesHeader();
  std::set<std::string> in_header;
  const std::regex constant(R"(static const oe_[a-z_]+ (OE_[A-Z_]+) =)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), constant);
       it != std::sregex_iterator(); ++it) {
    in_header.insert((*it)[1]);
  }
  EXPECT_EQ(listed, in_header) << "add each constant of oe/types.h to OE_TEST_SPELLED_CONSTANTS";
}

}  // namespace
