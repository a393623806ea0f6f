// Mermaid and HTML renderings of an experience's graph (see graph_render.hpp).
#include "oe/report/graph_render.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "oe/graph/dag.hpp"

namespace oe::report {
namespace {

// How a kind looks: its class name, Mermaid shape delimiters (around the quoted label) and
// colours. tool's are upstream's; the others are oe's, one hue per kind.
struct KindStyle {
  std::string_view kind;
  std::string_view cls;
  std::string_view open;
  std::string_view close;
  std::string_view fill;
  std::string_view stroke;
};

constexpr std::array<KindStyle, 7> kKindStyles = {{
    {"tool", "tool", "[\"", "\"]", "#e3f2fd", "#1565c0"},
    {"agent", "agent", "(\"", "\")", "#f3e5f5", "#6a1b9a"},
    {"skill", "skill", "[[\"", "\"]]", "#ede7f6", "#4527a0"},
    {"dataset", "dataset", "[(\"", "\")]", "#e8f5e9", "#2e7d32"},
    {"experience", "experience", "[/\"", "\"/]", "#fff3e0", "#e65100"},
    {"cli-agent", "cli_agent", "{{\"", "\"}}", "#fce4ec", "#ad1457"},
    {"evolution", "evolution", ">\"", "\"]", "#e0f2f1", "#00695c"},
}};
// Third-party kinds.
constexpr KindStyle kOtherStyle = {"", "other", "[\"", "\"]", "#f5f5f5", "#616161"};

const KindStyle& styleOf(std::string_view kind) {
  for (const KindStyle& style : kKindStyles) {
    if (style.kind == kind) {
      return style;
    }
  }
  return kOtherStyle;
}

bool isAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool isAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// A Mermaid id as it can appear unquoted: letters, digits and `_`, not starting with a digit,
// and not a word the flowchart grammar reserves (`end` closes a subgraph).
bool plainMermaidId(std::string_view id) {
  if (id.empty() || id.size() > 64 || !(isAsciiAlpha(id[0]) || id[0] == '_')) {
    return false;
  }
  for (char c : id) {
    if (!isAsciiAlpha(c) && !isAsciiDigit(c) && c != '_') {
      return false;
    }
  }
  std::string lower(id);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  });
  static constexpr std::array<std::string_view, 14> kReserved = {
      "end",   "graph", "subgraph", "flowchart", "style",   "class",     "classdef",
      "click", "call",  "href",     "linkstyle", "default", "direction", "interpolate"};
  return std::find(kReserved.begin(), kReserved.end(), lower) == kReserved.end();
}

// Gives every node and phase a distinct Mermaid id: a plain id is kept as it is (so hello-tool
// reads `greet`), anything else becomes `<prefix>_<letters, digits, _>` with a number if taken.
class IdMap {
 public:
  // Reserves the plain ids of nodes first, so a replacement never takes an id a node has.
  void reserve(std::string_view id) {
    if (plainMermaidId(id)) {
      reserved_.insert(std::string(id));
    }
  }
  std::string assign(std::string_view id, std::string_view prefix) {
    std::string key(id);
    if (plainMermaidId(id) && given_.count(key) == 0 &&
        (reserved_.count(key) != 0 || used_.count(key) == 0)) {
      given_.insert(key);
      used_.insert(key);
      return key;
    }
    std::string base(prefix);
    base.push_back('_');
    for (char c : id.substr(0, 40)) {
      base.push_back(isAsciiAlpha(c) || isAsciiDigit(c) ? c : '_');
    }
    std::string candidate = base;
    for (int n = 2; used_.count(candidate) != 0 || reserved_.count(candidate) != 0; ++n) {
      candidate = base + "_" + std::to_string(n);
    }
    used_.insert(candidate);
    return candidate;
  }

 private:
  std::set<std::string> reserved_;  // plain node ids
  std::set<std::string> used_;      // every id handed out
  std::set<std::string> given_;     // plain ids handed out (a duplicate gets a new one)
};

struct Names {
  std::vector<std::string> nodes;   // per node, its Mermaid id
  std::vector<std::string> phases;  // per phase in phaseOrder, its Mermaid id
};

struct PhaseRef {
  std::string id;
  std::string title;
};

// Declared phases in order, then phases nodes name without declaring them (oe validate warns).
std::vector<PhaseRef> phaseOrder(const spec::Experience& exp) {
  std::vector<PhaseRef> out;
  std::set<std::string, std::less<>> seen;
  for (const spec::Phase& phase : exp.phases) {
    if (seen.insert(phase.id).second) {
      out.push_back({phase.id, phase.title.value_or(phase.id)});
    }
  }
  for (const spec::NodeSpec& node : exp.nodes) {
    if (node.phase && seen.insert(*node.phase).second) {
      out.push_back({*node.phase, *node.phase});
    }
  }
  return out;
}

Names assignNames(const spec::Experience& exp, const std::vector<PhaseRef>& phases) {
  IdMap map;
  for (const spec::NodeSpec& node : exp.nodes) {
    map.reserve(node.id);
  }
  Names names;
  for (const spec::NodeSpec& node : exp.nodes) {
    names.nodes.push_back(map.assign(node.id, "n"));
  }
  for (const PhaseRef& phase : phases) {
    // A subgraph may not share its id with a node: phases always get the prefix.
    names.phases.push_back(map.assign("phase_" + phase.id, "phase"));
  }
  return names;
}

// The label of an edge: `when` on the edge, `for_each` of its target.
std::string edgeLabel(const spec::Experience& exp, const spec::EdgeSpec& edge) {
  std::string label;
  const spec::NodeSpec* target = exp.findNode(edge.to);
  if (target != nullptr && target->for_each) {
    label = "for_each " + target->for_each->source;
  }
  if (edge.when) {
    label += (label.empty() ? "when " : ", when ") + *edge.when;
  }
  return label;
}

size_t nodeIndex(const spec::Experience& exp, std::string_view id) {
  return static_cast<size_t>(exp.findNode(id) - exp.nodes.data());
}

}  // namespace

namespace {

// `text` with each character found in `entities` replaced by its entity, and every other one
// passed to `other` (which appends it).
template <size_t N, class Other>
std::string replaceEntities(std::string_view text,
                            const std::array<std::pair<char, std::string_view>, N>& entities,
                            Other&& other) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto* entity =
        std::find_if(entities.begin(), entities.end(), [c](const auto& e) { return e.first == c; });
    if (entity != entities.end()) {
      out += entity->second;
    } else {
      other(out, c);
    }
  }
  return out;
}

}  // namespace

std::string mermaidLabel(std::string_view text) {
  // Mermaid's entity codes: named where Mermaid has a name, else the decimal code point.
  static constexpr std::array<std::pair<char, std::string_view>, 11> kEntities = {{
      {'"', "#quot;"},
      {'#', "#35;"},
      {'&', "#amp;"},
      {'<', "#lt;"},
      {'>', "#gt;"},
      {'[', "#91;"},
      {']', "#93;"},
      {'{', "#123;"},
      {'}', "#125;"},
      {'|', "#124;"},
      {'`', "#96;"},
  }};
  // A control character would end the label's line: a space instead.
  return replaceEntities(text, kEntities, [](std::string& out, char c) {
    out.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
  });
}

std::string htmlEscape(std::string_view text) {
  static constexpr std::array<std::pair<char, std::string_view>, 5> kEntities = {{
      {'&', "&amp;"},
      {'<', "&lt;"},
      {'>', "&gt;"},
      {'"', "&quot;"},
      {'\'', "&#39;"},
  }};
  return replaceEntities(text, kEntities, [](std::string& out, char c) { out.push_back(c); });
}

std::string mermaidGraph(const spec::Experience& exp, GraphDirection direction) {
  const std::vector<PhaseRef> phases = phaseOrder(exp);
  const Names names = assignNames(exp, phases);
  std::ostringstream out;
  out << "flowchart " << (direction == GraphDirection::kLeftRight ? "LR" : "TD") << '\n';
  std::set<std::string_view> classes_used;
  auto node_line = [&](size_t i, std::string_view indent) {
    const spec::NodeSpec& node = exp.nodes[i];
    const KindStyle& style = styleOf(node.kind);
    classes_used.insert(style.cls);
    out << indent << names.nodes[i] << style.open << mermaidLabel(node.id) << style.close
        << ":::" << style.cls << '\n';
  };
  for (size_t p = 0; p < phases.size(); ++p) {
    out << "  subgraph " << names.phases[p] << "[\"" << mermaidLabel(phases[p].title) << "\"]\n";
    for (size_t i = 0; i < exp.nodes.size(); ++i) {
      if (exp.nodes[i].phase == phases[p].id) {
        node_line(i, "    ");
      }
    }
    out << "  end\n";
  }
  for (size_t i = 0; i < exp.nodes.size(); ++i) {
    if (!exp.nodes[i].phase) {
      node_line(i, "  ");
    }
  }
  for (const spec::EdgeSpec& edge : exp.edges) {
    out << "  " << names.nodes[nodeIndex(exp, edge.from)] << " -->";
    if (const std::string label = edgeLabel(exp, edge); !label.empty()) {
      out << "|\"" << mermaidLabel(label) << "\"|";
    }
    out << ' ' << names.nodes[nodeIndex(exp, edge.to)] << '\n';
  }
  // In a fixed order (the table's, then third-party), so the output is stable.
  for (const KindStyle& style : kKindStyles) {
    if (classes_used.count(style.cls) != 0) {
      out << "  classDef " << style.cls << " fill:" << style.fill << ",stroke:" << style.stroke
          << '\n';
    }
  }
  if (classes_used.count(kOtherStyle.cls) != 0) {
    out << "  classDef " << kOtherStyle.cls << " fill:" << kOtherStyle.fill
        << ",stroke:" << kOtherStyle.stroke << '\n';
  }
  return out.str();
}

namespace {

// Layout constants of the SVG, in pixels.
constexpr int kMargin = 24;
constexpr int kBoxHeight = 48;
constexpr int kMinBoxWidth = 110;
constexpr int kMaxLabel = 36;  // characters of a label drawn; longer ones end in "..."
constexpr int kCharWidth = 8;  // a generous average for 13px sans-serif
constexpr int kSiblingGap = 28;
constexpr int kLayerGap = 64;

// At most kMaxLabel code points of `text`, cut on a UTF-8 boundary.
std::string shorten(std::string_view text, int& chars) {
  std::string out;
  chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if ((byte & 0xC0U) != 0x80U) {
      if (chars == kMaxLabel) {
        out += "...";
        chars += 3;
        return out;
      }
      ++chars;
    }
    out.push_back(text[i]);
  }
  return out;
}

struct Box {
  int x = 0;
  int y = 0;
  int width = 0;
  std::string label;
  std::string detail;  // kind, and phase when there is one
};

}  // namespace

std::string graphSvg(const spec::Experience& exp, GraphDirection direction,
                     const std::vector<NodePaint>* paint) {
  const bool lr = direction == GraphDirection::kLeftRight;
  auto dag = graph::buildDag(exp);
  std::vector<uint32_t> order;
  if (dag) {
    order = dag->topo;
  } else {  // not reached for a validated experience; declaration order is still drawable
    for (uint32_t i = 0; i < exp.nodes.size(); ++i) {
      order.push_back(i);
    }
  }
  // Depth: the longest path from a node without predecessors.
  std::vector<int> depth(exp.nodes.size(), 0);
  int max_depth = 0;
  for (uint32_t i : order) {
    if (dag) {
      for (uint32_t succ : dag->succs[i]) {
        depth[succ] = std::max(depth[succ], depth[i] + 1);
      }
    }
    max_depth = std::max(max_depth, depth[i]);
  }
  std::vector<std::vector<uint32_t>> layers(exp.nodes.empty() ? 0 : max_depth + 1);
  for (uint32_t i : order) {
    layers[depth[i]].push_back(i);
  }
  std::vector<Box> boxes(exp.nodes.size());
  for (size_t i = 0; i < exp.nodes.size(); ++i) {
    const spec::NodeSpec& node = exp.nodes[i];
    int chars = 0;
    boxes[i].label = shorten(node.id, chars);
    int detail_chars = 0;
    std::string detail = node.kind + (node.phase ? " \xC2\xB7 " + *node.phase : "");
    if (paint != nullptr && !(*paint)[i].note.empty()) {
      detail += " \xC2\xB7 " + (*paint)[i].note;
    }
    boxes[i].detail = shorten(detail, detail_chars);
    boxes[i].width = std::max(kMinBoxWidth, std::max(chars, detail_chars) * kCharWidth + 24);
  }
  // Each layer's extent along the sibling axis, then centre the layers on the widest one.
  std::vector<int> extent(layers.size(), 0);
  std::vector<int> thickness(layers.size(), 0);  // along the layer axis (LR: column width)
  for (size_t l = 0; l < layers.size(); ++l) {
    for (uint32_t i : layers[l]) {
      extent[l] += (lr ? kBoxHeight : boxes[i].width) + (extent[l] == 0 ? 0 : kSiblingGap);
      thickness[l] = std::max(thickness[l], lr ? boxes[i].width : kBoxHeight);
    }
  }
  const int widest = extent.empty() ? 0 : *std::max_element(extent.begin(), extent.end());
  int along = kMargin;  // position on the layer axis
  for (size_t l = 0; l < layers.size(); ++l) {
    int across = kMargin + (widest - extent[l]) / 2;
    for (uint32_t i : layers[l]) {
      if (lr) {
        boxes[i].x = along;
        boxes[i].y = across;
        across += kBoxHeight + kSiblingGap;
      } else {
        boxes[i].x = across;
        boxes[i].y = along;
        across += boxes[i].width + kSiblingGap;
      }
    }
    along += thickness[l] + kLayerGap;
  }
  const int length = layers.empty() ? 2 * kMargin : along - kLayerGap + kMargin;
  const int breadth = widest + 2 * kMargin;
  const int width = lr ? length : breadth;
  const int height = lr ? breadth : length;

  std::ostringstream svg;
  svg << "<svg class=\"graph\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
      << width << ' ' << height << "\" role=\"img\" aria-label=\"" << htmlEscape(exp.name)
      << " graph\">\n"
      << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" "
         "markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\">"
         "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>\n";
  for (const spec::EdgeSpec& edge : exp.edges) {
    const Box& from = boxes[nodeIndex(exp, edge.from)];
    const Box& to = boxes[nodeIndex(exp, edge.to)];
    const int x1 = lr ? from.x + from.width : from.x + from.width / 2;
    const int y1 = lr ? from.y + kBoxHeight / 2 : from.y + kBoxHeight;
    const int x2 = lr ? to.x : to.x + to.width / 2;
    const int y2 = lr ? to.y + kBoxHeight / 2 : to.y;
    svg << "<line class=\"edge" << (edge.when ? " conditional" : "") << "\" x1=\"" << x1
        << "\" y1=\"" << y1 << "\" x2=\"" << x2 << "\" y2=\"" << y2
        << "\" marker-end=\"url(#arrow)\"/>\n";
    if (const std::string label = edgeLabel(exp, edge); !label.empty()) {
      int chars = 0;
      svg << "<text class=\"edge-label\" x=\"" << (x1 + x2) / 2 << "\" y=\"" << (y1 + y2) / 2
          << "\"><title>" << htmlEscape(label) << "</title>" << htmlEscape(shorten(label, chars))
          << "</text>\n";
    }
  }
  for (size_t i = 0; i < exp.nodes.size(); ++i) {
    const Box& box = boxes[i];
    const KindStyle& style = styleOf(exp.nodes[i].kind);
    const NodePaint* node_paint = paint != nullptr ? &(*paint)[i] : nullptr;
    svg << "<g class=\"node\"><title>" << htmlEscape(exp.nodes[i].id) << " ("
        << htmlEscape(exp.nodes[i].kind) << ")"
        << (node_paint != nullptr ? htmlEscape(node_paint->tooltip) : "") << "</title><rect x=\""
        << box.x << "\" y=\"" << box.y << "\" width=\"" << box.width << "\" height=\"" << kBoxHeight
        << "\" rx=\"6\" fill=\"" << (node_paint ? node_paint->fill : style.fill) << "\" stroke=\""
        << (node_paint ? node_paint->stroke : style.stroke)
        << (node_paint != nullptr ? "\" stroke-width=\"2" : "") << "\"/><text class=\"label\" x=\""
        << box.x + box.width / 2 << "\" y=\"" << box.y + 20 << "\">" << htmlEscape(box.label)
        << "</text><text class=\"detail\" x=\"" << box.x + box.width / 2 << "\" y=\"" << box.y + 37
        << "\">" << htmlEscape(box.detail) << "</text></g>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

std::string_view graphSvgCss() {
  return "svg.graph { max-width: 100%; height: auto; }\n"
         ".edge { stroke: #555; stroke-width: 1.5; }\n"
         ".edge.conditional { stroke-dasharray: 5 4; }\n"
         ".edge-label { font-size: 11px; fill: #333; text-anchor: middle; paint-order: stroke; "
         "stroke: #fff; stroke-width: 4px; }\n"
         ".label { font-size: 13px; font-weight: bold; text-anchor: middle; }\n"
         ".detail { font-size: 11px; fill: #555; text-anchor: middle; }\n";
}

std::string graphHtml(const spec::Experience& exp, GraphDirection direction) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
       << htmlEscape(exp.name) << " \xE2\x80\x94 oe graph</title>\n<style>\n"
       << "body { font-family: sans-serif; margin: 24px; color: #222; }\n"
       << graphSvgCss() << "pre { background: #f6f8fa; padding: 12px; overflow: auto; }\n"
       << "</style>\n</head>\n<body>\n<h1>" << htmlEscape(exp.name) << "</h1>\n";
  if (!exp.description.empty()) {
    page << "<p>" << htmlEscape(exp.description) << "</p>\n";
  }
  page << graphSvg(exp, direction) << "<h2>Mermaid source</h2>\n<pre>"
       << htmlEscape(mermaidGraph(exp, direction)) << "</pre>\n</body>\n</html>\n";
  return page.str();
}

}  // namespace oe::report
