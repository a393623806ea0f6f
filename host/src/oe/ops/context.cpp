// Loading and checking an experience with its plugins (see context.hpp).
#include "oe/ops/context.hpp"

#include <iostream>

#include "oe/common/diagnostic.hpp"
#include "oe/run/run.hpp"

namespace oe::ops {

using run::kindCatalog;

void StderrLog::write(oe_log_level level, std::string_view source, std::string_view message) {
  const char* tag = level >= OE_LOG_ERROR ? "error" : level >= OE_LOG_WARN ? "warning" : "info";
  if (level < OE_LOG_INFO) {
    return;
  }
  std::string line = "oe: " + std::string(tag) + ": [" + std::string(source) + "] ";
  line += message;
  if (divert_) {
    divert_(std::move(line));
    return;
  }
  std::cerr << line << '\n';
}

void loadPlugins(plugins::PluginRegistry& registry,
                 const std::optional<std::filesystem::path>& experience_dir) {
  registry.loadFrom(plugins::PluginRegistry::searchPath(experience_dir));
}

void reportPluginProblems(const plugins::PluginRegistry& registry) {
  for (const auto& refusal : registry.refusals()) {
    std::cerr << "oe: warning: refused plugin " << refusal.reason << '\n';
  }
  for (const auto& warning : registry.warnings()) {
    std::cerr << "oe: warning: " << warning << '\n';
  }
}

const spec::Experience* Checked::model() const {
  return loaded.experience ? &*loaded.experience : loaded.partial ? &*loaded.partial : nullptr;
}

Checked checkExperience(const std::filesystem::path& path_arg, plugins::PluginRegistry& registry,
                        bool strict, bool report_problems) {
  Checked out;
  out.loaded = spec::loadExperience(spec::resolveExperiencePath(path_arg));
  spec::KindCatalog catalog;
  if (const spec::Experience* model = out.model()) {
    // Plugins only when there is something to check against them (not for a YAML error).
    loadPlugins(registry, model->dir);
    if (report_problems) {
      reportPluginProblems(registry);
    }
    catalog = kindCatalog(registry);
  }
  out.diagnostics = spec::checkLoaded(out.loaded, catalog, strict);
  return out;
}

std::string percentEncode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4U];
      out += kHex[byte & 0x0FU];
    }
  }
  return out;
}

std::optional<std::string> percentDecode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) {
      return std::nullopt;
    }
    const int high = hex(text[i + 1]);
    const int low = hex(text[i + 2]);
    if (high < 0 || low < 0) {
      return std::nullopt;
    }
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return out;
}

}  // namespace oe::ops
