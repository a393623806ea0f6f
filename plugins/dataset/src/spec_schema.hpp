// The JSON Schema (draft-07) of a dataset node's own fields, which `oe validate` checks: the one
// `writes` field, and `source` with the keys each source type requires. An mcp-resource source
// reads <experience>/mcp.json, which the node does not name: x-oe-reads-file puts it in the
// node's cache key and pin (host/src/oe/spec/file_check.hpp).
#pragma once

namespace oe::dataset {

inline constexpr const char* kDatasetSpecSchema =
    R"j({"type":"object","required":["source","writes"],"properties":{)j"
    R"j("writes":{"type":"array","minItems":1,"maxItems":1,"items":{"type":"string"},)j"
    R"j("description":"Exactly one state field; it receives the rows as an array"},)j"
    R"j("source":{"type":"object","required":["type"],)j"
    R"j("description":"Where the rows come from: a file, a SQLite query, an HTTP endpoint or )j"
    R"j(a resource of an MCP server declared in mcp.json",)j"
    R"j("properties":{)j"
    R"j("type":{"enum":["file","sqlite","http","mcp-resource"],"description":"The kind of )j"
    R"j(source"},)j"
    R"j("uri":{"type":"string","minLength":1,"description":"file, sqlite: the path, relative )j"
    R"j(to the experience directory (or absolute); mcp-resource: the resource URI"},)j"
    R"j("format":{"enum":["json","jsonl","csv","tsv","parquet"],)j"
    R"j("x-oe-unsupported":{"parquet":"parquet files are not read yet in oe; convert the file )j"
    R"j(to jsonl, json or csv"},"description":"file: how to )j"
    R"j(read it; inferred from the extension (.json, .jsonl/.ndjson, .csv, .tsv) when absent"},)j"
    R"j("transform":{"description":"Accepted and ignored, as in OpenExpertise"},)j"
    R"j("query":{"type":"string","minLength":1,"description":"sqlite: the SQL query; each )j"
    R"j(result row becomes an object (column -> value). The file is opened read-only"},)j"
    R"j("params":{"type":"array","description":"sqlite: values bound to the query's )j"
    R"j(parameters, in order (oe extension)"},)j"
    R"j("url":{"type":"string","minLength":1,"description":"http: the URL; the response must )j"
    R"j(be a JSON array"},)j"
    R"j("method":{"enum":["GET","POST"],"description":"http: GET (default) or POST"},)j"
    R"j("body":{"description":"http: sent as JSON with POST (content-type: application/json)"},)j"
    R"j("headers":{"type":"object","additionalProperties":{"type":"string"},)j"
    R"j("description":"http: extra request headers (oe extension)"},)j"
    R"j("timeout_ms":{"type":"integer","minimum":1,"description":"http: the whole request )j"
    R"j(must finish within this many milliseconds (default 600000); mcp-resource: the limit )j"
    R"j(of each exchange with the server: start and handshake, then the read (default )j"
    R"j(60000). oe extension"},)j"
    R"j("server":{"type":"string","minLength":1,"description":"mcp-resource: the server name )j"
    R"j(under servers in <experience>/mcp.json"}},)j"
    R"j("allOf":[)j"
    R"j({"description":"file: a JSON, JSONL, CSV or TSV file",)j"
    R"j("if":{"properties":{"type":{"const":"file"}},"required":["type"]},)j"
    R"j("then":{"required":["uri"],"properties":{"uri":{"x-oe-path":"input-file"}}}},)j"
    R"j({"description":"sqlite: a read-only SQLite query",)j"
    R"j("if":{"properties":{"type":{"const":"sqlite"}},"required":["type"]},)j"
    R"j("then":{"required":["uri","query"],"properties":{"uri":{"x-oe-path":"input-file"}}}},)j"
    R"j({"description":"http: an HTTP endpoint returning a JSON array",)j"
    R"j("if":{"properties":{"type":{"const":"http"}},"required":["type"]},)j"
    R"j("then":{"required":["url"]}},)j"
    R"j({"description":"mcp-resource: a resource of an MCP server started over stdio",)j"
    R"j("if":{"properties":{"type":{"const":"mcp-resource"}},"required":["type"]},)j"
    R"j("then":{"required":["server","uri"],"x-oe-reads-file":"mcp.json"}}]}}})j";

}  // namespace oe::dataset
