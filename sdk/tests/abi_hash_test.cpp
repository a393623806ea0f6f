// The ABI hash guard: every ABI header (each .h under sdk/include/oe/ but the C++ glue and the
// draft extensions), with comments and whitespace stripped, must hash to the value recorded in
// sdk/abi.sha256 for the current OE_ABI_VERSION. Editing a doc comment is free; changing a
// declaration fails here until the ABI version is bumped (docs/abi.md). Also the draft rule: a
// draft extension's id ends in "-draft", and nothing else's does.
#include <oe/version.h>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

const std::string kSdkDir = OE_SDK_SOURCE_DIR;

// Where draft extensions live (docs/abi.md, "Draft extensions"): outside the guards, never
// promised, free to change in any release.
constexpr std::string_view kDraftDir = "oe/ext/draft/";

// The headers the guard hashes, relative to `include_dir` ("oe/types.h", ...), sorted: every .h
// under oe/ but the C++ glue in oe/cpp/ (compiled into the plugin, not ABI) and the drafts. A new
// header is covered the day it is added.
std::vector<std::string> abiHeaders(const std::filesystem::path& include_dir) {
  std::vector<std::string> headers;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(include_dir / "oe")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".h") {
      continue;
    }
    const std::string relative = entry.path().lexically_relative(include_dir).generic_string();
    if (relative.starts_with("oe/cpp/") || relative.starts_with(kDraftDir)) {
      continue;
    }
    headers.push_back(relative);
  }
  std::sort(headers.begin(), headers.end());
  return headers;
}

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

// What breaks the draft rule in one header (`relative` as abiHeaders names it, `text` its
// contents); empty when it keeps it. Official extension ids are "oe.<name>/<rev>", and
// "oe.<name>/<rev>-draft" in a draft header; a stable header neither uses a "-draft" id nor
// includes a draft header (that would put the draft under the stable promise).
std::vector<std::string> draftRuleViolations(std::string_view relative, std::string_view text) {
  const bool draft = relative.starts_with(kDraftDir);
  std::vector<std::string> problems;
  const std::string where(relative);
  // Comments may mention anything ("draft-07", a future id); only code counts.
  std::string code;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 2) == "/*" || text.substr(i, 2) == "//") {
      const bool block = text[i + 1] == '*';
      const size_t end = text.find(block ? "*/" : "\n", i + 2);
      i = end == std::string_view::npos ? text.size() : end + (block ? 2 : 1);
      code.push_back('\n');
    } else {
      code.push_back(text[i++]);
    }
  }
  static const std::regex kExtDefine(R"re(#\s*define\s+(OE_EXT_[A-Za-z0-9_]+)\s+"([^"]*)")re");
  static const std::regex kStableId(R"(oe\.[a-z][a-z0-9.-]*/[0-9]+)");
  static const std::regex kDraftId(R"(oe\.[a-z][a-z0-9.-]*/[0-9]+-draft)");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), kExtDefine);
       it != std::sregex_iterator(); ++it) {
    const std::string macro = (*it)[1];
    const std::string id = (*it)[2];
    if (draft && !std::regex_match(id, kDraftId)) {
      problems.push_back(where + ": " + macro + " is \"" + id +
                         "\"; a draft extension's id is \"oe.<name>/<rev>-draft\"");
    } else if (!draft && !std::regex_match(id, kStableId)) {
      problems.push_back(where + ": " + macro + " is \"" + id +
                         "\"; a stable extension's id is \"oe.<name>/<rev>\" (a draft one "
                         "belongs in " +
                         std::string(kDraftDir) + ")");
    }
  }
  if (!draft) {
    if (code.find("-draft") != std::string::npos) {
      problems.push_back(where + ": uses a \"-draft\" name outside " + std::string(kDraftDir));
    }
    if (code.find(kDraftDir) != std::string::npos) {
      problems.push_back(where +
                         ": includes a draft header; a stable header cannot depend on "
                         "one");
    }
  }
  return problems;
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

TEST(AbiHash, CoversEveryHeaderButTheCxxGlueAndTheDrafts) {
  std::string pattern = (std::filesystem::temp_directory_path() / "oe-abi-hash-XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path root = pattern;
  for (const char* file : {"oe/b.h", "oe/a.h", "oe/ext/x.h", "oe/kinds/k.h", "oe/cpp/glue.hpp",
                           "oe/cpp/glue.h", "oe/ext/draft/d.h", "oe/notes.md"}) {
    std::filesystem::create_directories((root / file).parent_path());
    std::ofstream(root / file) << "/* */\n";
  }
  const std::vector<std::string> headers = abiHeaders(root);
  std::filesystem::remove_all(root);
  EXPECT_EQ(headers, (std::vector<std::string>{"oe/a.h", "oe/b.h", "oe/ext/x.h", "oe/kinds/k.h"}));

  const std::vector<std::string> real = abiHeaders(kSdkDir + "/include");
  for (const char* header :
       {"oe/types.h", "oe/host.h", "oe/node.h", "oe/entry.h", "oe/version.h", "oe/macros.h",
        "oe/ext/http.h", "oe/ext/llm.h", "oe/ext/prompt.h", "oe/kinds/tool.h"}) {
    EXPECT_NE(std::find(real.begin(), real.end(), header), real.end()) << header;
  }
}

TEST(AbiHash, HeadersMatchTheRecordedHashForThisAbiVersion) {
  const std::vector<std::string> headers = abiHeaders(kSdkDir + "/include");
  ASSERT_FALSE(headers.empty());
  std::string material;
  for (const std::string& header : headers) {
    std::string text;
    const std::string path = kSdkDir + "/include/" + header;
    ASSERT_TRUE(readFile(path, text)) << "cannot read " << path;
    material += header + ":" + normaliseHeader(text) + "\n";
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
      << "The plugin ABI headers (every .h under sdk/include/oe/ but cpp/ and ext/draft/) changed,"
      << " but"
      << " OE_ABI_VERSION is still " << version << ".\n"
      << "A declaration change is an ABI change: bump OE_ABI_VERSION_MINOR in"
      << " sdk/include/oe/version.h (from 1.0 on, only appending members is allowed), rebuild,"
      << " and re-run oe_sdk_tests: it prints the line to write to sdk/abi.sha256.\n"
      << "If only comments or whitespace changed, this test would not fail; see docs/abi.md.\n"
      << "Once the version matches the change, the last line of " << record_path << " is:\n  "
      << wanted_line;
}

TEST(AbiDraft, TheRuleCatchesWhatItShould) {
  EXPECT_TRUE(draftRuleViolations("oe/ext/run.h", "#define OE_EXT_RUN \"oe.run/1\"\n").empty());
  EXPECT_TRUE(
      draftRuleViolations("oe/ext/draft/run.h",
                          "/* oe.run/1 once promoted */\n#define OE_EXT_RUN \"oe.run/1-draft\"")
          .empty());
  EXPECT_TRUE(draftRuleViolations("oe/node.h", "/* JSON Schema (draft-07) */ int x;").empty())
      << "a comment is not code";
  // A draft header with a final-looking id, a stable header with a draft id or a draft include.
  EXPECT_EQ(draftRuleViolations("oe/ext/draft/run.h", "#define OE_EXT_RUN \"oe.run/1\"").size(),
            1u);
  EXPECT_EQ(draftRuleViolations("oe/ext/run.h", "#define OE_EXT_RUN \"oe.run/1-draft\"").size(),
            2u);
  EXPECT_EQ(draftRuleViolations("oe/oe.h", "#include \"oe/ext/draft/run.h\"").size(), 1u);
  EXPECT_EQ(draftRuleViolations("oe/ext/x.h", "#define OE_EXT_X \"com.acme.x/1\"").size(), 1u)
      << "the SDK's own ids are oe.*";
}

TEST(AbiDraft, EveryHeaderKeepsTheDraftRule) {
  const std::filesystem::path include = kSdkDir + "/include";
  size_t checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(include / "oe")) {
    if (!entry.is_regular_file() || entry.path().extension() != ".h") {
      continue;
    }
    std::string text;
    ASSERT_TRUE(readFile(entry.path().string(), text)) << entry.path();
    const std::string relative = entry.path().lexically_relative(include).generic_string();
    for (const std::string& problem : draftRuleViolations(relative, text)) {
      ADD_FAILURE() << problem << " (docs/abi.md, \"Draft extensions\")";
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

}  // namespace
