// Provider command lines: see command.hpp.
#include "command.hpp"

namespace oe::cliagent {

std::optional<Provider> providerNamed(std::string_view name) {
  if (name == "claude-code") {
    return Provider::kClaudeCode;
  }
  if (name == "codex") {
    return Provider::kCodex;
  }
  if (name == "gemini") {
    return Provider::kGemini;
  }
  return std::nullopt;
}

const char* providerName(Provider provider) {
  switch (provider) {
    case Provider::kClaudeCode:
      return "claude-code";
    case Provider::kCodex:
      return "codex";
    case Provider::kGemini:
      return "gemini";
    default:
      return "?";
  }
}

const char* programOf(Provider provider) {
  switch (provider) {
    case Provider::kClaudeCode:
      return "claude";
    case Provider::kCodex:
      return "codex";
    case Provider::kGemini:
      return "gemini";
    default:
      return "?";
  }
}

std::vector<std::string> buildArgv(const CommandSpec& spec) {
  std::vector<std::string> argv{programOf(spec.provider)};
  auto addModelAndExtras = [&] {
    if (spec.model) {
      argv.emplace_back("--model");
      argv.push_back(*spec.model);
    }
    argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  };
  switch (spec.provider) {
    case Provider::kClaudeCode:
      argv.emplace_back("-p");
      if (!spec.prompt_on_stdin) {
        argv.push_back(spec.prompt);
      }
      argv.emplace_back("--output-format");
      if (spec.stream) {
        argv.emplace_back("stream-json");
        argv.emplace_back("--verbose");  // the CLI refuses stream-json with -p without it
      } else {
        argv.emplace_back(spec.json ? "json" : "text");
      }
      addModelAndExtras();
      break;
    case Provider::kCodex:
      argv.emplace_back("exec");
      argv.emplace_back("--skip-git-repo-check");
      addModelAndExtras();
      argv.push_back(spec.prompt_on_stdin ? std::string("-") : spec.prompt);
      break;
    case Provider::kGemini:
      argv.emplace_back("--yolo");
      if (!spec.prompt_on_stdin) {
        argv.emplace_back("--prompt");
        argv.push_back(spec.prompt);
      }
      addModelAndExtras();
      break;
    default:
      break;
  }
  return argv;
}

std::vector<std::string> providerEnvironment(Provider provider) {
  if (provider == Provider::kGemini) {
    return {"GEMINI_CLI_TRUST_WORKSPACE=true"};
  }
  return {};
}

}  // namespace oe::cliagent
