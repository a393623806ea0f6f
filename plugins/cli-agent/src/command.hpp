// The command line of each provider, as upstream builds it (reference §6.6), plus oe's
// additions: each CLI's JSON event stream for live progress (opt-in: `stream: true`) and a
// prompt too long for argv on stdin.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oe::cliagent {

enum class Provider { kClaudeCode, kCodex, kGemini };

std::optional<Provider> providerNamed(std::string_view name);
const char* providerName(Provider provider);  // "claude-code", "codex", "gemini"
const char* programOf(Provider provider);     // "claude", "codex", "gemini"

// Linux caps one argv string at 128 KiB; a longer prompt goes on stdin.
inline constexpr size_t kMaxArgvPrompt = size_t{100} << 10U;

struct CommandSpec {
  Provider provider = Provider::kClaudeCode;
  std::string prompt;
  std::optional<std::string> model;
  bool json = false;    // output_format: json
  bool stream = false;  // the CLI's JSON events: claude --output-format stream-json --verbose,
                        // codex exec --json, gemini --output-format stream-json
  std::vector<std::string> extra_args;
  bool prompt_on_stdin = false;  // leave the prompt off argv: the caller writes it to stdin
};

// argv, argv[0] being the program's name (looked up on PATH by the caller):
//   claude -p <prompt> --output-format <text|json|stream-json> [--verbose] [--model m] [extra…]
//   codex exec --skip-git-repo-check [--json] [--model m] [extra…] <prompt|->
//   gemini --yolo [--output-format stream-json] --prompt <prompt> [--model m] [extra…]
std::vector<std::string> buildArgv(const CommandSpec& spec);

// What the stream option makes the CLI print, for messages: "stream-json", "--json events".
const char* streamFormatName(Provider provider);

// What oe adds to the environment of a provider's process (before the node's env:, which wins):
// gemini refuses to run headless in an untrusted folder (exit 55) unless told to trust it.
std::vector<std::string> providerEnvironment(Provider provider);

}  // namespace oe::cliagent
