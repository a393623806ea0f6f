// One file of the dashboard as the build embeds it (cmake/OeEmbedFiles.cmake writes the table
// from host/src/oe/webui/assets); webui.cpp is its only reader.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace oe::webui::detail {

struct EmbeddedFile {
  std::string_view path;  // relative to assets/, '/'-separated: "app.js"
  const unsigned char* data;
  size_t size;
  std::string_view etag;  // "\"<first 32 hex digits of the SHA-256>\"", quotes included
};

// Every embedded file, sorted by path. Defined in the generated oe_webui_assets.cpp.
std::span<const EmbeddedFile> embeddedFiles();

}  // namespace oe::webui::detail
