// One init per loaded library per process: everything that opens a library while it is loaded
// shares it (`oe mcp` opens the plugins once per tool call, `oe worker` once per experience
// folder, possibly at the same time), deinit runs when the last holder lets go, and init and
// deinit never overlap. The counting fixture (tests/abi/fixtures/fixture_plugin.c) counts them.
#include "oe/plugins/plugin_library.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/registry.hpp"
#include "oe/plugins/trust_store.hpp"
#include "support/temp_dir.hpp"

namespace oe::plugins {
namespace {

struct CountsApi {
  int (*inits)();
  int (*deinits)();
  int (*overlaps)();
};

class RecordingSink final : public LogSink {
 public:
  void write(oe_log_level /*level*/, std::string_view source, std::string_view message) override {
    std::lock_guard lock(mutex_);
    lines_.push_back(std::string(source) + ": " + std::string(message));
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> lines_;
};

// The fixture's counters, read through a first open that is then let go again.
const CountsApi& counts() {
  static const CountsApi* api = [] {
    RecordingSink sink;
    auto library = PluginLibrary::open(OE_COUNTING_FIXTURE, &sink);
    EXPECT_TRUE(library) << (library ? "" : library.error().message);
    const auto* found =
        library ? static_cast<const CountsApi*>((*library)->extension("dev.oe.fixture.counts"))
                : nullptr;
    if (library) {
      (*library)->detachSink(&sink);
    }
    return found;
  }();
  EXPECT_NE(api, nullptr);
  return *api;
}

TEST(PluginLibraryShare, ConcurrentOpensShareOneInit) {
  const CountsApi& count = counts();
  const int inits = count.inits();
  const int deinits = count.deinits();
  EXPECT_EQ(inits, deinits) << "nothing else holds the fixture";

  RecordingSink sink;
  constexpr int kOpeners = 8;
  std::vector<std::shared_ptr<PluginLibrary>> opened(kOpeners);
  std::vector<std::string> errors(kOpeners);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kOpeners; ++i) {
      threads.emplace_back([&, i] {
        auto library = PluginLibrary::open(OE_COUNTING_FIXTURE, &sink);
        if (library) {
          opened[i] = std::move(library).value();
        } else {
          errors[i] = library.error().message;
        }
      });
    }
    for (auto& thread : threads) {
      thread.join();
    }
  }
  for (int i = 0; i < kOpeners; ++i) {
    ASSERT_NE(opened[i], nullptr) << errors[i];
    EXPECT_EQ(opened[i], opened[0]) << "every opener shares the one loaded library";
  }
  EXPECT_EQ(count.inits(), inits + 1);
  EXPECT_EQ(count.deinits(), deinits);

  // deinit when the last holder lets go, not before.
  for (int i = 1; i < kOpeners; ++i) {
    opened[i]->detachSink(&sink);
    opened[i].reset();
  }
  EXPECT_EQ(count.deinits(), deinits);
  opened[0]->detachSink(&sink);
  opened[0].reset();
  EXPECT_EQ(count.deinits(), deinits + 1);

  // Loaded again afterwards: a new init, after that deinit.
  auto again = PluginLibrary::open(OE_COUNTING_FIXTURE, &sink);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(count.inits(), inits + 2);
  (*again)->detachSink(&sink);
  again = makeError("released");
  EXPECT_EQ(count.deinits(), deinits + 2);
  EXPECT_EQ(count.overlaps(), 0) << "init and deinit never ran at the same time";
}

TEST(PluginLibraryShare, RegistriesInParallelShareTheLibraryAndLetItGoTogether) {
  const CountsApi& count = counts();
  const int inits = count.inits();
  const int deinits = count.deinits();
  const std::filesystem::path dir = std::filesystem::path(OE_COUNTING_FIXTURE).parent_path();
  // The fixture is not built in: the registries load it because a trust store holds it.
  test::TempDir home;
  const std::filesystem::path store = home / "trust.json";
  const std::filesystem::path library = std::filesystem::canonical(OE_COUNTING_FIXTURE);
  auto digest = cache::fileDigest(library);
  ASSERT_TRUE(digest);
  ASSERT_TRUE(updateTrustStore(store, [&](std::vector<TrustRecord>& records) {
    records.push_back(trustRecordNow(library, *digest, "dev.oe.fixture.counting"));
  }));
  TrustGate gate(store, {});
  {
    std::vector<std::unique_ptr<RecordingSink>> sinks;
    std::vector<std::unique_ptr<PluginRegistry>> registries;
    for (int i = 0; i < 4; ++i) {
      sinks.push_back(std::make_unique<RecordingSink>());
      registries.push_back(
          std::make_unique<PluginRegistry>(sinks.back().get(), Access::kExecute, &gate));
    }
    std::vector<std::thread> threads;
    for (auto& registry : registries) {
      threads.emplace_back([&registry, &dir] { registry->loadFrom({dir}); });
    }
    for (auto& thread : threads) {
      thread.join();
    }
    for (const auto& registry : registries) {
      ASSERT_EQ(registry->libraries().size(), 1u);
      EXPECT_TRUE(registry->refusals().empty());
      EXPECT_EQ(registry->libraries()[0], registries[0]->libraries()[0]);
    }
    EXPECT_EQ(count.inits(), inits + 1);
    registries.resize(1);  // three let go: the library stays
    EXPECT_EQ(count.deinits(), deinits);
  }
  EXPECT_EQ(count.deinits(), deinits + 1);
  EXPECT_EQ(count.overlaps(), 0);
}

}  // namespace
}  // namespace oe::plugins
