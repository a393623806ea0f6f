// Which part of a shared PostgreSQL database an experience's state is: its scope.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <string_view>

namespace oe::pgstore {

// OE_STORE_SCOPE when set, else the experience's `name:` (else "default"), followed by
// ":<file name>" when the experience's file is not experience.yaml (`pricing:b.yaml`): two YAML
// files of one folder keep apart in the database as on disk (spec::workspaceDir), while the
// experience.yaml of two machines' folders still meet under its name.
[[nodiscard]] std::string storeScope(std::string_view experience_name,
                                     const std::filesystem::path& experience_file);

// How long a run keeps reconnecting to a PostgreSQL store that went away (a restart, a
// failover) before a write fails: OE_STORE_RETRY_MS, else 30 s.
[[nodiscard]] std::chrono::milliseconds storeRetry();

}  // namespace oe::pgstore
