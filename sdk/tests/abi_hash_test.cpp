// The ABI hash guard: every ABI header (each .h under sdk/include/oe/ but the C++ glue and the
// draft extensions), with comments and whitespace stripped, and every JSON payload schema
// (sdk/schema/*.json), without its annotations, must hash to the values recorded in
// sdk/abi.sha256 for the current OE_ABI_VERSION; and a value recorded for a version in a commit
// never changes afterwards, so a changed contract needs a new version rather than a new record.
// Editing a doc comment or a schema's description is free; changing a declaration or a payload
// fails here until the ABI version is bumped (docs/abi.md). Also the draft rule: a draft
// extension's id ends in "-draft", and nothing else's does.
#include <oe/version.h>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
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

// The two parts of the contract the guard records, each hashed on its own: a part recorded for
// the first time (the payload schemas were written down after ABI 0.2 was) needs no new version,
// a part whose recorded hash changes does.
constexpr std::string_view kHeadersPart = "headers";
constexpr std::string_view kPayloadsPart = "payloads";

// The payload schemas, sorted: every sdk/schema/*.json (a new one is covered the day it is added).
std::vector<std::string> payloadSchemas(const std::filesystem::path& schema_dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(schema_dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      names.push_back(entry.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A schema's contract without its prose: the annotations (description, title, $comment,
// examples) of every subschema are dropped, so rewording one is free, as editing a header's
// comment is. Only subschemas are visited: a property named "description" stays.
void dropAnnotations(nlohmann::json& schema) {
  if (!schema.is_object()) {
    return;
  }
  for (const char* annotation : {"description", "title", "$comment", "examples"}) {
    schema.erase(annotation);
  }
  for (const char* key : {"properties", "patternProperties", "definitions", "dependencies"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_object()) {
      for (auto& [name, sub] : it->items()) {
        dropAnnotations(sub);
      }
    }
  }
  for (const char* key : {"items", "allOf", "anyOf", "oneOf"}) {
    if (auto it = schema.find(key); it != schema.end() && it->is_array()) {
      for (auto& sub : *it) {
        dropAnnotations(sub);
      }
    }
  }
  for (const char* key : {"items", "additionalItems", "additionalProperties", "contains",
                          "propertyNames", "not", "if", "then", "else"}) {
    if (auto it = schema.find(key); it != schema.end()) {
      dropAnnotations(*it);
    }
  }
}

// The schema as compact JSON with sorted keys and no annotations; empty when it is not JSON.
std::string normaliseSchema(std::string_view text) {
  nlohmann::json schema = nlohmann::json::parse(text, nullptr, false);
  if (schema.is_discarded()) {
    return {};
  }
  dropAnnotations(schema);
  return schema.dump();
}

// One line of sdk/abi.sha256: "<sha256> <MAJOR.MINOR> <part>". A line of the first format,
// without a part ("<sha256> <MAJOR.MINOR>"), was a headers record; `explicit_part` tells them
// apart, because only records in the current format are held to the history rule.
struct Record {
  std::string hash;
  std::string version;
  std::string part;
  bool explicit_part = false;
};

std::vector<Record> parseRecords(const std::string& text) {
  std::vector<Record> records;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') {
      continue;
    }
    std::istringstream fields(line);
    Record record;
    fields >> record.hash >> record.version >> record.part;
    record.explicit_part = !record.part.empty();
    if (!record.explicit_part) {
      record.part = kHeadersPart;
    }
    if (!record.hash.empty()) {
      records.push_back(std::move(record));
    }
  }
  return records;
}

const Record* findRecord(const std::vector<Record>& records, std::string_view version,
                         std::string_view part) {
  for (const Record& record : records) {
    if (record.version == version && record.part == part) {
      return &record;
    }
  }
  return nullptr;
}

// What breaks the history rule: a record (version, part) made in a committed revision of the
// file that the current file drops or records with another hash. `history` holds each revision
// as (commit, text); revisions in the first format predate the rule and are not held to it.
// Also a (version, part) recorded twice in the current file.
std::vector<std::string> historyViolations(
    const std::vector<Record>& current,
    const std::vector<std::pair<std::string, std::string>>& history) {
  std::vector<std::string> problems;
  std::map<std::pair<std::string, std::string>, int> seen;
  for (const Record& record : current) {
    if (++seen[{record.version, record.part}] == 2) {
      problems.push_back("ABI " + record.version + " " + record.part +
                         " is recorded twice; keep the first line");
    }
  }
  for (const auto& [commit, text] : history) {
    for (const Record& old : parseRecords(text)) {
      if (!old.explicit_part) {
        continue;
      }
      const Record* now = findRecord(current, old.version, old.part);
      if (now == nullptr) {
        problems.push_back("commit " + commit + " recorded ABI " + old.version + " " + old.part +
                           " as " + old.hash + ", which the file no longer records");
      } else if (now->hash != old.hash) {
        problems.push_back("commit " + commit + " recorded ABI " + old.version + " " + old.part +
                           " as " + old.hash + ", but the file now says " + now->hash);
      }
    }
  }
  return problems;
}

std::string headersMaterial() {
  std::string material;
  for (const std::string& header : abiHeaders(kSdkDir + "/include")) {
    std::string text;
    const std::string path = kSdkDir + "/include/" + header;
    EXPECT_TRUE(readFile(path, text)) << "cannot read " << path;
    material += header + ":" + normaliseHeader(text) + "\n";
  }
  return material;
}

std::string payloadsMaterial() {
  std::string material;
  for (const std::string& name : payloadSchemas(kSdkDir + "/schema")) {
    std::string text;
    const std::string path = kSdkDir + "/schema/" + name;
    EXPECT_TRUE(readFile(path, text)) << "cannot read " << path;
    const std::string normalised = normaliseSchema(text);
    EXPECT_FALSE(normalised.empty()) << path << " is not JSON";
    material += "schema/" + name + ":" + normalised + "\n";
  }
  return material;
}

// Checks one part against the record for the current version, saying what to do when it fails.
void expectRecorded(std::string_view part, const std::string& material, const char* what) {
  ASSERT_FALSE(material.empty()) << "no " << what << " found under " << kSdkDir;
  const std::string actual_hash = sha256Hex(material);
  ASSERT_EQ(actual_hash.size(), 64u);
  const std::string version = currentAbiVersion();
  const std::string wanted_line = actual_hash + " " + version + " " + std::string(part);
  const std::string record_path = kSdkDir + "/abi.sha256";
  std::string recorded;
  ASSERT_TRUE(readFile(record_path, recorded))
      << "cannot read " << record_path << "; create it with this line:\n  " << wanted_line;
  const std::vector<Record> records = parseRecords(recorded);
  const Record* record = findRecord(records, version, part);
  if (record == nullptr) {
    FAIL() << "sdk/abi.sha256 records no " << part << " hash for ABI " << version
           << " (sdk/include/oe/version.h). If " << version << " is a new version, or the "
           << part << " were never recorded for it, append:\n  "
           << wanted_line;
  }
  EXPECT_EQ(record->hash, actual_hash)
      << "The " << what << " changed, but OE_ABI_VERSION is still " << version << ".\n"
      << "A change to a declaration or a payload is an ABI change: bump OE_ABI_VERSION_MINOR in"
      << " sdk/include/oe/version.h (from 1.0 on, only appending members is allowed), rebuild,"
      << " and re-run oe_sdk_tests: it prints the lines to append to sdk/abi.sha256. The lines"
      << " already there stay as they are: a recorded hash never changes (docs/abi.md, \"The ABI"
      << " hash guard\").\n"
      << "If only comments, whitespace or a schema's descriptions changed, this test would not"
      << " fail.\n"
      << "Once the version is bumped, append:\n  " << wanted_line;
}

TEST(AbiHash, HeadersMatchTheRecordedHashForThisAbiVersion) {
  expectRecorded(kHeadersPart, headersMaterial(),
                 "plugin ABI headers (every .h under sdk/include/oe/ but cpp/ and ext/draft/)");
}

TEST(AbiHash, PayloadSchemasMatchTheRecordedHashForThisAbiVersion) {
  expectRecorded(kPayloadsPart, payloadsMaterial(), "JSON payload schemas (sdk/schema/*.json)");
}

TEST(AbiHash, CoversEveryPayloadSchema) {
  const std::vector<std::string> names = payloadSchemas(kSdkDir + "/schema");
  for (const char* name :
       {"invoke-request.schema.json", "create-config.schema.json", "invoke-response.schema.json",
        "event-fields.schema.json", "tool-input.schema.json", "http-request.schema.json",
        "http-response.schema.json", "llm-request.schema.json", "llm-response.schema.json",
        "llm-provider-config.schema.json"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(AbiHash, SchemaNormalisationDropsTheProseOnly) {
  const std::string plain = normaliseSchema(
      R"({"type":"object","properties":{"description":{"type":"string"},"n":{"type":"integer"}}})");
  EXPECT_EQ(normaliseSchema(R"({"title":"T","description":"about it","type":"object",
      "properties":{"description":{"type":"string","description":"a property so named"},
      "n":{"$comment":"x","type":"integer","examples":[1]}}})"),
            plain);
  // A real change to the contract changes the result.
  EXPECT_NE(normaliseSchema(
                R"({"type":"object","properties":{"description":{"type":"string"},"n":{"type":"number"}}})"),
            plain);
  EXPECT_NE(normaliseSchema(R"({"type":"object","required":["n"],"properties":{"description":)"
                            R"({"type":"string"},"n":{"type":"integer"}}})"),
            plain);
  EXPECT_EQ(normaliseSchema("{not json"), "");
}

TEST(AbiHash, ARecordedHashNeverChangesWithoutANewVersion) {
  const std::string committed = "aaaa 0.2 headers\nbbbb 0.2 payloads\n";
  // Unchanged, or a new version appended: fine.
  EXPECT_TRUE(historyViolations(parseRecords(committed), {{"c1", committed}}).empty());
  EXPECT_TRUE(historyViolations(parseRecords(committed + "cccc 0.3 headers\ndddd 0.3 payloads\n"),
                                {{"c1", committed}})
                  .empty());
  // The re-recording this rule exists for: same version, new hash.
  const auto rerecorded =
      historyViolations(parseRecords("eeee 0.2 headers\nbbbb 0.2 payloads\n"), {{"c1", committed}});
  ASSERT_EQ(rerecorded.size(), 1u);
  EXPECT_NE(rerecorded[0].find("commit c1 recorded ABI 0.2 headers as aaaa, but the file now says "
                               "eeee"),
            std::string::npos)
      << rerecorded[0];
  // Dropping a record, or recording a version twice, hides the same thing.
  EXPECT_EQ(historyViolations(parseRecords("bbbb 0.2 payloads\n"), {{"c1", committed}}).size(), 1u);
  EXPECT_EQ(historyViolations(parseRecords(committed + "ffff 0.2 headers\n"), {}).size(), 1u);
  // A part recorded for the first time needs no new version.
  EXPECT_TRUE(historyViolations(parseRecords(committed), {{"c0", "aaaa 0.2 headers\n"}}).empty());
  // Records of the first format ("<hash> <version>") predate the rule.
  EXPECT_TRUE(historyViolations(parseRecords(committed), {{"c0", "9999 0.2\n"}}).empty());
}

// Runs `command` and returns what it printed, or nullopt when it failed.
std::optional<std::string> commandOutput(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    return std::nullopt;
  }
  std::string out;
  std::array<char, 4096> buffer{};
  size_t got = 0;
  while ((got = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    out.append(buffer.data(), got);
  }
  if (::pclose(pipe) != 0) {
    return std::nullopt;
  }
  return out;
}

std::string shellQuoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

TEST(AbiHash, TheCommittedRecordsWereNeverRewritten) {
  const std::string git = "git -C " + shellQuoted(kSdkDir) + " ";
  if (!commandOutput(git + "rev-parse --is-inside-work-tree 2>/dev/null")) {
    GTEST_SKIP() << kSdkDir << " is not a git checkout: the history of sdk/abi.sha256 is not here";
  }
  const auto commits = commandOutput(git + "log --format=%H -- abi.sha256");
  ASSERT_TRUE(commits) << "git log failed in " << kSdkDir;
  std::vector<std::pair<std::string, std::string>> history;
  std::istringstream lines(*commits);
  for (std::string commit; std::getline(lines, commit);) {
    const auto text = commandOutput(git + "show " + commit + ":./abi.sha256");
    ASSERT_TRUE(text) << "git show " << commit << ":sdk/abi.sha256 failed";
    history.emplace_back(commit.substr(0, 12), *text);
  }
  std::string recorded;
  ASSERT_TRUE(readFile(kSdkDir + "/abi.sha256", recorded));
  for (const std::string& problem : historyViolations(parseRecords(recorded), history)) {
    ADD_FAILURE() << "sdk/abi.sha256: " << problem
                  << ".\nA hash recorded for a version never changes: a changed ABI is a new "
                     "version (bump OE_ABI_VERSION_MINOR and append its lines; docs/abi.md, "
                     "\"The ABI hash guard\").";
  }
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
