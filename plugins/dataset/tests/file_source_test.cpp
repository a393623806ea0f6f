// source.type file: json, jsonl, csv and tsv from real files; format inference; the upstream
// messages (reference §6.4) and oe's line-numbered parse errors.
#include "dataset_test_fixture.hpp"

namespace oe::dataset::test {
namespace {

using FileSourceTest = DatasetPluginTest;

TEST_F(FileSourceTest, JsonArrayIsReadAsIs) {
  const Outcome out = runFile("data/rows.json", R"([{"v":1},{"v":2,"w":[true,null]},"x",3.5])");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"v":1},{"v":2,"w":[true,null]},"x",3.5])"));
}

TEST_F(FileSourceTest, MultiKindE2eRowsAreThreeObjects) {
  // The multi-kind e2e's dataset (reference §11.2): a json file of 3 rows.
  const Outcome out = runFile("rows.json", R"([{"v":1},{"v":2},{"v":3}])");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"v":1},{"v":2},{"v":3}])"));
}

TEST_F(FileSourceTest, JsonMustBeATopLevelArray) {
  EXPECT_EQ(runFile("o.json", R"({"rows":[]})").error,
            "File \"o.json\" must contain a top-level JSON array; got object");
  EXPECT_EQ(runFile("n.json", "null").error,
            "File \"n.json\" must contain a top-level JSON array; got object");
  EXPECT_EQ(runFile("s.json", "\"text\"").error,
            "File \"s.json\" must contain a top-level JSON array; got string");
  EXPECT_EQ(runFile("d.json", "42").error,
            "File \"d.json\" must contain a top-level JSON array; got number");
  EXPECT_EQ(runFile("b.json", "true").error,
            "File \"b.json\" must contain a top-level JSON array; got boolean");
}

TEST_F(FileSourceTest, InvalidJsonNamesTheFileAndPosition) {
  const Outcome out = runFile("bad.json", "[\n  {\"v\": 1},\n  {\"v\": }\n]");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error.rfind("Dataset \"load\": bad.json is not valid JSON: line 3, column 9", 0),
            0U)
      << out.error;
}

TEST_F(FileSourceTest, JsonWithByteOrderMarkIsRead) {
  const Outcome out = runFile("bom.json", "\xEF\xBB\xBF[1]");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse("[1]"));
}

TEST_F(FileSourceTest, MissingFileGivesTheUpstreamMessage) {
  const Outcome out = run(node({{"type", "file"}, {"uri", "./data/none.csv"}}));
  EXPECT_EQ(out.status, OE_NOT_FOUND);
  EXPECT_EQ(out.error, "Dataset file not found: " + abs("data/none.csv") +
                           " (declared as \"./data/none.csv\")");
}

TEST_F(FileSourceTest, AbsoluteUriIsUsedAsIs) {
  TempDir elsewhere;
  const auto path = elsewhere.write("x.json", "[7]");
  const Outcome out = run(node({{"type", "file"}, {"uri", path.string()}}));
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse("[7]"));
}

TEST_F(FileSourceTest, JsonlParsesEachNonEmptyTrimmedLine) {
  const Outcome out =
      runFile("e.jsonl", "\xEF\xBB\xBF{\"a\":1}\r\n\n   \n  {\"a\":2}  \n[3]\n\"s\"");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"a":1},{"a":2},[3],"s"])"));
  const Outcome nd = runFile("e.ndjson", "{\"b\":1}\n");
  ASSERT_TRUE(nd.ok()) << nd.error;
  EXPECT_EQ(nd.rows(), Json::parse(R"([{"b":1}])"));
  const Outcome empty = runFile("empty.jsonl", "\n\n");
  ASSERT_TRUE(empty.ok()) << empty.error;
  EXPECT_EQ(empty.rows(), Json::array());
}

TEST_F(FileSourceTest, JsonlBadLineIsNamedByNumber) {
  const Outcome out = runFile("events.jsonl", "{\"a\":1}\n\n{\"a\":2}\n{\"a\": nope}\n{\"a\":5}\n");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error.rfind("Dataset \"load\": events.jsonl line 4 is not valid JSON: column ", 0),
            0U)
      << out.error;
}

TEST_F(FileSourceTest, FormatIsInferredFromTheExtensionOrGiven) {
  EXPECT_EQ(runFile("UPPER.JSON", "[1]").rows(), Json::parse("[1]"));
  EXPECT_EQ(runFile("rows.txt", "a,b\n1,2\n", {{"format", "csv"}}).rows(),
            Json::parse(R"([{"a":"1","b":"2"}])"));
  EXPECT_EQ(runFile("rows.log", "{\"x\":1}\n", {{"format", "jsonl"}}).rows(),
            Json::parse(R"([{"x":1}])"));
  // An explicit format wins over the extension.
  EXPECT_EQ(runFile("rows.csv", "[1,2]", {{"format", "json"}}).rows(), Json::parse("[1,2]"));
}

TEST_F(FileSourceTest, UnknownExtensionGivesTheUpstreamMessage) {
  const Outcome out = runFile("rows.txt", "a\n");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error,
            "Cannot infer file format from extension \".txt\"; specify source.format explicitly");
  EXPECT_EQ(runFile("noext", "a\n").error,
            "Cannot infer file format from extension \"\"; specify source.format explicitly");
}

TEST_F(FileSourceTest, UnknownFormatIsNamed) {
  EXPECT_EQ(runFile("rows.txt", "a\n", {{"format", "xml"}}).error,
            "Dataset \"load\": unknown source.format \"xml\"; use json, jsonl, csv, tsv or "
            "parquet");
}

TEST_F(FileSourceTest, ParquetIsNotImplementedWithTheUpstreamMessage) {
  const Outcome by_ext = runFile("t.parquet", "PAR1");
  EXPECT_EQ(by_ext.status, OE_UNIMPLEMENTED);
  EXPECT_EQ(by_ext.error, "parquet file format is not implemented in V1");
  EXPECT_EQ(runFile("t.bin", "PAR1", {{"format", "parquet"}}).error,
            "parquet file format is not implemented in V1");
}

TEST_F(FileSourceTest, CsvHeaderGivesKeysAndEveryValueIsAString) {
  const Outcome out = runFile("sales.csv", "region,amount,note\nnorth,10,\nsouth,2.5,ok\n");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"region":"north","amount":"10","note":""},
                                         {"region":"south","amount":"2.5","note":"ok"}])"));
  // Column order is kept in the response.
  EXPECT_EQ(out.rows()[0].begin().key(), "region");
}

TEST_F(FileSourceTest, CsvQuotingFollowsRfc4180) {
  const std::string csv =
      "\xEF\xBB\xBF"
      "name,quote,empty\r\n"
      "\"Smith, J.\",\"She said \"\"hi\"\"\",\"\"\r\n"
      "\r\n"
      "\"multi\nline\",\"a\r\nb\",x\r\n"
      "plain,\"\"\"\",\"\"\"\"\"\"\n"
      "last,no newline,end";
  const Outcome out = runFile("q.csv", csv);
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([
    {"name":"Smith, J.","quote":"She said \"hi\"","empty":""},
    {"name":"multi\nline","quote":"a\r\nb","empty":"x"},
    {"name":"plain","quote":"\"","empty":"\"\""},
    {"name":"last","quote":"no newline","empty":"end"}])"));
}

TEST_F(FileSourceTest, CsvEdgeCases) {
  // Header only, an empty file, trailing empty fields, a lone CR line end, odd bytes.
  EXPECT_EQ(runFile("h.csv", "a,b\n").rows(), Json::array());
  EXPECT_EQ(runFile("e.csv", "").rows(), Json::array());
  EXPECT_EQ(runFile("t.csv", "a,b,c\n,,\n").rows(), Json::parse(R"([{"a":"","b":"","c":""}])"));
  EXPECT_EQ(runFile("cr.csv", "a,b\r1,2\r3,4").rows(),
            Json::parse(R"([{"a":"1","b":"2"},{"a":"3","b":"4"}])"));
  EXPECT_EQ(runFile("u.csv", "k\n\xC3\xA9t\xC3\xA9\n\xFF\n").rows(),
            Json::parse("[{\"k\":\"\xC3\xA9t\xC3\xA9\"},{\"k\":\"\xEF\xBF\xBD\"}]"));
  // Spaces are data, not padding.
  EXPECT_EQ(runFile("s.csv", "a, b\n 1 ,2\n").rows(), Json::parse(R"([{"a":" 1 "," b":"2"}])"));
  // A repeated column keeps its last value, as a JavaScript object would.
  EXPECT_EQ(runFile("dup.csv", "a,b,a\n1,2,3\n").rows(), Json::parse(R"([{"a":"3","b":"2"}])"));
}

TEST_F(FileSourceTest, CsvUnterminatedQuoteNamesTheFileAndLine) {
  const Outcome out = runFile("broken.csv", "a,b\n1,2\n3,\"open\n4,5\n6,7\n");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error,
            "Dataset \"load\": broken.csv line 3: field 2 opens a quote that is never closed; "
            "end it with \" (a quote inside a quoted field is written \"\")");
}

TEST_F(FileSourceTest, CsvRowWithMoreFieldsThanTheHeaderIsAnError) {
  const Outcome out = runFile("wide.csv", "name,city\n\"a\nb\",x\nAda,London,UK\n");
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error,
            "Dataset \"load\": wide.csv line 4 has 3 fields but the header (line 1) has 2; put "
            "quotes around values that contain a comma");
}

TEST_F(FileSourceTest, CsvRowWithFewerFieldsIsAnErrorToo) {
  EXPECT_EQ(runFile("short.csv", "a,b,c\n1,2\n").error,
            "Dataset \"load\": short.csv line 2 has 2 fields but the header (line 1) has 3; "
            "every row needs a value for every column");
}

TEST_F(FileSourceTest, CsvStrayQuotesAreErrors) {
  EXPECT_EQ(runFile("q1.csv", "a,b\n1,5\" screen\n").error,
            "Dataset \"load\": q1.csv line 2: field 2 has a quote inside an unquoted value; put "
            "the whole field in quotes and write the quote as \"\"");
  EXPECT_EQ(runFile("q2.csv", "a,b\n\n\"x\"y,2\n").error,
            "Dataset \"load\": q2.csv line 3: field 1 has text after its closing quote; put the "
            "whole field in quotes and write a quote inside it as \"\"");
}

TEST_F(FileSourceTest, TsvUsesTabsWithTheSameQuotingRules) {
  const Outcome out = runFile("t.tsv", "name\tnote\nAda\t\"tab\there, comma, fine\"\nBob\tx,y\n");
  ASSERT_TRUE(out.ok()) << out.error;
  EXPECT_EQ(out.rows(), Json::parse(R"([{"name":"Ada","note":"tab\there, comma, fine"},
                                         {"name":"Bob","note":"x,y"}])"));
  EXPECT_EQ(runFile("t.txt", "a\tb\n1\t2\n", {{"format", "tsv"}}).rows(),
            Json::parse(R"([{"a":"1","b":"2"}])"));
  EXPECT_EQ(runFile("w.tsv", "a\tb\n1\t2\t3\n").error,
            "Dataset \"load\": w.tsv line 2 has 3 fields but the header (line 1) has 2; put "
            "quotes around values that contain a tab");
}

TEST_F(FileSourceTest, DirectoryIsNotAFile) {
  std::filesystem::create_directories(dir_ / "folder.json");
  const Outcome out = run(node({{"type", "file"}, {"uri", "folder.json"}}));
  EXPECT_EQ(out.status, OE_INVALID_ARGUMENT);
  EXPECT_EQ(out.error, "Dataset \"load\": " + abs("folder.json") +
                           " is a directory; source.uri must name a file");
}

}  // namespace
}  // namespace oe::dataset::test
