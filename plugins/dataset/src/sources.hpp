// The readers behind each source type. Each returns the rows as the text of one JSON array,
// built directly (no DOM for CSV and SQLite rows), or the failure with upstream's message.
#pragma once

#include <oe/host.h>
#include <oe/cpp/http.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "expected.hpp"
#include "source_spec.hpp"

namespace oe::dataset {

// True once the host wants the call to stop; readers poll it between rows.
using CancelCheck = std::function<bool()>;

// `who` names the node in messages: Dataset "<id>".
Expected<std::string> readFileSource(const FileSource& source, const std::string& who,
                                     const CancelCheck& cancelled);

// Opens the database read-only; BLOBs come out as base64 strings.
Expected<std::string> readSqliteSource(const SqliteSource& source, const std::string& who,
                                       const CancelCheck& cancelled);

// Through the host's oe.http/1 (`http` may be nullptr when the host offers none).
Expected<std::string> readHttpSource(const HttpSource& source, const std::string& who,
                                     const sdk::Http& http, oe_host_ctx* call);

// Starts the server named in <experience>/mcp.json, reads the resource and normalises its
// contents (reference §6.4). `client_version` goes into the initialize request's clientInfo.
Expected<std::string> readMcpResourceSource(const McpResourceSource& source,
                                            const std::string& node_id,
                                            std::string_view client_version,
                                            const CancelCheck& cancelled);

}  // namespace oe::dataset
