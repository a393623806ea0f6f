// What every test of the installed SDK starts with: this build installed to a temporary prefix,
// and the options a third party's build runs with there.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "abi/process.hpp"

namespace oe::abi_test {

// A HOME of its own (no user package registry, no user plugins, no user trust store) and none
// of the caller's CMAKE_PREFIX_PATH or OE_PLUGIN_PATH, so only the prefix the test installed is
// found. The trust store is <home>/trust.json: a plugin built there runs once `oe trust` says so.
inline ProcessOptions isolatedOptions(const std::filesystem::path& home) {
  ProcessOptions options;
  options.env["HOME"] = home.string();
  options.env["CMAKE_PREFIX_PATH"] = std::nullopt;
  options.env["OE_PLUGIN_PATH"] = std::nullopt;
  options.env["XDG_CONFIG_HOME"] = std::nullopt;
  options.env["OE_TRUST_FILE"] = (home / "trust.json").string();
  options.timeout = std::chrono::seconds(120);
  return options;
}

// `cmake --install` of this build into `prefix`; wrap in ASSERT_NO_FATAL_FAILURE.
inline void installThisBuild(const std::filesystem::path& prefix, const ProcessOptions& options) {
  const ProcessResult install = runProcess(
      {OE_CMAKE_COMMAND, "--install", OE_BINARY_DIR, "--prefix", prefix.string()}, options);
  ASSERT_EQ(install.exit_code, 0) << "cmake --install of the oe build failed (is it built?)\n"
                                  << install.describe();
}

}  // namespace oe::abi_test
