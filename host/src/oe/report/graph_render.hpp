// `oe graph`'s renderers: an experience's graph as a Mermaid flowchart in upstream's style, and
// as a self-contained HTML page that draws it as inline SVG (no script, nothing fetched).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "oe/spec/experience.hpp"

namespace oe::report {

enum class GraphDirection { kTopDown, kLeftRight };

// `flowchart TD|LR`: one subgraph per phase (declaration order), each node as
// `id["label"]:::<kind class>` in a shape of its kind, edges with a label for `when` and for a
// target's `for_each`, then a `classDef` per class used. Ids that are not plain Mermaid ids
// (letters, digits, `_`; not a keyword such as `end`) are replaced by unique safe ones; the
// label keeps the real id. The experience must be valid (buildDag succeeds).
[[nodiscard]] std::string mermaidGraph(const spec::Experience& experience,
                                       GraphDirection direction);

// A whole HTML page: the graph laid out in layers by topological depth as inline SVG, and the
// Mermaid source in a <pre> for copying. Every value from the experience is escaped.
[[nodiscard]] std::string graphHtml(const spec::Experience& experience, GraphDirection direction);

// How a run report paints a node: these colours instead of its kind's, `note` (its status) after
// the kind on its second line and `tooltip` appended to its title.
struct NodePaint {
  std::string_view fill;
  std::string_view stroke;
  std::string note;
  std::string tooltip;
};

// The graph alone, as the inline SVG graphHtml embeds (styled by graphSvgCss()). `paint`, when
// given, holds one entry per node in experience order.
[[nodiscard]] std::string graphSvg(const spec::Experience& experience, GraphDirection direction,
                                   const std::vector<NodePaint>* paint = nullptr);

// The CSS rules graphSvg's classes need, for the page that embeds it.
[[nodiscard]] std::string_view graphSvgCss();

// Text for a double-quoted Mermaid label: quotes, brackets, braces, `|`, `<`, `>`, `&`, `#` and
// backticks become entity codes (`#quot;`, `#91;`...), control characters become spaces.
[[nodiscard]] std::string mermaidLabel(std::string_view text);

// Text for HTML content and attribute values (`&`, `<`, `>`, `"`, `'`).
[[nodiscard]] std::string htmlEscape(std::string_view text);

}  // namespace oe::report
