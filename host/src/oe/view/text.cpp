// Terminal text for the live view; see text.hpp.
#include "oe/view/text.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace oe::view {

namespace {

// Decodes the code point at `text[pos]`; returns it and its length, or length 0 when the bytes
// there are not valid UTF-8 (overlong, surrogate, truncated or out of range).
std::pair<char32_t, size_t> decode(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) {
    return {lead, 1};
  }
  size_t len = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    len = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    len = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return {0, 0};
  }
  if (pos + len > text.size()) {
    return {0, 0};
  }
  for (size_t i = 1; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80) {
      return {0, 0};
    }
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return {0, 0};
  }
  return {cp, len};
}

struct Range {
  char32_t first;
  char32_t last;
};

// Zero-width: combining marks of the common scripts, zero-width space/joiners, variation
// selectors. Not all of Unicode's Mn/Me: enough that accented text and emoji sequences measure
// right; an unlisted mark costs one column too many, which cuts a line early, never wraps it.
constexpr std::array kZeroWidth = {
    Range{0x0300, 0x036F}, Range{0x0483, 0x0489}, Range{0x0591, 0x05BD}, Range{0x0610, 0x061A},
    Range{0x064B, 0x065F}, Range{0x0E31, 0x0E31}, Range{0x0E34, 0x0E3A}, Range{0x0E47, 0x0E4E},
    Range{0x1AB0, 0x1AFF}, Range{0x1DC0, 0x1DFF}, Range{0x200B, 0x200F}, Range{0x20D0, 0x20FF},
    Range{0xFE00, 0xFE0F}, Range{0xFE20, 0xFE2F}, Range{0xFEFF, 0xFEFF}, Range{0xE0100, 0xE01EF},
};

// Wide (East Asian Wide and Fullwidth, and the emoji blocks terminals draw two columns wide).
constexpr std::array kWide = {
    Range{0x1100, 0x115F},   Range{0x231A, 0x231B},   Range{0x2329, 0x232A},
    Range{0x23E9, 0x23EC},   Range{0x23F0, 0x23F3},   Range{0x25FD, 0x25FE},
    Range{0x2614, 0x2615},   Range{0x2648, 0x2653},   Range{0x26AA, 0x26AB},
    Range{0x26BD, 0x26BE},   Range{0x26C4, 0x26C5},   Range{0x26D4, 0x26D4},
    Range{0x26EA, 0x26EA},   Range{0x26F2, 0x26F5},   Range{0x26FA, 0x26FD},
    Range{0x2705, 0x2705},   Range{0x270A, 0x270B},   Range{0x2728, 0x2728},
    Range{0x274C, 0x274C},   Range{0x2753, 0x2755},   Range{0x2757, 0x2757},
    Range{0x2795, 0x2797},   Range{0x27B0, 0x27B0},   Range{0x27BF, 0x27BF},
    Range{0x2B1B, 0x2B1C},   Range{0x2B50, 0x2B50},   Range{0x2B55, 0x2B55},
    Range{0x2E80, 0x303E},   Range{0x3041, 0x33FF},   Range{0x3400, 0x4DBF},
    Range{0x4E00, 0x9FFF},   Range{0xA000, 0xA4CF},   Range{0xA960, 0xA97F},
    Range{0xAC00, 0xD7A3},   Range{0xF900, 0xFAFF},   Range{0xFE10, 0xFE19},
    Range{0xFE30, 0xFE6F},   Range{0xFF00, 0xFF60},   Range{0xFFE0, 0xFFE6},
    Range{0x16FE0, 0x16FE4}, Range{0x17000, 0x18CFF}, Range{0x1B000, 0x1B2FF},
    Range{0x1F004, 0x1F004}, Range{0x1F0CF, 0x1F0CF}, Range{0x1F18E, 0x1F18E},
    Range{0x1F191, 0x1F19A}, Range{0x1F200, 0x1F251}, Range{0x1F300, 0x1F64F},
    Range{0x1F680, 0x1F6FF}, Range{0x1F7E0, 0x1F7EB}, Range{0x1F90C, 0x1F9FF},
    Range{0x1FA70, 0x1FAFF}, Range{0x20000, 0x2FFFD}, Range{0x30000, 0x3FFFD},
};

template <size_t N>
bool inRanges(const std::array<Range, N>& ranges, char32_t cp) {
  // Sorted and disjoint: a binary search.
  size_t lo = 0;
  size_t hi = N;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cp < ranges[mid].first) {
      hi = mid;
    } else if (cp > ranges[mid].last) {
      lo = mid + 1;
    } else {
      return true;
    }
  }
  return false;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

int codePointWidth(char32_t cp) {
  if (inRanges(kZeroWidth, cp)) {
    return 0;
  }
  return inRanges(kWide, cp) ? 2 : 1;
}

std::string safeLine(std::string_view text, size_t max) {
  std::string out;
  out.reserve(std::min(text.size(), max + 4));
  size_t pos = 0;
  while (pos < text.size() && text[pos] != '\n') {
    auto [cp, len] = decode(text, pos);
    std::string piece;
    if (len == 0) {
      piece = "?";
      len = 1;
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F)) {
      piece = " ";
    } else {
      appendUtf8(piece, cp);
    }
    if (out.size() + piece.size() > max) {
      return out + "...";
    }
    out += piece;
    pos += len;
  }
  while (!out.empty() && out.back() == ' ') {
    out.pop_back();  // a "\r\n" line ending, or padding
  }
  return pos < text.size() ? out + " ..." : out;
}

size_t displayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t pos = 0; pos < text.size();) {
    auto [cp, len] = decode(text, pos);
    width += len == 0 ? 1 : static_cast<size_t>(codePointWidth(cp));
    pos += len == 0 ? 1 : len;
  }
  return width;
}

std::string fitWidth(std::string_view text, size_t columns) {
  if (displayWidth(text) <= columns) {
    return std::string(text);
  }
  // Room for "..." when the cut leaves at least one character of the text.
  const size_t keep = columns > 3 ? columns - 3 : columns;
  size_t width = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    auto [cp, len] = decode(text, pos);
    const size_t w = len == 0 ? 1 : static_cast<size_t>(codePointWidth(cp));
    if (width + w > keep) {
      break;
    }
    width += w;
    pos += len == 0 ? 1 : len;
  }
  std::string out(text.substr(0, pos));
  if (columns > 3) {
    out += "...";
  }
  return out;
}

std::string padWidth(std::string_view text, size_t columns) {
  std::string out = fitWidth(text, columns);
  const size_t width = displayWidth(out);
  if (width < columns) {
    out.append(columns - width, ' ');
  }
  return out;
}

}  // namespace oe::view
