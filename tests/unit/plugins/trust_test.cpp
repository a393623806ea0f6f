// Plugins that are not built in run nothing before they are trusted (docs/trust.md): a registry
// that describes reads the manifest and never maps the library; one that executes loads it only
// when the trust store holds its current hash; a stale or missing manifest is refused naming the
// command that writes one; the store stays whole under concurrent writers. With copies of the
// counting fixture in temp folders (a copy is a file of its own, so dlopen's RTLD_NOLOAD tells
// whether this process mapped it).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/manifest.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/plugins/trust_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::plugins {
namespace {

namespace fs = std::filesystem;

// The fixture and its manifest copied into <dir>/plugins/ (the manifest is about the same bytes).
fs::path vendor(const test::TempDir& dir, const std::string& name = "counting.so") {
  fs::create_directories(dir / "plugins");
  const fs::path library = fs::canonical(dir / "plugins") / name;
  fs::copy_file(OE_COUNTING_FIXTURE, library);
  fs::copy_file(manifestPath(OE_COUNTING_FIXTURE), manifestPath(library));
  return library;
}

bool mapped(const fs::path& library) {
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) {
    ::dlclose(handle);
  }
  return handle != nullptr;
}

std::string digestOf(const fs::path& file) {
  auto digest = cache::fileDigest(file);
  EXPECT_TRUE(digest);
  return digest ? *digest : std::string();
}

TEST(Describe, ReadsTheManifestAndNeverMapsTheLibrary) {
  test::TempDir dir;
  const fs::path library = vendor(dir);
  PluginRegistry registry(nullptr, Access::kDescribe);
  registry.loadFrom({dir / "plugins"});
  EXPECT_TRUE(registry.refusals().empty()) << registry.refusals().front().reason;
  ASSERT_EQ(registry.plugins().size(), 1u);
  const PluginEntry& entry = registry.plugins().front();
  EXPECT_FALSE(entry.builtin);
  EXPECT_EQ(entry.library, nullptr);
  EXPECT_EQ(entry.manifest.id, "dev.oe.fixture.counting");
  const LoadedKind* kind = registry.find("abi-good");
  ASSERT_NE(kind, nullptr);
  EXPECT_EQ(kind->kind, nullptr) << "a described kind has nothing to call";
  ASSERT_NE(kind->info, nullptr);
  EXPECT_EQ(kind->info->description, "ABI fixture: writes its request to state field `echo`");
  EXPECT_TRUE(registry.libraries().empty());
  EXPECT_FALSE(mapped(library));
}

TEST(Describe, AStaleManifestIsRefusedNamingTheCommandThatWritesOne) {
  test::TempDir dir;
  const fs::path library = vendor(dir);
  std::ofstream(library, std::ios::app) << "rebuilt";  // still loadable; other bytes
  PluginRegistry registry(nullptr, Access::kDescribe);
  registry.loadFrom({dir / "plugins"});
  ASSERT_EQ(registry.refusals().size(), 1u);
  const std::string& reason = registry.refusals().front().reason;
  EXPECT_TRUE(reason.starts_with(library.string() + ": ")) << reason;
  EXPECT_NE(reason.find("is stale"), std::string::npos) << reason;
  EXPECT_NE(reason.find("oe-plugin-manifest " + library.string()), std::string::npos) << reason;
  EXPECT_EQ(registry.find("abi-good"), nullptr);
  EXPECT_FALSE(mapped(library));
}

TEST(Describe, AMissingManifestIsRefusedNamingTheCommandThatWritesOne) {
  test::TempDir dir;
  const fs::path library = vendor(dir);
  fs::remove(manifestPath(library));
  PluginRegistry registry(nullptr, Access::kDescribe);
  registry.loadFrom({dir / "plugins"});
  ASSERT_EQ(registry.refusals().size(), 1u);
  const std::string& reason = registry.refusals().front().reason;
  EXPECT_NE(reason.find("no manifest"), std::string::npos) << reason;
  EXPECT_NE(reason.find("oe-plugin-manifest " + library.string()), std::string::npos) << reason;
  EXPECT_FALSE(mapped(library));
}

TEST(Execute, AnUntrustedLibraryIsRefusedAndNotMapped) {
  test::TempDir dir;
  const fs::path library = vendor(dir);
  TrustGate gate(dir / "trust.json", {});  // no terminal: nobody to ask
  PluginRegistry registry(nullptr, Access::kExecute, &gate);
  registry.loadFrom({dir / "plugins"});
  ASSERT_EQ(registry.refusals().size(), 1u);
  EXPECT_TRUE(registry.refusals().front().untrusted);
  EXPECT_TRUE(registry.anyUntrusted());
  const std::string& reason = registry.refusals().front().reason;
  EXPECT_NE(reason.find("not trusted"), std::string::npos) << reason;
  EXPECT_NE(reason.find("oe trust " + library.string()), std::string::npos) << reason;
  EXPECT_FALSE(mapped(library));
  EXPECT_FALSE(fs::exists(dir / "trust.json")) << "a refusal writes nothing";
}

TEST(Execute, ATrustedLibraryLoadsAndARebuiltOneIsRefusedAgain) {
  test::TempDir dir;
  const fs::path library = vendor(dir);
  const fs::path store = dir / "trust.json";
  ASSERT_TRUE(updateTrustStore(store, [&](std::vector<TrustRecord>& records) {
    records.push_back(trustRecordNow(library, digestOf(library), "dev.oe.fixture.counting"));
  }));
  {
    TrustGate gate(store, {});
    PluginRegistry registry(nullptr, Access::kExecute, &gate);
    registry.loadFrom({dir / "plugins"});
    EXPECT_TRUE(registry.refusals().empty()) << registry.refusals().front().reason;
    ASSERT_EQ(registry.libraries().size(), 1u);
    const LoadedKind* kind = registry.find("abi-good");
    ASSERT_NE(kind, nullptr);
    EXPECT_NE(kind->kind, nullptr);
    EXPECT_TRUE(mapped(library));
  }
  // Rebuilt: a new file at the same path (the mapped one stays as it was).
  const fs::path rebuilt = dir / "rebuilt.so";
  fs::copy_file(library, rebuilt);
  std::ofstream(rebuilt, std::ios::app) << "rebuilt";
  fs::rename(rebuilt, library);
  TrustGate gate(store, {});
  PluginRegistry registry(nullptr, Access::kExecute, &gate);
  registry.loadFrom({dir / "plugins"});
  ASSERT_EQ(registry.refusals().size(), 1u);
  const std::string& reason = registry.refusals().front().reason;
  EXPECT_NE(reason.find("changed since it was trusted"), std::string::npos) << reason;
  EXPECT_NE(reason.find("oe trust " + library.string()), std::string::npos) << reason;
}

TEST(Execute, ATerminalAnswerIsAskedOncePerLibraryAndAYesIsRecorded) {
  test::TempDir dir;
  const fs::path first = vendor(dir, "a.so");
  const fs::path second = vendor(dir, "b.so");
  const fs::path store = dir / "trust.json";
  std::vector<std::string> asked;
  TrustGate gate(store, [&](const TrustGate::Question& q) {
    asked.push_back(q.library.filename().string());
    EXPECT_NE(q.manifest, nullptr);
    return q.library == first;  // yes to a.so, no to b.so
  });
  for (int round = 0; round < 2; ++round) {  // a second registry of the process: no new question
    PluginRegistry registry(nullptr, Access::kExecute, &gate);
    registry.loadFrom({dir / "plugins"});
    ASSERT_EQ(registry.libraries().size(), 1u);
    EXPECT_EQ(registry.libraries().front()->path(), first);
    ASSERT_EQ(registry.refusals().size(), 1u);
    EXPECT_NE(registry.refusals().front().reason.find("you answered no"), std::string::npos)
        << registry.refusals().front().reason;
  }
  EXPECT_EQ(asked, (std::vector<std::string>{"a.so", "b.so"}));
  auto records = readTrustStore(store);
  ASSERT_TRUE(records);
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ(records->front().path, first.string());
  EXPECT_EQ(records->front().sha256, digestOf(first));
  EXPECT_EQ(records->front().plugin_id, "dev.oe.fixture.counting");
}

TEST(TrustStore, ConcurrentWritersKeepEveryRecordAndAWholeFile) {
  test::TempDir dir;
  const fs::path store = dir / "config" / "oe" / "trust.json";
  constexpr int kWriters = 8;
  std::vector<std::thread> writers;
  for (int i = 0; i < kWriters; ++i) {
    writers.emplace_back([&store, i] {
      for (int j = 0; j < 10; ++j) {
        const std::string name = "/lib" + std::to_string(i) + "_" + std::to_string(j) + ".so";
        auto written = updateTrustStore(store, [&](std::vector<TrustRecord>& records) {
          records.push_back(trustRecordNow(name, std::string(64, 'a'), ""));
        });
        EXPECT_TRUE(written) << written.error().message;
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  auto records = readTrustStore(store);
  ASSERT_TRUE(records) << records.error().message;
  EXPECT_EQ(records->size(), size_t{kWriters * 10});
}

TEST(TrustStore, AFileThatIsNotAStoreIsAnErrorNotAnEmptyStore) {
  test::TempDir dir;
  const fs::path store = dir.write("trust.json", "{\"something\": \"else\"}");
  auto records = readTrustStore(store);
  ASSERT_FALSE(records);
  EXPECT_NE(records.error().message.find(store.string()), std::string::npos);
  auto written = updateTrustStore(store, [](std::vector<TrustRecord>&) {});
  EXPECT_FALSE(written);
  EXPECT_EQ(test::readFile(store), "{\"something\": \"else\"}") << "never overwritten";
}

TEST(Manifest, RoundTripsAndIsCheckedAsTheLoaderChecksADescriptor) {
  PluginManifest manifest;
  manifest.id = "dev.example";
  manifest.version = "1.2.3";
  manifest.abi_version = OE_ABI_VERSION;
  manifest.min_host_abi = OE_ABI_VERSION;
  manifest.sha256 = std::string(64, 'b');
  manifest.kinds.push_back({"k", "a kind", OE_NODE_KIND_NOT_CACHEABLE, R"({"type":"object"})"});
  manifest.llm_providers = {"anthropic"};
  const Json json = manifestJson(manifest);
  auto parsed = parseManifest(json.dump(), "m: ");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->id, "dev.example");
  EXPECT_EQ(parsed->kinds.at(0).flags, static_cast<uint32_t>(OE_NODE_KIND_NOT_CACHEABLE));
  EXPECT_EQ(parsed->kinds.at(0).spec_schema_json, R"({"type":"object"})");
  EXPECT_EQ(parsed->llm_providers, std::vector<std::string>{"anthropic"});

  const auto refusal = [&](Json changed) {
    auto result = parseManifest(changed.dump(), "m: ");
    return result ? std::string("accepted") : result.error().message;
  };
  Json wrong_abi = json;
  wrong_abi["abi"]["version"] = "9.0";
  EXPECT_NE(refusal(wrong_abi).find("built for plugin ABI 9.0"), std::string::npos);
  Json unknown_flag = json;
  unknown_flag["kinds"][0]["flags"] = Json::array({"teleports"});
  EXPECT_NE(refusal(unknown_flag).find("does not know"), std::string::npos);
  Json cycle = json;
  cycle["kinds"][0]["spec_schema_json"] = R"({"$ref": "#"})";
  EXPECT_NE(refusal(cycle).find("refers to itself"), std::string::npos) << refusal(cycle);
  EXPECT_NE(refusal(Json::array()).find("not a JSON object"), std::string::npos);
  // Deep nesting is refused before the parser sees it.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto nested = parseManifest(deep, "m: ");
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("levels deep"), std::string::npos);
}

}  // namespace
}  // namespace oe::plugins
