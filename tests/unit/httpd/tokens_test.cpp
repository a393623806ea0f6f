#include "oe/httpd/tokens.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "support/temp_dir.hpp"

namespace oe::httpd {
namespace {

constexpr const char* kRead = "read-token-0123456789";
constexpr const char* kAdmin = "admin-token-0123456789";

TEST(TokenTableTest, ParsesScopesNamesCommentsAndBlankLines) {
  const std::string text = std::string("# who may call\n\n  read ci ") + kRead +
                           "\r\n\tadmin  ops\t" + kAdmin + "   \n   # indented comment\n";
  auto table = TokenTable::parse(text, "tokens.txt");
  ASSERT_TRUE(table) << table.error().message;
  ASSERT_EQ(table->tokens().size(), 2U);
  const Token* read = table->find(kRead);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->name, "ci");
  EXPECT_EQ(read->scope, Scope::kRead);
  const Token* admin = table->find(kAdmin);
  ASSERT_NE(admin, nullptr);
  EXPECT_EQ(admin->name, "ops");
  EXPECT_EQ(admin->scope, Scope::kAdmin);
  EXPECT_EQ(table->find(""), nullptr);
  EXPECT_EQ(table->find("read-token-012345678"), nullptr);  // a prefix
  EXPECT_EQ(table->find(std::string(kRead) + "9"), nullptr);
}

TEST(TokenTableTest, BadLinesNameFileAndLine) {
  const auto error = [](const std::string& text) {
    auto table = TokenTable::parse(text, "tokens.txt");
    return table ? std::string("accepted") : table.error().message;
  };
  EXPECT_EQ(error("read ci\n").rfind("tokens.txt:1: expected", 0), 0U) << error("read ci\n");
  EXPECT_NE(error("# c\nwrite ci " + std::string(kRead) + "\n")
                .find("tokens.txt:2: unknown scope 'write'"),
            std::string::npos);
  EXPECT_NE(error("read ci " + std::string(kRead) + " extra\n").find("tokens.txt:1:"),
            std::string::npos);
  EXPECT_NE(error("read ci short\n").find("shorter than 16"), std::string::npos);
  EXPECT_NE(error("read ci " + std::string(kRead) + "\nadmin ci " + kAdmin + "\n")
                .find("tokens.txt:2: the name 'ci' is used twice"),
            std::string::npos);
  EXPECT_NE(error("read a " + std::string(kRead) + "\nadmin b " + kRead + "\n")
                .find("tokens.txt:2: the token of 'b' is also"),
            std::string::npos);
  EXPECT_NE(error("read ci caf\xc3\xa9-0123456789abcdef\n").find("printable ASCII"),
            std::string::npos);
}

TEST(TokenTableTest, LoadRefusesFilesOthersCanRead) {
  test::TempDir dir;
  const auto path = dir.write("tokens", std::string("admin ops ") + kAdmin + "\n");
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  auto loose = TokenTable::load(path);
  ASSERT_FALSE(loose);
  EXPECT_NE(loose.error().message.find("chmod 600"), std::string::npos) << loose.error().message;
  ASSERT_EQ(chmod(path.c_str(), 0620), 0);
  EXPECT_FALSE(TokenTable::load(path));
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  auto shared = TokenTable::load(path);
  ASSERT_TRUE(shared) << shared.error().message;
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  auto table = TokenTable::load(path);
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_NE(table->find(kAdmin), nullptr);

  const auto empty = dir.write("empty", "# nothing yet\n");
  ASSERT_EQ(chmod(empty.c_str(), 0600), 0);
  auto none = TokenTable::load(empty);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no token"), std::string::npos);
  auto missing = TokenTable::load(dir / "absent");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("absent"), std::string::npos);
}

}  // namespace
}  // namespace oe::httpd
