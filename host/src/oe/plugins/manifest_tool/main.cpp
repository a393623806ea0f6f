// oe-plugin-manifest: writes <library>.oe-manifest.json beside each plugin library it is given,
// from the library itself (loaded, ABI-checked and initialised as `oe run` would load it), so
// that oe can describe the plugin later without loading it (docs/trust.md). oe_add_plugin()
// runs it after each build; a plugin built another way runs it once per build.
//
//   oe-plugin-manifest LIBRARY...          write each library's manifest
//   oe-plugin-manifest --check LIBRARY...  say whether each has a current one (loads nothing)
//
// Exit: 0 all written (or current), 1 a library refused or a manifest missing or stale,
// 2 bad arguments.
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "oe/cache/cache_store.hpp"
#include "oe/plugins/host_context.hpp"
#include "oe/plugins/manifest.hpp"
#include "oe/plugins/plugin_library.hpp"

namespace {

constexpr std::string_view kName = "oe-plugin-manifest";

// A plugin's log lines while it loads (its init may log).
class StderrSink final : public oe::plugins::LogSink {
 public:
  void write(oe_log_level level, std::string_view source, std::string_view message) override {
    if (level >= OE_LOG_INFO) {
      std::cerr << kName << ": [" << source << "] " << message << '\n';
    }
  }
};

int usage() {
  std::cerr << "usage: " << kName << " [--check] LIBRARY...\n"
            << "  writes LIBRARY" << oe::plugins::kManifestSuffix
            << " beside each plugin library, from the library itself (it is loaded);\n"
            << "  --check: exits 1 unless each has a manifest that describes it as it is now "
               "(nothing is loaded)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool check = false;
  std::vector<std::filesystem::path> libraries;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--check") {
      check = true;
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else if (arg.starts_with("-")) {
      std::cerr << kName << ": unknown option " << arg << '\n';
      return usage();
    } else {
      libraries.emplace_back(arg);
    }
  }
  if (libraries.empty()) {
    return usage();
  }
  int status = 0;
  StderrSink sink;
  for (const std::filesystem::path& given : libraries) {
    // Beside the path as given, where oe looks for it (a symlink's manifest is the link's).
    std::error_code ec;
    const std::filesystem::path library = std::filesystem::absolute(given, ec);
    if (ec || !std::filesystem::is_regular_file(library, ec)) {
      std::cerr << kName << ": " << given.string() << ": no such file\n";
      status = 1;
      continue;
    }
    if (check) {
      auto digest = oe::cache::fileDigest(library);
      auto current = digest ? oe::plugins::readManifest(library, *digest)
                            : oe::Result<oe::plugins::PluginManifest>(digest.error());
      if (!current) {
        std::cerr << kName << ": " << current.error().message << '\n';
        status = 1;
      } else {
        std::cout << oe::plugins::manifestPath(library).string() << ": current\n";
      }
      continue;
    }
    auto opened = oe::plugins::PluginLibrary::open(library, &sink);
    if (!opened) {
      std::cerr << kName << ": refused plugin " << opened.error().message << '\n';
      status = 1;
      continue;
    }
    const oe::plugins::PluginManifest manifest = oe::plugins::describeLibrary(**opened);
    (*opened)->detachSink(&sink);
    if (auto written = oe::plugins::writeManifest(library, manifest); !written) {
      std::cerr << kName << ": " << written.error().message << '\n';
      status = 1;
      continue;
    }
    std::cout << "wrote " << oe::plugins::manifestPath(library).string() << '\n';
  }
  return status;
}
