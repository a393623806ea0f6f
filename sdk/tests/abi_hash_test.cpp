// The ABI hash guard: the core ABI headers, with comments and whitespace stripped, must hash to
// the value recorded in sdk/abi.sha256 for the current OE_ABI_VERSION. Editing a doc comment is
// free; changing a declaration fails here until the ABI version is bumped (docs/abi.md).
#include <oe/version.h>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <array>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace {

constexpr std::array<std::string_view, 5> kAbiHeaders = {"oe/types.h", "oe/host.h", "oe/node.h",
                                                         "oe/entry.h", "oe/version.h"};
const std::string kSdkDir = OE_SDK_SOURCE_DIR;

// Drops comments and every whitespace character, keeping string and character literals intact
// (a "/*" inside a string is not a comment). What remains is the declarations only.
std::string normaliseHeader(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const size_t end = text.find("*/", i + 2);
      i = end == std::string_view::npos ? text.size() : end + 2;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      const size_t end = text.find('\n', i + 2);
      i = end == std::string_view::npos ? text.size() : end + 1;
    } else if (c == '"' || c == '\'') {
      out.push_back(c);
      ++i;
      while (i < text.size() && text[i] != c) {
        if (text[i] == '\\' && i + 1 < text.size()) {
          out.push_back(text[i++]);
        }
        out.push_back(text[i++]);
      }
      if (i < text.size()) {
        out.push_back(text[i++]);
      }
    } else {
      if (std::isspace(static_cast<unsigned char>(c)) == 0) {
        out.push_back(c);
      }
      ++i;
    }
  }
  return out;
}

std::string sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    return {};
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 0xf]);
  }
  return hex;
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return true;
}

std::string currentAbiVersion() {
  return std::to_string(OE_ABI_VERSION_MAJOR) + "." + std::to_string(OE_ABI_VERSION_MINOR);
}

TEST(AbiHash, NormalisationIgnoresCommentsAndWhitespaceOnly) {
  EXPECT_EQ(normaliseHeader("/* doc */\ntypedef  int32_t\toe_status; // trailing\n"),
            "typedefint32_toe_status;");
  EXPECT_EQ(normaliseHeader("#define X \"a /* not a comment */ b\""),
            "#defineX\"a /* not a comment */ b\"");
  EXPECT_EQ(normaliseHeader("#define Q \"say \\\"hi\\\" // still text\" /* gone */"),
            "#defineQ\"say \\\"hi\\\" // still text\"");
  EXPECT_EQ(normaliseHeader("char c = '\"'; /* x */ int y;"), "charc='\"';inty;");
  // A real change to a declaration must change the result (otherwise the guard is blind).
  EXPECT_NE(normaliseHeader("uint32_t flags;"), normaliseHeader("uint64_t flags;"));
  EXPECT_NE(normaliseHeader("int a; int b;"), normaliseHeader("int b; int a;"));
}

TEST(AbiHash, Sha256MatchesAKnownVector) {
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(AbiHash, CoreHeadersMatchTheRecordedHashForThisAbiVersion) {
  std::string material;
  for (std::string_view header : kAbiHeaders) {
    std::string text;
    const std::string path = kSdkDir + "/include/" + std::string(header);
    ASSERT_TRUE(readFile(path, text)) << "cannot read " << path;
    material += std::string(header) + ":" + normaliseHeader(text) + "\n";
  }
  const std::string actual_hash = sha256Hex(material);
  ASSERT_EQ(actual_hash.size(), 64u);
  const std::string version = currentAbiVersion();
  const std::string wanted_line = actual_hash + " " + version;

  std::string recorded;
  const std::string record_path = kSdkDir + "/abi.sha256";
  ASSERT_TRUE(readFile(record_path, recorded))
      << "cannot read " << record_path << "; create it with this line:\n  " << wanted_line;
  std::istringstream lines(recorded);
  std::string line;
  std::string recorded_hash;
  std::string recorded_version;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream fields(line);
    fields >> recorded_hash >> recorded_version;
    break;
  }

  if (recorded_version != version) {
    FAIL() << "sdk/abi.sha256 records ABI " << recorded_version << " but sdk/include/oe/version.h"
           << " says " << version << ". If the bump is intended, replace the last line of "
           << record_path << " with:\n  " << wanted_line;
  }
  EXPECT_EQ(recorded_hash, actual_hash)
      << "The plugin ABI headers (sdk/include/oe/{types,host,node,entry,version}.h) changed, but"
      << " OE_ABI_VERSION is still " << version << ".\n"
      << "A declaration change is an ABI change: bump OE_ABI_VERSION_MINOR in"
      << " sdk/include/oe/version.h (from 1.0 on, only appending members is allowed), rebuild,"
      << " and re-run oe_sdk_tests: it prints the line to write to sdk/abi.sha256.\n"
      << "If only comments or whitespace changed, this test would not fail; see docs/abi.md.";
}

}  // namespace
