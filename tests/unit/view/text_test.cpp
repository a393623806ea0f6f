// Terminal text: safe lines and display widths.
#include "oe/view/text.hpp"

#include <gtest/gtest.h>

namespace oe::view {
namespace {

TEST(Text, SafeLineReplacesControlsAndKeepsTheFirstLine) {
  EXPECT_EQ(safeLine("a\tb\x1b[2J\x7f"
                     "c"),
            "a b [2J c");
  EXPECT_EQ(safeLine("first\r\nsecond"), "first ...");
  EXPECT_EQ(safeLine("x\xc2\x9by"), "x y");  // C1 CSI as a character
  EXPECT_EQ(safeLine("bad \xff\xfe bytes"), "bad ?? bytes");
  EXPECT_EQ(safeLine("\xe2\x82"), "??");              // a truncated sequence
  EXPECT_EQ(safeLine("caf\xc3\xa9"), "caf\xc3\xa9");  // valid UTF-8 is kept
}

TEST(Text, SafeLineCutsOnACharacterBoundary) {
  const std::string text = "\xc3\xa9\xc3\xa9\xc3\xa9";  // three 2-byte characters
  EXPECT_EQ(safeLine(text, 5), "\xc3\xa9\xc3\xa9...");
}

TEST(Text, DisplayWidthCountsColumnsNotBytes) {
  EXPECT_EQ(displayWidth("hello"), 5u);
  EXPECT_EQ(displayWidth("caf\xc3\xa9"), 4u);               // é: one column
  EXPECT_EQ(displayWidth("e\xcc\x81"), 1u);                 // e + combining acute
  EXPECT_EQ(displayWidth("\xe6\x97\xa5\xe6\x9c\xac"), 4u);  // 日本: wide
  EXPECT_EQ(displayWidth("\xf0\x9f\x9a\x80"), 2u);          // 🚀
  EXPECT_EQ(codePointWidth(U'\u200b'), 0);
}

TEST(Text, FitWidthNeverExceedsTheColumnsNorSplitsACharacter) {
  EXPECT_EQ(fitWidth("short", 10), "short");
  EXPECT_EQ(fitWidth("0123456789", 8), "01234...");
  const std::string wide = "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6\x97\xa5";  // 8 columns
  const std::string cut = fitWidth(wide, 6);
  EXPECT_EQ(cut, "\xe6\x97\xa5...");  // 2 + 3: a third wide character would make 7
  EXPECT_LE(displayWidth(cut), 6u);
  EXPECT_EQ(fitWidth("abcdef", 2), "ab");  // no room for "..."
  for (size_t cols = 0; cols < 12; ++cols) {
    EXPECT_LE(displayWidth(fitWidth(wide + "x", cols)), cols) << cols;
  }
}

TEST(Text, PadWidthPadsToExactlyTheColumns) {
  EXPECT_EQ(padWidth("ab", 4), "ab  ");
  EXPECT_EQ(displayWidth(padWidth("\xe6\x97\xa5", 5)), 5u);
  EXPECT_EQ(padWidth("abcdefgh", 6), "abc...");
}

}  // namespace
}  // namespace oe::view
