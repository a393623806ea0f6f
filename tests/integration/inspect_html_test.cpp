// `oe inspect --html` end to end: a real failing run, its report written with --out and opened
// in Debian's headless Chromium with every host name unresolvable. The rendered DOM shows the
// failed node, its error (as text, not markup) and its retry; the page fetches nothing and a
// screenshot of it is produced. A worktree node's diff is there too, folded, escaped and cut.
#include <regex>

#include "oe_fixture.hpp"

namespace oe::test {
namespace {

using InspectHtml = OeTest;

constexpr std::string_view kReportYaml = R"(name: report-check
version: 0.1.0
state:
  schema:
    items: { type: array }
    seen: { type: array, merge: array_append }
    fetched: { type: string }
graph:
  nodes:
    - { id: load, kind: tool, impl: ./tools/load.mjs, writes: [items] }
    - { id: each, kind: tool, impl: ./tools/each.mjs, writes: [seen],
        for_each: { source: $.items, concurrency: 2 } }
    - { id: fetch, kind: tool, impl: ./tools/fail.mjs, writes: [fetched],
        args: { url: "<b>not bold</b>" },
        on_error: { policy: retry, attempts: 2, base_ms: 1 } }
    - { id: publish, kind: tool, impl: ./tools/load.mjs }
  edges:
    - { from: load, to: each }
    - { from: load, to: fetch }
    - { from: fetch, to: publish }
)";

// Debian's chromium (.ci/deps installs it).
std::string chromiumPath() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) {
      return path;
    }
  }
  return "";
}

// Chromium without a sandbox (root in CI), GPU or background traffic, every host name mapped
// to nothing, and a profile in the test's temp dir; then `extra`, then the page.
std::vector<std::string> headlessChromium(const std::filesystem::path& profile,
                                          const std::filesystem::path& page,
                                          std::vector<std::string> extra) {
  std::vector<std::string> args = {chromiumPath(),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--no-first-run",
                                   "--host-resolver-rules=MAP * ~NOTFOUND",
                                   "--user-data-dir=" + profile.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("file://" + page.string());
  return args;
}

TEST_F(InspectHtml, AFailedRunsReportShowsTheFailedNodeAndItsErrorInChromium) {
  ASSERT_FALSE(chromiumPath().empty()) << "chromium is not installed: run .ci/deps (apt chromium)";
  writeExperience(kReportYaml);
  writeTool("load.mjs",
            "export default async () => ({ state_delta: { items: ['a', 'b', 'c'] } });\n");
  writeTool("each.mjs",
            "export default async (args) => ({ state_delta: { seen: [args.$item] },\n"
            "  edge_output: { item: args.$item } });\n");
  writeTool("fail.mjs",
            "export default async () => {\n"
            "  throw new Error('upstream refused </script><img src=x onerror=alert(1)>');\n"
            "};\n");
  int exit_code = 0;
  const auto run = runJson({}, &exit_code);  // with the cache: it holds the edge outputs
  ASSERT_EQ(run["status"], "partial") << last_stderr_;
  EXPECT_EQ(exit_code, 1);

  const auto page = dir_.path() / "report.html";
  auto inspect = oe({"inspect", "--last", "--experience", dir_.path().string(), "--html", "--out",
                     page.string()});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_EQ(inspect.out, "");
  const std::string html = readFile(page);
  // Self-contained: nothing it could fetch, no script, and the error is text.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_FALSE(std::regex_search(html, std::regex(R"(<[^>]*\s(src|href)\s*=)")));
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  // Without --out the same page goes to stdout.
  auto to_stdout = oe({"inspect", "--last", "--experience", dir_.path().string(), "--html"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, html);

  const auto profile = dir_.path() / "chromium-profile";
  auto dom = runProcess(headlessChromium(profile, page, {"--dump-dom"}));
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  // The rendered DOM: the failed node, open, with its error as text (Chromium serialises text
  // with < and > escaped: had the error been parsed as markup, an <img> element would be here).
  const std::regex failed_detail(
      R"(<details class="node-detail status-failed" id="node-\d+" open=""><summary>.*<b>fetch</b>)");
  EXPECT_TRUE(std::regex_search(dom.out, failed_detail)) << dom.out;
  EXPECT_NE(dom.out.find("upstream refused &lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"),
            std::string::npos)
      << dom.out;
  EXPECT_EQ(dom.out.find("<img"), std::string::npos);
  EXPECT_EQ(dom.out.find("<b>not bold</b>"), std::string::npos);  // the arg is text too
  EXPECT_NE(dom.out.find("&lt;b&gt;not bold&lt;/b&gt;"), std::string::npos);
  // The graph's boxes carry their status, the Gantt has a row per call (three items) and the
  // retry of fetch, and the for_each's state and edge output are in its detail.
  EXPECT_NE(dom.out.find("tool · failed"), std::string::npos);
  EXPECT_NE(dom.out.find("tool · skipped"), std::string::npos);
  EXPECT_NE(dom.out.find("tool · success"), std::string::npos);
  // Each item's row names its index (the events' "item"), not ten rows of `each`.
  for (const char* row : {"<title>each [0]: success", "<title>each [1]: success",
                          "<title>each [2]: success"}) {
    EXPECT_NE(dom.out.find(row), std::string::npos) << row;
  }
  EXPECT_EQ(dom.out.find("<title>each: success"), std::string::npos);
  EXPECT_NE(dom.out.find("<title>fetch: failed"), std::string::npos);
  EXPECT_NE(dom.out.find("1 retry"), std::string::npos);
  EXPECT_NE(dom.out.find("<th>retry after attempt 1</th>"), std::string::npos);
  EXPECT_NE(dom.out.find("<th>edge output</th>"), std::string::npos);
  EXPECT_NE(dom.out.find("\"item\": \""), std::string::npos);
  EXPECT_TRUE(std::regex_search(
      dom.out, std::regex("<th>nodes</th><td>\\d+ ran, 0 cached, 1 failed, 1 skipped</td>")))
      << dom.out;

  const auto png = dir_.path() / "report.png";
  auto shot = runProcess(
      headlessChromium(profile, page, {"--window-size=1200,1800", "--screenshot=" + png.string()}));
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  const std::string image = readFile(png);
  ASSERT_GT(image.size(), 10'000u);  // a blank 1200x1800 PNG is far smaller than a drawn page
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
}

TEST_F(InspectHtml, OutNeedsHtmlAndAnUnwritableOutFails) {
  writeExperience(kReportYaml);
  writeTool("load.mjs", "export default async () => ({ state_delta: { items: [] } });\n");
  writeTool("each.mjs", "export default async () => ({});\n");
  writeTool("fail.mjs", "export default async () => { throw new Error('no'); };\n");
  runJson({"--no-cache"});
  auto no_html = oe({"inspect", "--last", "--experience", dir_.path().string(), "--out", "x.html"});
  EXPECT_EQ(no_html.exit_code, 2) << no_html.err;
  auto bad = oe({"inspect", "--last", "--experience", dir_.path().string(), "--html", "--out",
                 (dir_.path() / "no" / "such" / "r.html").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("cannot write"), std::string::npos) << bad.err;
  auto both = oe({"inspect", "--last", "--experience", dir_.path().string(), "--html", "--json"});
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

TEST_F(InspectHtml, AWorktreeNodesDiffIsFoldedEscapedAndCutInChromium) {
  ASSERT_FALSE(chromiumPath().empty()) << "chromium is not installed: run .ci/deps (apt chromium)";
  // A tool in a worktree that adds markup to a.txt and writes a file whose diff is past the
  // report's 64 KiB of a diff (20000 numbered lines).
  dir_.write(".gitignore", ".openexpertise/\n");
  dir_.write("a.txt", "hello\n");
  writeExecutable("edit.sh",
                  "#!/bin/sh\ncat >/dev/null\necho '<script>alert(1)</script>' >> a.txt\n"
                  "seq 1 20000 > big.txt\necho '{\"state_delta\":{}}'\n");
  writeExperience(
      "name: diff-report\nversion: 0.1.0\nstate:\n  schema: {}\ngraph:\n  nodes:\n"
      "    - { id: edit, kind: tool, impl: ./edit.sh, workspace: worktree }\n"
      "  edges: []\n");
  const std::map<std::string, std::string> identity = {{"GIT_AUTHOR_NAME", "t"},
                                                       {"GIT_AUTHOR_EMAIL", "t@t"},
                                                       {"GIT_COMMITTER_NAME", "t"},
                                                       {"GIT_COMMITTER_EMAIL", "t@t"}};
  for (const std::vector<std::string>& args : {std::vector<std::string>{"git", "init", "-q"},
                                               {"git", "add", "-A"},
                                               {"git", "commit", "-q", "-m", "init"}}) {
    ASSERT_EQ(runProcess(args, identity, dir_.path()).exit_code, 0);
  }
  const auto run = runJson();
  ASSERT_EQ(run["status"], "success") << last_stderr_;
  std::string artifact;
  for (const auto& event : events(run["run_id"])) {
    if (event.value("type", "") == "node.diff") {
      artifact = event.value("artifact", "");
    }
  }
  ASSERT_EQ(artifact.size(), 64U);
  const auto diff_size = std::filesystem::file_size(dir_.path() / ".openexpertise" / "artifacts" /
                                                    (artifact + ".diff"));
  ASSERT_GT(diff_size, 64U * 1024);

  const auto page = dir_.path() / "report.html";
  auto inspect = oe({"inspect", "--last", "--html", "--out", page.string()});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  const std::string html = readFile(page);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // The summary with the artifact; the text from its first line, cut after a whole line with a
  // note naming the file.
  EXPECT_NE(html.find("artifact <code>" + artifact + "</code>"), std::string::npos);
  EXPECT_NE(html.find("<li><code>a.txt</code></li><li><code>big.txt</code></li>"),
            std::string::npos);
  EXPECT_NE(html.find("<span class=\"file\">diff --git a/a.txt b/a.txt</span>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"add\">+100</span>\n"), std::string::npos);
  EXPECT_EQ(html.find("<span class=\"add\">+20000</span>"), std::string::npos);
  EXPECT_NE(html.find("more not shown (a report shows the first 64 KiB of each diff and 1024 KiB "
                      "in all): the whole diff is .openexpertise/artifacts/" +
                      artifact + ".diff"),
            std::string::npos);
  EXPECT_TRUE(std::regex_search(html, std::regex(R"(\n</pre><p class="note">)")))
      << "the shown text does not end with a whole line";

  const auto profile = dir_.path() / "chromium-profile";
  auto dom = runProcess(headlessChromium(profile, page, {"--dump-dom"}));
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  // Folded: the diff's <details> is not open; the node's line carries the summary; the markup
  // the tool wrote is text.
  EXPECT_NE(dom.out.find("<details class=\"diff\"><summary>the diff ("), std::string::npos)
      << dom.out.substr(0, 4000);
  EXPECT_EQ(dom.out.find("<details class=\"diff\" open"), std::string::npos);
  EXPECT_TRUE(std::regex_search(dom.out, std::regex("<b>edit</b>[^<]*diff: 2 files \\+20001 ")));
  EXPECT_NE(dom.out.find("<span class=\"add\">+&lt;script&gt;alert(1)&lt;/script&gt;</span>"),
            std::string::npos);
  EXPECT_EQ(dom.out.find("<script"), std::string::npos);
}

}  // namespace
}  // namespace oe::test
